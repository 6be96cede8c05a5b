//! Strings kept from one review's object trees for the next's. A tree is mostly short strings
//! (every key, most values), each a `malloc` when it is built and a `free` when it is dropped.
//! Where a review ends, its trees are taken apart (`recycle`) and their short strings, emptied,
//! hold the next trees' keys and values on that thread.
//!
//! They are kept in the reverse of the order a tree builds its strings, so the next review of
//! the same kind takes back, string by string, the one built at the same place: the same key,
//! a value of about the same length. A kept string too short for its text is dropped and the
//! text gets a string of its own length, as without this. A thread keeps at most `MAX_SPARE`
//! strings of at most `MAX_CAPACITY` bytes (16 KiB), so a tree holds at most that much more than
//! it did: a list of 750k one-letter strings costs what it cost (`tests/request_memory.rs`).

use std::borrow::Cow;
use std::cell::RefCell;

use serde_json::Value;

/// The longest string kept.
const MAX_CAPACITY: usize = 64;
/// Strings kept per thread.
const MAX_SPARE: usize = 256;

thread_local! {
    static SPARE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The thread's kept strings, for one scan.
pub(super) fn take() -> Vec<String> {
    SPARE.with(|s| {
        s.try_borrow_mut()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    })
}

/// What a scan did not use, back to the thread.
pub(super) fn put_back(spare: Vec<String>) {
    SPARE.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.is_empty() {
                *s = spare;
            } else {
                let room = MAX_SPARE.saturating_sub(s.len());
                s.extend(spare.into_iter().take(room));
            }
        }
    });
}

/// `text` as a `String`: in the next kept string when it fits, else one of its own. A text
/// longer than any kept string takes none, as its string was not kept: the next text is then
/// still the one the next kept string was built for.
#[inline(always)]
pub(super) fn own(spare: &mut Vec<String>, text: Cow<'_, str>) -> String {
    if text.len() > MAX_CAPACITY {
        return text.into_owned();
    }
    match spare.pop() {
        Some(mut s) if s.capacity() >= text.len() => {
            s.push_str(&text);
            s
        }
        _ => text.into_owned(),
    }
}

/// Takes a review's tree apart, keeping its short strings for the next review's trees on this
/// thread; the rest is dropped as usual.
pub(crate) fn recycle(tree: Value) {
    SPARE.with(|s| match s.try_borrow_mut() {
        Ok(mut spare) => keep_from(tree, &mut spare),
        Err(_) => drop(tree),
    });
}

/// The tree's strings, last built first: a map builds each entry's value, then its key.
fn keep_from(tree: Value, spare: &mut Vec<String>) {
    match tree {
        Value::String(s) => keep(s, spare),
        Value::Array(list) => list.into_iter().rev().for_each(|v| keep_from(v, spare)),
        Value::Object(map) => {
            for (k, v) in map.into_iter().rev() {
                keep(k, spare);
                keep_from(v, spare);
            }
        }
        _ => {}
    }
}

#[inline(always)]
fn keep(mut s: String, spare: &mut Vec<String>) {
    if s.capacity() <= MAX_CAPACITY && spare.len() < MAX_SPARE {
        s.clear();
        spare.push(s);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kept() -> Vec<usize> {
        SPARE.with(|s| s.borrow().iter().map(String::capacity).collect())
    }

    #[test]
    fn a_tree_gives_back_its_short_strings_and_the_thread_keeps_at_most_its_bound() {
        SPARE.with(|s| s.borrow_mut().clear());
        let long = "x".repeat(MAX_CAPACITY + 1);
        recycle(json!({"a": "bb", "list": [long, 7, null, {"ccc": "dddd"}]}));
        // Last built first, each popped as the next tree builds the same place: "list", its
        // entries from the last (the long one dropped), then "a" and "bb".
        assert_eq!(kept(), [4, 3, 4, 1, 2]);
        let many: Vec<Value> = (0..2 * MAX_SPARE).map(|_| json!("x")).collect();
        recycle(Value::Array(many));
        assert_eq!(kept().len(), MAX_SPARE);
    }

    #[test]
    fn a_kept_string_holds_only_its_new_text_a_long_text_takes_none_a_short_one_is_dropped() {
        SPARE.with(|s| s.borrow_mut().clear());
        recycle(json!(["first built", "second"]));
        let mut spare = take();
        assert_eq!(spare.len(), 2);
        let first = own(&mut spare, "x".into());
        assert_eq!((first.as_str(), first.capacity()), ("x", 11));
        let second = own(&mut spare, Cow::Owned("é\"".into()));
        assert_eq!((second.as_str(), second.capacity()), ("é\"", 6));
        assert!(spare.is_empty());
        assert_eq!(own(&mut spare, "fresh".into()).capacity(), 5);
        // A text longer than any kept string takes none.
        recycle(json!("ab"));
        let mut spare = take();
        own(&mut spare, "y".repeat(MAX_CAPACITY + 1).into());
        assert_eq!(spare.len(), 1);
        // A kept string shorter than the text is dropped; the text gets its own length.
        recycle(json!("ab"));
        let mut spare = take();
        let own_length = own(&mut spare, "abcdefgh".into());
        assert_eq!(own_length.capacity(), 8);
        assert!(spare.is_empty());
    }
}
