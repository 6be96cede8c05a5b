//! Numbers past what an f64 holds (`1e400`, a 400-digit integer) are valid JSON, but
//! `serde_json::Value` cannot hold them (short of `arbitrary_precision`, which would change number
//! handling for every crate in the build), so the whole body would fail to parse. Quoting each such
//! number turns it into a string the field readers refuse at its own path ("must be an integer"),
//! a 422 at the field like every other wrong value, instead of a 400 for the whole request.

/// The body with every number token that overflows an f64 written as a JSON string, or None when
/// there is none. Works on bytes; strings (and their escapes) are copied untouched.
pub(crate) fn quote_overflowing_numbers(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len() + 16);
    let mut changed = false;
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if b == b'"' {
            let end = string_end(body, i);
            out.extend_from_slice(&body[i..end]);
            i = end;
        } else if b == b'-' || b.is_ascii_digit() {
            let end = body[i..]
                .iter()
                .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(body.len(), |n| i + n);
            let token = &body[i..end];
            let overflows = std::str::from_utf8(token)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .is_some_and(f64::is_infinite);
            if overflows {
                out.push(b'"');
                out.extend_from_slice(token);
                out.push(b'"');
                changed = true;
            } else {
                out.extend_from_slice(token);
            }
            i = end;
        } else {
            out.push(b);
            i += 1;
        }
    }
    changed.then_some(out)
}

/// Index just past the string starting at `start` (a `"`), or the end of the body.
fn string_end(body: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    body.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_overflowing_numbers_outside_strings_are_quoted() {
        let body =
            br#"{"a":1e400,"b":-1E+999,"c":24,"d":2.5e10,"e":"1e400","f":"x\"1e400","g":[1e309]}"#;
        let out = String::from_utf8(quote_overflowing_numbers(body).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"a":"1e400","b":"-1E+999","c":24,"d":2.5e10,"e":"1e400","f":"x\"1e400","g":["1e309"]}"#
        );
        let digits = format!(r#"{{"p":{}}}"#, "9".repeat(400));
        let out = quote_overflowing_numbers(digits.as_bytes()).unwrap();
        assert_eq!(
            out,
            format!(r#"{{"p":"{}"}}"#, "9".repeat(400)).into_bytes()
        );
        assert_eq!(
            quote_overflowing_numbers(br#"{"a":1e308,"b":"1e400"}"#),
            None
        );
    }
}
