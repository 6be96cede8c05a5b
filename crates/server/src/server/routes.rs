//! The webhook's requests (HTTPS) and the routers of the probes and metrics (plain HTTP).
//! The webhook handler enforces transport limits only; every verdict body comes from `review`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use bytes::{Bytes, BytesMut};
use http::header::{ALLOW, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Method, StatusCode, Version};
use http_body_util::BodyExt;

use super::Shared;
use crate::admission::{Endpoint, Summary};
use crate::cluster::Caller;

/// The webhook listener's routes: `/validate` and `/mutate`, a JSON 404 for any other path.
/// Every method reaches `serve`, which answers all but POST with a 405 naming POST; the router
/// answers HEAD with a GET's headers and no body. Who connected rides in each request's
/// extensions, put there by the connection (`conn::http`).
pub(crate) fn webhook(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/validate",
            any(|State(s): State<Arc<Shared>>, req: Request| serve(s, Endpoint::Validate, req)),
        )
        .route(
            "/mutate",
            any(|State(s): State<Arc<Shared>>, req: Request| serve(s, Endpoint::Mutate, req)),
        )
        .fallback(|| async {
            message(
                StatusCode::NOT_FOUND,
                "not found: the webhook serves POST /validate and POST /mutate",
            )
        })
        .with_state(shared)
}

pub(crate) fn probes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(shared)
}

pub(crate) fn metrics(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(shared)
}

/// HTTP-level errors carry a JSON `{"message"}` too, so whoever reads the failed call (the API
/// server's error, a curl user) sees why.
fn message(status: StatusCode, text: &str) -> Response {
    let body = serde_json::json!({ "message": text }).to_string();
    json(status, body.into_bytes())
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}

async fn serve(shared: Arc<Shared>, endpoint: Endpoint, req: Request) -> Response {
    let start = Instant::now();
    let in_flight = shared.metrics.in_flight(endpoint);
    let version = req.version();
    // Trust is never assumed for a request the connection did not vouch for.
    let caller = req
        .extensions()
        .get::<Caller>()
        .copied()
        .unwrap_or(Caller::Stranger(std::net::Ipv4Addr::UNSPECIFIED.into()));
    let mut response = answer(&shared, endpoint, caller, req).await;
    shared
        .metrics
        .observe(endpoint, response.status().as_u16(), start.elapsed());
    drop(in_flight);
    // While draining, close HTTP/1.1 connections after each answer: the client reconnects (to
    // another replica once the endpoint is gone), and no idle keep-alive connection is left
    // for the drain to close under a request that is racing in.
    // A refused body is drained in the background (`drain`); the connection is not worth
    // keeping for another request after it.
    let refused_body = response.status() == StatusCode::PAYLOAD_TOO_LARGE;
    if (shared.shutting_down.load(Ordering::Relaxed) || refused_body) && version == Version::HTTP_11
    {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn answer(shared: &Shared, endpoint: Endpoint, caller: Caller, req: Request) -> Response {
    if req.method() != Method::POST {
        let mut r = message(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("method {} not allowed: use POST", req.method()),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    if let Err(found) = json_content_type(req.headers().get(CONTENT_TYPE)) {
        return message(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("Content-Type {found} not supported: send application/json"),
        );
    }
    let limit = shared.body_limit;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        drain(req.into_body(), shared.body_read_timeout);
        return too_large(limit);
    }
    // The API server sends the body right behind the headers; one that trickles in only holds
    // a connection slot.
    let read = tokio::time::timeout(shared.body_read_timeout, read_body(req.into_body(), limit));
    let body = match read.await {
        Ok(Read::Body(bytes)) => bytes,
        Ok(Read::TooLarge(rest)) => {
            drain(rest, shared.body_read_timeout);
            return too_large(limit);
        }
        Ok(Read::Failed(e)) => {
            return message(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {e}"),
            )
        }
        Err(_) => {
            return message(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "request body not received within {:?}",
                    shared.body_read_timeout
                ),
            )
        }
    };
    // Judging costs 10-50× the body (the JSON tree, then the readers): wait for room so the
    // requests in flight cannot together outgrow the pod (docs/robustness.md, O1). A body over the whole
    // budget takes all of it and is judged alone.
    let weight = super::kib(body.len()).min(shared.judging_kib);
    let Ok(_judging) = shared.judging.acquire_many(weight).await else {
        return message(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    };
    // `review` promises not to panic; if it ever does, one 500 beats tearing down an h2
    // connection and every other request multiplexed on it.
    let review = std::panic::AssertUnwindSafe(shared.admission.review(endpoint, &body, &caller));
    let answer = match futures::FutureExt::catch_unwind(review).await {
        Ok(answer) => answer,
        Err(_) => {
            tracing::error!(webhook = endpoint.path(), "review panicked");
            return message(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        }
    };
    if let Some(summary) = &answer.summary {
        log_summary(endpoint, summary);
        if endpoint == Endpoint::Validate {
            shared.metrics.decision(summary);
        }
    }
    let status =
        StatusCode::from_u16(answer.http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(status, answer.body)
}

enum Read {
    Body(Bytes),
    /// Past the limit: what is left of the body, to drain.
    TooLarge(Body),
    Failed(String),
}

/// Collects the body up to `limit` bytes; past it, hands the rest back instead of dropping it.
/// A body that arrives as one frame (the API server sends a review right behind its headers)
/// is kept as it came, not copied: a second buffer the size of the body and its free were 0.85k
/// instructions a review.
async fn read_body(mut body: Body, limit: usize) -> Read {
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let held = first.as_ref().map_or(0, Bytes::len) + buf.len();
                if held + data.len() > limit {
                    return Read::TooLarge(body);
                }
                if first.is_none() && buf.is_empty() {
                    first = Some(data);
                    continue;
                }
                // A second frame: from here on the body is joined in `buf`.
                if let Some(earlier) = first.take() {
                    buf.extend_from_slice(&earlier);
                }
                buf.extend_from_slice(&data);
            }
            Err(e) => return Read::Failed(e.to_string()),
        }
    }
    Read::Body(first.unwrap_or_else(|| buf.freeze()))
}

/// At most this much of a refused body is read (and discarded) after the 413.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

/// Reads and discards what is left of a refused body, in its own task, so the 413 goes out first
/// and the request still ends cleanly: an h2 stream whose body is dropped early is reset, and
/// some clients (curl 7.88 with nghttp2) then drop the 413 they already received and report a
/// framing error; an HTTP/1.1 client that writes its whole body before reading would see its
/// connection reset. Bounded by `DRAIN_LIMIT` and `timeout`; past either the body is dropped and
/// the stream reset (RST_STREAM NO_ERROR after the response, RFC 9113 §8.1).
fn drain(mut body: Body, timeout: std::time::Duration) {
    tokio::spawn(async move {
        let read = async {
            let mut seen = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                seen += frame.data_ref().map_or(0, |d| d.len());
                if seen > DRAIN_LIMIT {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, read).await;
    });
}

fn too_large(limit: usize) -> Response {
    message(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("request body larger than {limit} bytes"),
    )
}

/// Accepts `application/json` with parameters (`; charset=utf-8`), in any letter case.
/// A missing Content-Type is refused too: the API server always sends one, and a client that
/// forgot it (curl `--data` sends a form type) is told what to fix.
fn json_content_type(value: Option<&HeaderValue>) -> Result<(), String> {
    let Some(value) = value else {
        return Err("(missing)".to_string());
    };
    // What the API server sends, answered before the general reading (25 instructions against
    // 365).
    if value.as_bytes() == b"application/json" {
        return Ok(());
    }
    let text = value.to_str().map_err(|_| format!("{value:?}"))?;
    let essence = text.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(format!("{text:?}"))
    }
}

/// Denials and warnings at info (one line each, what an operator greps for, with who asked);
/// requests allowed without a word at debug only.
fn log_summary(endpoint: Endpoint, o: &Summary) {
    // Formatted only by a subscriber that takes the line: an allowed review at info costs no
    // formatting at all.
    let object = ObjectName(o);
    if o.is_quiet() {
        tracing::debug!(
            webhook = endpoint.path(),
            uid = %o.uid,
            kind = %o.kind,
            object = %object,
            operation = o.operation.as_str(),
            patched = o.patched,
            dry_run = o.dry_run,
            "allowed"
        );
        return;
    }
    let said = if o.allowed {
        "allowed with warnings"
    } else {
        "denied"
    };
    tracing::info!(
        webhook = endpoint.path(),
        uid = %o.uid,
        kind = %o.kind,
        group = %o.group,
        object = %object,
        operation = o.operation.as_str(),
        rules = %Joined(&o.rules),
        code = o.code,
        warnings = o.warnings,
        user = %o.user,
        groups = %Joined(&o.groups),
        dry_run = o.dry_run,
        "{said}"
    );
}

/// `namespace/name`, or `name` for a cluster-scoped object.
struct ObjectName<'a>(&'a Summary<'a>);

impl std::fmt::Display for ObjectName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.0.name),
            None => f.write_str(&self.0.name),
        }
    }
}

/// Comma-separated, written straight into the log line.
struct Joined<'a, S>(&'a [S]);

impl<S: AsRef<str>> std::fmt::Display for Joined<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(s.as_ref())?;
        }
        Ok(())
    }
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    if shared.shutting_down.load(Ordering::Relaxed) {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response()
    } else if !shared.admission.ready() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "cluster view not synced yet\n",
        )
            .into_response()
    } else {
        (StatusCode::OK, "ok\n").into_response()
    }
}

async fn scrape(State(shared): State<Arc<Shared>>) -> Response {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &shared.registry) {
        Ok(()) => (
            [(
                CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Admission;
    use crate::cluster::StaticView;
    use crate::rules::Options;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;
    use tower::ServiceExt;

    const REVIEW: &[u8] = include_bytes!("../../../../examples/reviews/pool-create-allowed.json");

    fn shared(body_limit: usize) -> Arc<Shared> {
        let admission = Admission::new(Arc::new(StaticView::empty()), Options::default());
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = Arc::new(super::super::metrics::Metrics::register(
            &mut registry,
            &admission,
        ));
        Arc::new(Shared {
            admission,
            metrics,
            registry: Arc::new(registry),
            shutting_down: AtomicBool::new(false),
            body_limit,
            body_read_timeout: Duration::from_secs(5),
            judging: tokio::sync::Semaphore::new(1024),
            judging_kib: 1024,
        })
    }

    /// One request through the webhook's router: the status, headers and body it answers.
    async fn send(
        shared: &Arc<Shared>,
        method: Method,
        path: &str,
        content_type: Option<&'static str>,
        body: &'static [u8],
    ) -> (StatusCode, http::HeaderMap, Bytes) {
        let mut req = http::Request::builder().method(method).uri(path);
        if let Some(t) = content_type {
            req = req.header(CONTENT_TYPE, t);
        }
        let req = req.body(Body::from(body)).unwrap();
        let res = webhook(shared.clone()).oneshot(req).await.unwrap();
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        (parts.status, parts.headers, bytes)
    }

    #[tokio::test]
    async fn the_router_answers_reviews_on_two_paths_and_refuses_the_rest() {
        let shared = shared(REVIEW.len());
        let json = Some("application/json");
        for path in ["/validate", "/mutate?timeout=10s"] {
            let (status, headers, body) = send(&shared, Method::POST, path, json, REVIEW).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(headers[CONTENT_TYPE], "application/json");
            let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(answer["kind"], "AdmissionReview");
            assert_eq!(answer["response"]["allowed"], true, "{answer}");
        }
        for path in ["/", "/validate/", "/Validate", "/mutate/x"] {
            let (status, _, body) = send(&shared, Method::POST, path, json, REVIEW).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            let said: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert!(said["message"].as_str().unwrap().contains("POST /validate"));
        }
        let (status, headers, _) = send(&shared, Method::GET, "/validate", None, b"").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(headers[ALLOW], "POST");
        // HEAD: a GET's headers, its length included, and no body.
        let (status, headers, body) = send(&shared, Method::HEAD, "/mutate", None, b"").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(headers[ALLOW], "POST");
        assert_ne!(headers[CONTENT_LENGTH], "0");
        assert!(body.is_empty());
        let form = Some("application/x-www-form-urlencoded");
        let (status, _, _) = send(&shared, Method::POST, "/validate", form, REVIEW).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let (status, _, _) = send(&shared, Method::POST, "/validate", json, b"{").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "not a review");
        let mut longer = REVIEW.to_vec();
        longer.push(b' ');
        let longer: &'static [u8] = longer.leak();
        let (status, headers, _) = send(&shared, Method::POST, "/validate", json, longer).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(headers[CONNECTION], "close");
        // Each path counts its own answers; other paths count in neither.
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &shared.registry).unwrap();
        for (webhook, code, n) in [
            ("/validate", 200, 1),
            ("/validate", 405, 1),
            ("/validate", 415, 1),
            ("/validate", 400, 1),
            ("/validate", 413, 1),
            ("/mutate", 200, 1),
            ("/mutate", 405, 1),
        ] {
            let series = format!(
                "controller_runtime_webhook_requests_total{{webhook=\"{webhook}\",code=\"{code}\"}} {n}\n"
            );
            assert!(text.contains(&series), "{series}{text}");
        }
        assert!(!text.contains("code=\"404\""), "{text}");
    }

    #[test]
    fn content_types() {
        let ok = |s: &'static str| json_content_type(Some(&HeaderValue::from_static(s)));
        assert!(ok("application/json").is_ok());
        assert!(ok("application/json; charset=utf-8").is_ok());
        assert!(ok("Application/JSON;charset=UTF-8").is_ok());
        assert!(ok("application/yaml").is_err());
        assert!(ok("application/json-patch+json").is_err());
        assert!(ok("application/x-www-form-urlencoded").is_err());
        assert!(json_content_type(None).is_err());
    }

    fn frames(parts: &[&'static str]) -> Body {
        let parts: Vec<Result<Bytes, std::io::Error>> = parts
            .iter()
            .map(|p| Ok(Bytes::from_static(p.as_bytes())))
            .collect();
        Body::from_stream(futures::stream::iter(parts))
    }

    fn read(body: Body, limit: usize) -> Read {
        futures::executor::block_on(read_body(body, limit))
    }

    #[test]
    fn a_body_is_read_whole_in_one_frame_or_many_and_refused_past_the_limit() {
        let one = Bytes::from_static(b"{\"kind\":\"AdmissionReview\"}");
        match read(Body::from(one.clone()), 64) {
            Read::Body(b) => {
                assert_eq!(b, one);
                assert_eq!(b.as_ptr(), one.as_ptr(), "one frame is kept, not copied");
            }
            _ => panic!("one frame within the limit"),
        }
        for parts in [
            &["{\"a\":", "1", "}"][..],
            &["", "{\"a\":1}"],
            &["{\"a\":1}", ""],
        ] {
            match read(frames(parts), 64) {
                Read::Body(b) => assert_eq!(&b[..], b"{\"a\":1}", "{parts:?}"),
                _ => panic!("{parts:?} within the limit"),
            }
        }
        match read(frames(&["12345", "678"]), 8) {
            Read::Body(b) => assert_eq!(&b[..], b"12345678"),
            _ => panic!("exactly the limit is read"),
        }
        for parts in [
            &["123456789"][..],
            &["12345", "6789"],
            &["1234", "5678", "9"],
        ] {
            assert!(
                matches!(read(frames(parts), 8), Read::TooLarge(_)),
                "{parts:?} is past the limit"
            );
        }
        match read(frames(&[]), 8) {
            Read::Body(b) => assert!(b.is_empty()),
            _ => panic!("an empty body is a body"),
        }
    }
}
