//! JSON string text, written eight bytes at a time: the answer (`admission::status`) and the JSON
//! log line (`cli::json_log`) write strings in exactly the bytes serde_json writes. serde_json's
//! writer escapes a byte at a time through its formatter, which cost a denial about 8k
//! instructions for its Status alone; a denial's texts are a few hundred bytes with a handful of
//! quotes in them.

use std::fmt;

/// How many bytes at the start of `b` need no escaping in a JSON string: the index of the first
/// quote, backslash or control character, else `b.len()`. Eight bytes at a time, with the bit
/// tricks serde_json's own string scan uses.
#[inline(always)]
pub fn plain_len(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each zero byte of `v`; a byte above a flagged one may be flagged wrongly,
    // so only the lowest flag is read.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let stops = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    // The last few bytes by table.
    while i < b.len() && !STOPS[usize::from(b[i])] {
        i += 1;
    }
    i
}

/// Bytes that end a plain run inside a string: the quote, a backslash, a control character.
const fn string_stops() -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
}
static STOPS: [bool; 256] = string_stops();

/// Whether `s` goes into a JSON string as it stands.
pub fn is_plain(s: &str) -> bool {
    plain_len(s.as_bytes()) == s.len()
}

/// `s` as a quoted JSON string, escaped as serde_json escapes it: `\"`, `\\`, the five short
/// escapes, `\u00xx` (lower-case hex) for the other control characters, everything else as is.
pub fn write_fmt(w: &mut (impl fmt::Write + ?Sized), s: &str) -> fmt::Result {
    w.write_char('"')?;
    let mut rest = s;
    loop {
        let run = plain_len(rest.as_bytes());
        // Every stop byte is ASCII, so `run` is a character boundary.
        let (plain, tail) = rest.split_at(run);
        if !plain.is_empty() {
            w.write_str(plain)?;
        }
        let Some(&c) = tail.as_bytes().first() else {
            return w.write_char('"');
        };
        let short = match c {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            _ => "",
        };
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            w.write_str("\\u00")?;
            w.write_char(char::from(HEX[usize::from(c >> 4)]))?;
            w.write_char(char::from(HEX[usize::from(c & 0xf)]))?;
        } else {
            w.write_str(short)?;
        }
        rest = &tail[1..];
    }
}

/// `write_fmt` into a byte buffer.
pub fn write(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = write_fmt(&mut Bytes(out), s);
}

/// A `fmt::Write` that appends to a byte buffer: what it is given is text already.
pub struct Bytes<'a>(pub &'a mut Vec<u8>);

impl fmt::Write for Bytes<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out, s);
        out
    }

    #[test]
    fn every_byte_below_0x80_is_written_as_serde_writes_it() {
        for c in 0u8..0x80 {
            let c = char::from(c);
            for s in [
                c.to_string(),
                format!("abcdefg{c}"),
                format!("abcdefgh{c}ij"),
                format!("{c}{c}x{c}"),
            ] {
                assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap(), "{s:?}");
            }
        }
    }

    #[test]
    fn the_plain_run_stops_at_each_stop_byte_at_every_position() {
        for len in 0..24 {
            let base = "é".repeat(len / 2) + &"a".repeat(len % 2);
            assert!(is_plain(&base));
            for stop in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                for at in 0..=base.len() {
                    if !base.is_char_boundary(at) {
                        continue;
                    }
                    let mut b = base.clone().into_bytes();
                    b.insert(at, stop);
                    assert_eq!(plain_len(&b), at, "{b:?}");
                }
            }
        }
        assert!(is_plain("\u{7f} ünïcødé ✓ \u{10ffff}"));
    }

    #[test]
    fn a_plain_text_has_no_quote_backslash_or_control_character_anywhere() {
        for len in 0..24 {
            let plain: String = "aé✓\u{7f} z".chars().cycle().take(len).collect();
            assert!(is_plain(&plain), "{plain:?}");
            for at in 0..len {
                for stop in ['"', '\\', '\u{0}', '\n', '\u{1f}'] {
                    let mut chars: Vec<char> = plain.chars().collect();
                    chars[at] = stop;
                    let text: String = chars.into_iter().collect();
                    assert!(!is_plain(&text), "{text:?}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn any_string_is_written_as_serde_writes_it(s in any::<String>()) {
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
            let mut text = String::new();
            write_fmt(&mut text, &s).unwrap();
            prop_assert_eq!(text, serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn texts_heavy_with_escapes_are_written_as_serde_writes_them(s in "[\"\\\\\\x00-\\x1fa-é]{0,40}") {
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
        }
    }
}
