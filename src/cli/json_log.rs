//! `--log-format json`'s lines, written straight into the line's buffer. tracing-subscriber's
//! JSON format serializes through serde_json into an `io::Write` adaptor that checks UTF-8 and
//! calls `fmt` for every fragment (a quote, a key, a colon): a review's denial line cost 30k
//! instructions that way, twice the text format's, on every denial as the Deployment runs it.
//! This writes the same bytes: the same keys in the same order, values
//! as tracing-serde records them, strings escaped as serde_json escapes them (a test holds the
//! two formats to each other). An event inside a span is left to the crate's format, which
//! writes the span's fields too.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::json_text;

/// The event format of `--log-format json`: flattened fields, as `.json().flatten_event(true)`.
pub struct JsonLines<T = Utc> {
    timer: T,
    /// The crate's own format, for an event inside a span.
    in_span: Format<Json, T>,
}

impl JsonLines {
    pub fn new() -> Self {
        JsonLines::with_timer(Utc)
    }
}

/// The time of a line as tracing-subscriber's `SystemTime` writes it
/// (`2026-11-28T14:05:57.123456Z`), from the date's digits rather than through `write!`: that
/// took 2.3k instructions a line, a sixth of a denial's line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Utc;

impl FormatTime for Utc {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let now = std::time::SystemTime::now();
        match now.duration_since(std::time::UNIX_EPOCH) {
            Ok(since) => match rfc3339(since.as_secs(), since.subsec_micros()) {
                Some(text) => w.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?),
                None => SystemTime.format_time(w),
            },
            // A clock before 1970 is not ours to write: the crate's format knows negative years.
            Err(_) => SystemTime.format_time(w),
        }
    }
}

/// `secs` after the epoch and `micros` into that second, as `YYYY-MM-DDThh:mm:ss.uuuuuuZ`;
/// None past year 9999 (tracing-subscriber writes a `+` and more digits there).
fn rfc3339(secs: u64, micros: u32) -> Option<[u8; 27]> {
    let days = secs / 86_400;
    let (year, month, day) = civil(days);
    if year > 9999 {
        return None;
    }
    let of_day = secs % 86_400;
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, of_day / 3600);
    put(14, 2, of_day / 60 % 60);
    put(17, 2, of_day % 60);
    put(20, 6, u64::from(micros));
    Some(out)
}

/// Year, month and day of `days` after 1970-01-01 in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil(days: u64) -> (u64, u64, u64) {
    // Counted from 0000-03-01, so a leap day ends its year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

impl Default for JsonLines {
    fn default() -> Self {
        JsonLines::new()
    }
}

impl<T: FormatTime + Clone> JsonLines<T> {
    pub fn with_timer(timer: T) -> Self {
        JsonLines {
            in_span: tracing_subscriber::fmt::format()
                .json()
                .flatten_event(true)
                .with_timer(timer.clone()),
            timer,
        }
    }
}

/// The fields' formatter to pair with [`JsonLines`] (what the crate's span fields are written
/// with).
pub fn fields() -> JsonFields {
    JsonFields::new()
}

impl<S, N, T> FormatEvent<S, N> for JsonLines<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    T: FormatTime,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let in_span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current())
            .is_some();
        if in_span {
            return self.in_span.format_event(ctx, writer, event);
        }
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        writer.write_str("{\"timestamp\":")?;
        with_scratch(|time| {
            self.timer.format_time(&mut Writer::new(time))?;
            json_text::write_fmt(&mut writer, time)
        })?;
        writer.write_str(",\"level\":\"")?;
        writer.write_str(meta.level().as_str())?;
        writer.write_char('"')?;
        let mut fields = Fields {
            w: &mut writer,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        writer.write_str(",\"target\":")?;
        json_text::write_fmt(&mut writer, meta.target())?;
        writer.write_str("}\n")
    }
}

thread_local! {
    /// A Debug value's text, and the time, before they are escaped into the line.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// `f` with the thread's scratch text, emptied, or a text of its own if the scratch is taken:
/// that needs a line written while another is, which tracing does not do (it drops an event
/// sent from inside a value's `fmt`), but a log line must not panic all the same.
fn with_scratch(f: impl FnOnce(&mut String) -> fmt::Result) -> fmt::Result {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut text) => {
            text.clear();
            f(&mut text)
        }
        Err(_) => f(&mut String::new()),
    })
}

/// Each field as `,"name":value`, valued as tracing-serde's map visitor values it.
struct Fields<'a, 'w> {
    w: &'a mut Writer<'w>,
    result: fmt::Result,
}

impl Fields<'_, '_> {
    fn entry(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = (|| {
                let name = field.name();
                // A field's name is an identifier but for a quoted one: three writes, not five.
                if json_text::plain_len(name.as_bytes()) == name.len() {
                    self.w.write_str(",\"")?;
                    self.w.write_str(name)?;
                    self.w.write_str("\":")?;
                } else {
                    self.w.write_char(',')?;
                    json_text::write_fmt(self.w, name)?;
                    self.w.write_char(':')?;
                }
                value(self.w)
            })();
        }
    }
}

impl Visit for Fields<'_, '_> {
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.entry(field, |w| w.write_str(if value { "true" } else { "false" }));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.entry(field, |w| write!(w, "{value}"));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.entry(field, |w| write!(w, "{value}"));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // serde_json's own text for a float (and null for a NaN or an infinity).
        self.entry(field, |w| {
            w.write_str(&serde_json::to_string(&value).map_err(|_| fmt::Error)?)
        });
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.entry(field, |w| json_text::write_fmt(w, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.entry(field, |w| {
            with_scratch(|text| {
                write!(text, "{value:?}")?;
                json_text::write_fmt(w, text)
            })
        });
    }
}

#[cfg(test)]
mod tests;
