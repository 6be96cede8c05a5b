//! Where a JSON string's plain run ends, eight bytes at a time: the review's byte reader
//! (`admission::scan`) skips the long strings no rule reads (`managedFields`) with it.

/// The index of the first quote, backslash or control character in `b` from `from` on, else
/// `b.len()`. Eight bytes at a time, with the bit tricks serde_json's own string scan uses.
#[inline(always)]
pub fn plain_end(b: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each zero byte of `v`; a byte above a flagged one may be flagged wrongly,
    // so only the lowest flag is read.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut i = from;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn is_plain(s: &str) -> bool {
        plain_end(s.as_bytes(), 0) == s.len()
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
                    assert_eq!(plain_end(&b, 0), at, "{b:?}");
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
}
