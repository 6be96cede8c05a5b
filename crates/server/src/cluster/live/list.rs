//! One list request, decoded while it streams in.
//!
//! A `resourceVersion=0` list is answered from the watch cache in one response (no pages): 100k
//! IPAddresses are ≈ 150 MB of JSON. Reading that into memory and then decoding every item at
//! once would cost several times the size of the view itself. Here the body streams from the
//! connection into a blocking task, which decodes the list with a `DeserializeSeed` that hands
//! each item to the caller as soon as it is read; the caller projects it and drops it. At any
//! moment only a few body chunks and one full object are held.

use std::fmt;
use std::io::{self, Read};

use bytes::Bytes;
use futures::io::{AsyncBufRead, AsyncBufReadExt};
use kube::Client;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::cluster::WatchedObject;

/// Body chunks buffered between the connection and the decoder.
const CHUNKS_IN_FLIGHT: usize = 16;

/// Why a list did not complete. Typed, so that the watch loop can tell a server that answered
/// with a status (a 504 from a cache behind the requested version, a 410) from one that did not
/// answer at all, without looking inside an opaque error.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The request was not made or not answered with a success: a kube `Api` error carries the
    /// status the server sent, any other kind means no answer.
    #[error(transparent)]
    Request(#[from] kube::Error),
    /// The URL could not be made into a request.
    #[error(transparent)]
    Url(#[from] http::Error),
    /// The body was cut or is not a list. (The cause is in the text, not a `source`: every
    /// place this is shown prints it in one line.)
    #[error("cannot decode the list: {0}")]
    Body(serde_json::Error),
    /// The list was complete but more followed it.
    #[error("trailing data after the list: {0}")]
    Trailing(serde_json::Error),
    /// The decoder thread panicked (the items' sink went with it).
    #[error("the list decoder failed: {0}")]
    Decoder(String),
    /// No sink to list into (an earlier decoder panicked and took it).
    #[error("no feed")]
    NoFeed,
}

impl ListError {
    /// The status the API server answered with, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ListError::Request(kube::Error::Api(s)) => Some(s.code),
            _ => None,
        }
    }

    /// The request got no answer from the API server (no HTTP status): refused, reset, timed out.
    pub fn unanswered(&self) -> bool {
        matches!(self, ListError::Request(e) if unanswered(e))
    }
}

/// A kube request got no answer from the API server (no HTTP status): refused, reset, timed out.
pub fn unanswered(e: &kube::Error) -> bool {
    !matches!(e, kube::Error::Api(_))
}

/// Where `list` hands the items, in order, on a blocking thread.
pub trait Items: Send + 'static {
    fn item(&mut self, obj: WatchedObject);
}

/// GETs `url` (a list) and hands each item to `items` as it is decoded. Returns the list's
/// `metadata.resourceVersion`, and `items` back whatever happened (unless the decoder panicked).
///
/// Errors: the request failed (`kube::Error` inside, so callers can look at the API status code)
/// or the body was cut or malformed. Items already handed over stay handed over.
pub async fn list<S: Items>(
    client: &Client,
    url: &str,
    items: S,
) -> (Result<String, ListError>, Option<S>) {
    let (listed, items) = list_page(client, url, items).await;
    (listed.map(|l| l.resource_version), items)
}

/// What the end of a list says: its resourceVersion and, for a page of a paged list, the token
/// of the next page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed {
    pub resource_version: String,
    pub next: Option<String>,
}

/// As `list`, for one page of a paged list (`limit`): also the `continue` token of the next.
pub async fn list_page<S: Items>(
    client: &Client,
    url: &str,
    mut items: S,
) -> (Result<Listed, ListError>, Option<S>) {
    let request = match http::Request::get(url).body(Vec::new()) {
        Ok(r) => r,
        Err(e) => return (Err(e.into()), Some(items)),
    };
    let body = match client.request_stream(request).await {
        Ok(b) => b,
        Err(e) => return (Err(e.into()), Some(items)),
    };
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(CHUNKS_IN_FLIGHT);
    let decoder = tokio::task::spawn_blocking(move || {
        let listed = decode_page(ChannelReader::new(rx), &mut |o| items.item(o));
        (listed, items)
    });
    let mut body = std::pin::pin!(body);
    loop {
        let chunk = match body.fill_buf().await {
            Ok([]) => break,
            Ok(buf) => Ok(Bytes::copy_from_slice(buf)),
            Err(e) => Err(e),
        };
        let failed = chunk.is_err();
        let len = chunk.as_ref().map_or(0, Bytes::len);
        // The decoder stopped (malformed body): its error is the one to report.
        if tx.send(chunk).await.is_err() || failed {
            break;
        }
        body.as_mut().consume(len);
    }
    drop(tx);
    match decoder.await {
        Ok((listed, items)) => (listed, Some(items)),
        Err(e) => (Err(ListError::Decoder(e.to_string())), None),
    }
}

/// Decodes one list from `reader`, handing each item to `on_item` before reading the next.
pub fn decode<R: Read>(
    reader: R,
    on_item: &mut dyn FnMut(WatchedObject),
) -> Result<String, ListError> {
    decode_page(reader, on_item).map(|l| l.resource_version)
}

/// As `decode`, with the `continue` token of a page.
pub(crate) fn decode_page<R: Read>(
    reader: R,
    on_item: &mut dyn FnMut(WatchedObject),
) -> Result<Listed, ListError> {
    let reader = io::BufReader::with_capacity(64 * 1024, reader);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let meta = ListSeed { on_item }
        .deserialize(&mut de)
        .map_err(ListError::Body)?;
    de.end().map_err(ListError::Trailing)?;
    Ok(Listed {
        resource_version: meta.resource_version.unwrap_or_default(),
        next: meta.continue_.filter(|c| !c.is_empty()),
    })
}

/// Feeds a blocking reader from the chunks the async side receives.
struct ChannelReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl ChannelReader {
    fn new(rx: mpsc::Receiver<io::Result<Bytes>>) -> Self {
        ChannelReader {
            rx,
            current: Bytes::new(),
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_: Option<String>,
}

/// The list object: keeps `metadata.resourceVersion`, streams `items`, skips the rest.
struct ListSeed<'a> {
    on_item: &'a mut dyn FnMut(WatchedObject),
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = ListMeta;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = ListMeta;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes list")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = ListMeta::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "metadata" => {
                    let read: Option<ListMeta> = map.next_value()?;
                    meta = read.unwrap_or_default();
                }
                "kind" => {
                    let kind: Option<String> = map.next_value()?;
                    if kind.as_deref() == Some("Status") {
                        return Err(de::Error::custom("the API server answered a Status"));
                    }
                }
                "items" => map.next_value_seed(ItemsSeed {
                    on_item: &mut *self.on_item,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(meta)
    }
}

/// `items`: each element decoded and handed over before the next is read. `null` is no items.
struct ItemsSeed<'a> {
    on_item: &'a mut dyn FnMut(WatchedObject),
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of objects")
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<WatchedObject>()? {
            (self.on_item)(item);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version_of(json: &str) -> Result<String, ListError> {
        decode(json.as_bytes(), &mut |_| {})
    }

    #[test]
    fn items_are_handed_over_in_order_with_the_list_version() {
        // Unstructured lists put `items` before `metadata` (sorted keys): both orders work.
        for json in [
            r#"{"apiVersion":"v1","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"},"spec":{}}],"kind":"List","metadata":{"resourceVersion":"42"}}"#,
            r#"{"kind":"List","metadata":{"resourceVersion":"42","continue":""},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
        ] {
            let mut seen = Vec::new();
            let rv = decode(json.as_bytes(), &mut |o| {
                seen.push(o.metadata.name.unwrap())
            })
            .unwrap();
            assert_eq!(rv, "42");
            assert_eq!(seen, ["a", "b"]);
        }
    }

    #[test]
    fn a_page_names_the_next() {
        let page = r#"{"items":[],"metadata":{"resourceVersion":"5","continue":"abc"}}"#;
        let listed = decode_page(page.as_bytes(), &mut |_| {}).unwrap();
        assert_eq!(listed.next.as_deref(), Some("abc"));
        let last = r#"{"items":[],"metadata":{"resourceVersion":"5","continue":""}}"#;
        assert_eq!(
            decode_page(last.as_bytes(), &mut |_| {}).unwrap().next,
            None
        );
    }

    #[test]
    fn null_or_missing_items_are_an_empty_list() {
        assert_eq!(
            version_of(r#"{"items":null,"metadata":{"resourceVersion":"7"}}"#).unwrap(),
            "7"
        );
        assert_eq!(version_of(r#"{"metadata":{}}"#).unwrap(), "");
    }

    #[test]
    fn a_cut_or_malformed_body_is_an_error_after_the_items_read() {
        let mut seen = 0;
        let err = decode(
            r#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"na"#.as_bytes(),
            &mut |_| seen += 1,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("cannot decode the list: "),
            "{err}"
        );
        assert_eq!(seen, 1);
        assert!(version_of(r#"{"items":[]} x"#).is_err());
        assert!(version_of(r#"{"kind":"Status","code":500}"#).is_err());
        assert!(version_of("[1,2]").is_err());
    }

    #[test]
    fn chunks_split_anywhere_decode_the_same() {
        let json = r#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"metadata":{"resourceVersion":"9"}}"#;
        for size in [1, 2, 3, 7, 64] {
            let (tx, rx) = mpsc::channel(1024);
            for c in json.as_bytes().chunks(size) {
                tx.try_send(Ok(Bytes::copy_from_slice(c))).unwrap();
            }
            drop(tx);
            let mut seen = Vec::new();
            let rv = decode(ChannelReader::new(rx), &mut |o| {
                seen.push(o.metadata.name.unwrap())
            })
            .unwrap();
            assert_eq!((rv.as_str(), seen.len()), ("9", 2));
        }
    }
}
