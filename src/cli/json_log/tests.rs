use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use super::*;

#[derive(Clone)]
struct Fixed;

impl FormatTime for Fixed {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        w.write_str("2026-11-27T20:33:06.584761Z")
    }
}

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    fn new() -> Self {
        Sink(Arc::new(Mutex::new(Vec::new())))
    }
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// What `emit` logs through the crate's JSON format and through ours.
fn both(emit: impl Fn()) -> (String, String) {
    let crate_sink = Sink::new();
    let theirs = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_timer(Fixed)
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let s = crate_sink.clone();
            move || s.clone()
        })
        .finish();
    tracing::subscriber::with_default(theirs, &emit);
    let our_sink = Sink::new();
    let ours = tracing_subscriber::fmt()
        .fmt_fields(fields())
        .event_format(JsonLines::with_timer(Fixed))
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let s = our_sink.clone();
            move || s.clone()
        })
        .finish();
    tracing::subscriber::with_default(ours, &emit);
    (crate_sink.text(), our_sink.text())
}

#[derive(Debug)]
struct Odd {
    #[allow(dead_code)]
    text: &'static str,
}

/// A value that logs while it is written.
struct Loud;

impl fmt::Debug for Loud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        tracing::warn!(inner = ?Odd { text: ODD }, "from inside a field");
        f.write_str("loud")
    }
}

const ODD: &str = "quote \" backslash \\ newline \n tab \t cr \r bell \u{7} nul \u{0} del \u{7f} ünï ✓ \u{10ffff}";

#[test]
fn a_line_is_the_crates_line() {
    let error = std::io::Error::other(ODD);
    let (theirs, ours) = both(|| {
        tracing::info!("plain");
        tracing::info!(
            webhook = "/validate",
            uid = %ODD,
            kind = ?Odd { text: ODD },
            code = 422u16,
            warnings = 0usize,
            delta = -3i64,
            dry_run = false,
            ok = true,
            ratio = 1.5f64,
            tiny = 1e-300f64,
            nan = f64::NAN,
            inf = f64::INFINITY,
            big = u128::MAX,
            small = i128::MIN,
            error = &error as &(dyn std::error::Error + 'static),
            dotted.name = "d",
            "a \"quoted\" name" = 1,
            loud = ?Loud,
            // Each escape alone, so a wrong one shows on its own.
            backslash = "a\\b",
            quote = "a\"b",
            control = "a\u{1f}b",
            shown = %"a\\b",
            "denied {}", ODD
        );
        tracing::warn!(target: "odd \"target\"", reason = ODD, "refused");
        tracing::error!(empty = "", "");
        tracing::debug!(n = 1, "debug");
        tracing::trace!("trace {:?}", ODD);
    });
    assert_eq!(ours, theirs);
    assert_eq!(theirs.lines().count(), 6, "{theirs}");
    // tracing drops the event a field sends while it is written, in both formats.
    assert!(!theirs.contains("from inside a field"), "{theirs}");
    for line in theirs.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[test]
fn a_line_inside_a_span_is_the_crates_too() {
    let (theirs, ours) = both(|| {
        let span = tracing::info_span!("outer", id = 7, name = ODD);
        span.in_scope(|| tracing::info!(k = "v", "inside"));
        tracing::info!(parent: &span, "child of");
        tracing::info!("outside");
    });
    assert_eq!(ours, theirs);
    assert!(theirs.contains("\"spans\":["), "{theirs}");
}

#[test]
fn a_log_record_is_the_crates_too() {
    let (theirs, ours) = both(|| {
        let args = format_args!("from log {}", ODD);
        let record = log::Record::builder()
            .args(args)
            .level(log::Level::Warn)
            .target("rustls::odd")
            .module_path_static(Some("rustls::odd"))
            .file_static(Some("src/odd.rs"))
            .line(Some(42))
            .build();
        tracing_log::format_trace(&record).unwrap();
    });
    assert_eq!(ours, theirs);
    assert!(theirs.contains("\"target\":\"rustls::odd\""), "{theirs}");
}

fn time(secs: u64, micros: u32) -> String {
    String::from_utf8(rfc3339(secs, micros).expect("before year 10000").to_vec()).unwrap()
}

#[test]
fn times_are_written_as_rfc3339_in_utc() {
    assert_eq!(time(0, 0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(time(94_608_000, 1), "1972-12-31T00:00:00.000001Z");
    assert_eq!(time(951_782_400, 999_999), "2000-02-29T00:00:00.999999Z");
    assert_eq!(time(4_107_542_400, 0), "2100-03-01T00:00:00.000000Z");
    assert_eq!(time(1_795_874_757, 123_456), "2026-11-28T14:05:57.123456Z");
    assert_eq!(time(253_402_300_799, 0), "9999-12-31T23:59:59.000000Z");
    assert_eq!(
        rfc3339(253_402_300_800, 0),
        None,
        "year 10000 is the crate's to write"
    );
}

/// Every day from the epoch to the end of year 9999 follows the one before it.
#[test]
fn each_day_follows_the_day_before() {
    let leap = |y: u64| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let length = |y: u64, m: u64| match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let mut expected = (1970, 1, 1);
    for days in 0..2_932_897 {
        assert_eq!(civil(days), expected, "day {days}");
        let (y, m, d) = expected;
        expected = if d < length(y, m) {
            (y, m, d + 1)
        } else if m < 12 {
            (y, m + 1, 1)
        } else {
            (y + 1, 1, 1)
        };
    }
    assert_eq!(expected, (10_000, 1, 1));
}

/// The crate's clock read between two of ours writes a time between them: the same text for
/// the same instant. The wall clock may be stepped back between two reads (NTP), so a few
/// misses are let pass; a text of another shape misses every time.
#[test]
fn the_time_is_the_crates_text() {
    let read = |timer: &dyn FormatTime| {
        let mut text = String::new();
        timer.format_time(&mut Writer::new(&mut text)).unwrap();
        text
    };
    let mut misses = Vec::new();
    for _ in 0..1000 {
        let before = read(&Utc);
        let theirs = read(&SystemTime);
        let after = read(&Utc);
        if !(before <= theirs && theirs <= after && theirs.len() == before.len()) {
            misses.push(format!("{before} {theirs} {after}"));
        }
    }
    assert!(misses.len() <= 10, "{misses:#?}");
}
