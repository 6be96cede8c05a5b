//! A body past the limit gets its 413 and the request still ends cleanly, over h2 and HTTP/1.1:
//! the server reads and discards the rest (bounded) instead of resetting the stream under the
//! answer, which some clients (curl 7.88 over h2) turn into "no response".

mod server_support;

use std::future::poll_fn;

use bytes::Bytes;
use http::Request;
use ipam_guard::server::BODY_LIMIT;
use server_support::*;

const DECLARED: usize = 8 << 20;

#[tokio::test]
async fn h2_a_body_declared_past_the_limit_gets_413_and_no_reset() {
    let (server, ca, _dir) = start_default().await;
    let work = async {
        let tcp = tokio::net::TcpStream::connect(server.addrs.webhook)
            .await
            .unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(client_config(&ca.der, &[b"h2"]))
            .connect(name, tcp)
            .await
            .unwrap();
        let (client, conn) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let req = Request::post("https://localhost/validate")
            .header("content-type", "application/json")
            .header("content-length", DECLARED.to_string())
            .body(())
            .unwrap();
        let (response, mut body) = client.send_request(req, false).unwrap();

        // The answer comes from the headers, before any of the body.
        let response = response.await.unwrap();
        assert_eq!(response.status(), 413);
        let mut answer = response.into_body();
        let mut text = Vec::new();
        while let Some(chunk) = answer.data().await {
            text.extend_from_slice(&chunk.unwrap());
        }
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("larger than"), "{text}");

        // The whole body still goes through: every chunk is granted flow-control capacity by a
        // server that reads it, and the stream is never reset.
        let chunk = Bytes::from(vec![b' '; 64 << 10]);
        let mut sent = 0;
        while sent < DECLARED {
            body.reserve_capacity(chunk.len());
            let granted = poll_fn(|cx| body.poll_capacity(cx))
                .await
                .expect("the stream is still open")
                .expect("no reset while the body is sent");
            let n = granted.min(chunk.len()).min(DECLARED - sent);
            sent += n;
            body.send_data(chunk.slice(..n), sent == DECLARED)
                .expect("no reset while the body is sent");
        }
        // The connection is still good for the next request.
        let req = Request::post("https://localhost/validate")
            .header("content-type", "application/json")
            .body(())
            .unwrap();
        let (response, mut body) = client.send_request(req, false).unwrap();
        body.send_data(Bytes::from_static(b"{}"), true).unwrap();
        assert_eq!(response.await.unwrap().status(), 400);
    };
    tokio::time::timeout(WAIT, work).await.expect("in time");
    server.stop().await;
}

#[tokio::test]
async fn a_body_past_the_limit_gets_413_over_h1_and_h2_even_when_sent_whole_first() {
    let (server, ca, _dir) = start_default().await;
    for proto in [Proto::H1, Proto::H2] {
        for size in [BODY_LIMIT + 1, DECLARED] {
            let mut conn = Conn::open(server.addrs.webhook, &ca.der, proto)
                .await
                .unwrap();
            // hyper's client writes the body (with its Content-Length) before reading.
            let reply = conn
                .send(post(
                    "/validate",
                    Some("application/json"),
                    vec![b' '; size],
                ))
                .await
                .unwrap_or_else(|e| panic!("{proto:?} {size}: no answer: {e}"));
            assert_eq!(reply.status, 413, "{proto:?} {size}");
            assert!(reply.text().contains("larger than"), "{}", reply.text());
        }
    }
    server.stop().await;
}
