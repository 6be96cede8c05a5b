//! A reader of our own for a review body, tried before serde_json's (`envelope::read`): one pass
//! over the text, building what serde's reader builds (the same `Top`, the same object trees).
//! What it saves is in what it passes over: `managedFields` and the envelope's unread parts are
//! checked in a loop rather than a descent, and strings go by eight bytes at a time; that, and
//! fewer calls, took 8% off a review's instructions on the mixed load. The same reader recursing
//! a byte at a time cost what serde_json costs, and a SIMD reader behind serde (sonic-rs) saved
//! 1–2%.
//!
//! It reads only what every review the API server sends looks like: UTF-8 text, objects where
//! the envelope has objects, integers of at most 18 digits, nesting to `MAX_DEPTH`. Anything else
//! (broken JSON, a float, a field of the wrong shape, a lone surrogate) makes it give up, and
//! serde's reader reads the body from the start, so what such a body gets (a 400 in serde_json's
//! words, a quoted overflowing number, a wrong-typed field's message) is exactly what it got
//! before. Where it does not give up, its answer is serde's: a test holds the two readers to the
//! same result on every body it tries.
//!
//! Its trees' short strings (most keys and values) are the emptied strings of the last review's
//! trees on the same thread (`spare`), not a `malloc` each.
//!
//! An UPDATE's `oldObject` is compared with the object's text before any tree is built for it:
//! where every value the tree would keep is the same text but `metadata.labels` (a relabel, a
//! finalizer or an owner reference added), and the labels are the same too or no rule of the
//! kind reads one on UPDATE, it is only checked as JSON and the object stands in for it
//! (`Envelope::old_like_object`). That took 13–16k instructions off each relabel.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::json_text;
use crate::kinds::Kind;
use crate::model::object::{ReviewObject, TextObject};
use crate::rules::conditions;

use super::parts::{
    Field, Gvk, GvkFields, Level, Request, RequestFields, Take, Top, TopFields, UserInfo,
};

/// Nesting beyond this is left to serde_json, whose limit (128 levels) and words then apply.
/// Kubernetes objects nest about a dozen levels.
const MAX_DEPTH: usize = 64;

/// The review's top level, or None when the body is not one this reader answers for.
pub(super) fn top(text: &str) -> Option<Top<'_>> {
    let mut s = Scan::new(text);
    let top = s.top();
    s.ws();
    s.give_back_spare();
    let top = top?;
    (s.i == s.b.len()).then_some(top)
}

/// An object of a review (a forwarded X2 step's object), as `object::decode` builds it.
pub(super) fn object(text: &str) -> Option<Value> {
    let mut s = Scan::new(text);
    let value = s.level(Level::Object);
    s.ws();
    s.give_back_spare();
    let value = value?;
    (s.i == s.b.len()).then_some(value)
}

/// The tree of an object kept as text (`model::object::TextObject`). The text is the span
/// `address_text` read by this reader's rules, nested deeper in the body than here, so reading
/// it again cannot give up (were it to, a reader of the tree would find `null`).
fn tree(text: &str) -> Value {
    object(text).unwrap_or_default()
}

/// A tree's strings, kept for the next review's trees (`recycle`).
pub(super) use spare::recycle;

/// Every reader returns None to give up; `i` is then of no further use.
struct Scan<'b> {
    b: &'b [u8],
    text: &'b str,
    i: usize,
    depth: usize,
    spare: Vec<String>,
}

impl<'b> Scan<'b> {
    fn new(text: &'b str) -> Self {
        Scan {
            b: text.as_bytes(),
            text,
            i: 0,
            depth: 0,
            spare: spare::take(),
        }
    }

    fn give_back_spare(&mut self) {
        spare::put_back(std::mem::take(&mut self.spare));
    }

    /// A key's or a string value's text as the tree's own `String`.
    #[inline(always)]
    fn own(&mut self, text: Cow<'_, str>) -> String {
        spare::own(&mut self.spare, text)
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed. An API server's bodies are compact:
    /// a byte above the space is the answer at once, and whitespace (all at or below it) goes
    /// the long way.
    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        match self.b.get(self.i) {
            Some(&c) if c > b' ' => Some(c),
            _ => self.peek_past_space(),
        }
    }

    #[cold]
    fn peek_past_space(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// An object, each key handed to `entry` positioned at its value.
    fn object(
        &mut self,
        mut entry: impl FnMut(&mut Self, Cow<'b, str>) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.enter()?;
        if self.peek()? == b'}' {
            self.i += 1;
        } else {
            loop {
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                self.eat(b':')?;
                entry(self, key)?;
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.enter()?;
        if self.peek()? == b']' {
            self.i += 1;
        } else {
            loop {
                element(self)?;
                match self.peek()? {
                    b',' => self.i += 1,
                    b']' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string at its opening quote: borrowed from the body unless it has escapes.
    #[inline(always)]
    fn string(&mut self) -> Option<Cow<'b, str>> {
        self.i += 1;
        let start = self.i;
        self.plain_run();
        match *self.b.get(self.i)? {
            b'"' => {
                let s = self.text.get(start..self.i)?;
                self.i += 1;
                Some(Cow::Borrowed(s))
            }
            b'\\' => self.escaped(start).map(Cow::Owned),
            _ => None,
        }
    }

    /// Moves to the next quote, backslash or control character, eight bytes at a time
    /// (`json_text::plain_end`): a byte at a time cost 9 instructions a byte, and `managedFields`
    /// is mostly string bytes.
    #[inline(always)]
    fn plain_run(&mut self) {
        self.i = json_text::plain_end(self.b, self.i);
    }

    /// The rest of a string from its first backslash, with `start..i` already plain text.
    #[cold]
    fn escaped(&mut self, start: usize) -> Option<String> {
        let mut out = String::from(self.text.get(start..self.i)?);
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                b'\\' => {
                    let e = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    out.push(match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return None,
                    });
                }
                _ => {
                    let run = self.i;
                    self.plain_run();
                    if self.i == run {
                        return None; // a control character
                    }
                    out.push_str(self.text.get(run..self.i)?);
                }
            }
        }
    }

    /// The character of a `\u` escape (its `\u` read), a surrogate pair as one character; a lone
    /// surrogate gives up.
    fn unicode(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if !(0xD800..0xDC00).contains(&hi) {
            return char::from_u32(hi);
        }
        if self.b.get(self.i..self.i + 2)? != b"\\u" {
            return None;
        }
        self.i += 2;
        let lo = self.hex4()?;
        if !(0xDC00..0xE000).contains(&lo) {
            return None;
        }
        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let mut v = 0;
        for &d in digits {
            v = v << 4 | char::from(d).to_digit(16)?;
        }
        self.i += 4;
        Some(v)
    }

    /// An integer as serde_json reads it (`u64` when not negative, else `i64`), when it is one of
    /// at most 18 digits; a fraction, an exponent, `-0` or a longer one gives up.
    fn integer(&mut self) -> Option<Value> {
        let negative = self.b.get(self.i) == Some(&b'-');
        if negative {
            self.i += 1;
        }
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&d @ b'0'..=b'9') = self.b.get(self.i) {
            v = v * 10 + u64::from(d - b'0');
            self.i += 1;
            if self.i - start > 18 {
                return None;
            }
        }
        let n = self.i - start;
        if n == 0 || (n > 1 && self.b[start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return None;
        }
        match (negative, i64::try_from(v).ok()?) {
            (false, _) => Some(Value::from(v)),
            (true, 0) => None,
            (true, v) => Some(Value::from(-v)),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.b.get(self.i..self.i + word.len())? == word).then(|| self.i += word.len())
    }

    /// Any value, checked and dropped. A loop, not a descent: most of what is skipped is
    /// `managedFields`, a deep tree of short strings, and recursing per value cost as much as
    /// serde_json's `IgnoredAny`.
    fn skip(&mut self) -> Option<()> {
        // One bit per open container, set for an object.
        let mut open: u64 = 0;
        let mut depth = 0;
        loop {
            // A value is expected.
            match self.peek()? {
                c @ (b'{' | b'[') => {
                    self.i += 1;
                    depth += 1;
                    if self.depth + depth > MAX_DEPTH {
                        return None;
                    }
                    let object = c == b'{';
                    open = open << 1 | u64::from(object);
                    let close = if object { b'}' } else { b']' };
                    if self.peek()? != close {
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                    self.i += 1;
                    depth -= 1;
                    open >>= 1;
                }
                b'"' => {
                    self.i += 1;
                    self.skip_string()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => self.digits()?,
            }
            // A value ended: a comma, or the end of its container (and maybe of more).
            loop {
                if depth == 0 {
                    return Some(());
                }
                let object = open & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.i += 1;
                depth -= 1;
                open >>= 1;
            }
        }
    }

    /// A key and its colon, checked and dropped.
    #[inline(always)]
    fn key(&mut self) -> Option<()> {
        self.eat(b'"')?;
        self.skip_string()?;
        self.eat(b':')
    }

    /// The rest of a string after its opening quote, checked and dropped.
    #[inline(always)]
    fn skip_string(&mut self) -> Option<()> {
        loop {
            self.plain_run();
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => {
                    let e = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            self.unicode()?;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// An integer's text, as `integer` takes it, checked and dropped.
    fn digits(&mut self) -> Option<()> {
        self.integer().map(drop)
    }

    /// Any value as a plain `Value` tree.
    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'{' => {
                let mut map = Map::new();
                self.object(|s, key| {
                    let v = s.value()?;
                    let key = s.own(key);
                    map.insert(key, v);
                    Some(())
                })?;
                Some(Value::Object(map))
            }
            b'[' => {
                let mut list = Vec::new();
                self.array(|s| {
                    list.push(s.value()?);
                    Some(())
                })?;
                Some(Value::Array(list))
            }
            b'"' => {
                let text = self.string()?;
                Some(Value::String(self.own(text)))
            }
            b't' => self.literal(b"true").map(|()| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|()| Value::Null),
            _ => self.integer(),
        }
    }

    /// An object of the review at `level`, keeping and passing over keys as `object::Level`
    /// does; anything but a map is a plain value there too.
    fn level(&mut self, level: Level) -> Option<Value> {
        self.level_noting(level, None)
    }

    /// `level`, noting in `noted` the text of each value the tree keeps (a review's `object`).
    fn level_noting(&mut self, level: Level, mut noted: Option<&mut Noted<'b>>) -> Option<Value> {
        if self.peek()? != b'{' {
            return self.value();
        }
        if let Some(n) = noted.as_deref_mut() {
            n.at(level).map = true;
        }
        let mut map = Map::new();
        self.object(|s, key| {
            let start = s.i;
            let v = match level.take(&key) {
                Take::Ignore | Take::Skip => {
                    s.skip()?;
                    if let (Some(n), "generation") = (noted.as_deref_mut(), &*key) {
                        n.generation = s.text.get(start..s.i);
                    }
                    return Some(());
                }
                Take::Plain => s.value()?,
                Take::Into(inner) => s.level_noting(inner, noted.as_deref_mut())?,
            };
            if let Some(n) = noted.as_deref_mut() {
                let plain = match key {
                    Cow::Borrowed(key) => Some(key),
                    Cow::Owned(_) => None,
                };
                n.at(level).note(plain, s.text.get(start..s.i)?);
            }
            let key = s.own(key);
            map.insert(key, v);
            Some(())
        })?;
        Some(Value::Object(map))
    }

    /// Reads an UPDATE's `oldObject` when its text is the object's (`noted`) in every value the
    /// object's tree keeps, but for `metadata.labels`: whether the labels are the same too. None
    /// when it differs, or this cannot tell; the cursor is then of no use (the caller reads the
    /// old object again from where it began).
    fn old_alike(&mut self, noted: &Noted<'b>) -> Option<bool> {
        if !noted.top.map || noted.top.full {
            return None;
        }
        let mut seen = 0;
        let mut labels_same = true;
        self.object(|s, key| {
            let ours = noted.top.get(&key)?;
            if key == "metadata" {
                labels_same = s.old_metadata_alike(&noted.metadata, noted.generation)?;
            } else {
                s.same_text(ours)?;
            }
            seen += 1;
            Some(())
        })?;
        // Each key once, and every key of the object's: a repeated key counts twice.
        (seen == noted.top.n).then_some(labels_same)
    }

    /// `old_alike` for the old object's metadata: whether its labels are the object's too.
    fn old_metadata_alike(&mut self, noted: &Keys<'b>, generation: Option<&str>) -> Option<bool> {
        if !noted.map || noted.full || self.peek()? != b'{' {
            return None;
        }
        let mut seen = 0;
        let mut labels = None;
        self.object(|s, key| {
            if let Take::Ignore | Take::Skip = Level::Metadata.take(&key) {
                // The API server counts a change of anything but metadata in `generation`,
                // which comes before `managedFields`: an old object with another one is not
                // compared further, and its managedFields are not read twice.
                if let (true, Some(ours)) = (key == "generation", generation) {
                    return s.same_text(ours);
                }
                return s.skip();
            }
            if key == "labels" {
                let start = s.i;
                s.skip()?;
                labels = Some(s.text.get(start..s.i)?);
            } else {
                s.same_text(noted.get(&key)?)?;
                seen += 1;
            }
            Some(())
        })?;
        let ours = noted.get("labels");
        (seen == noted.n - usize::from(ours.is_some())).then_some(labels == ours)
    }

    /// Moves past `text` (a value of the object, read already) when the body goes on with it
    /// byte for byte: the same text is the same valid value, and whatever follows it is checked
    /// by the map it sits in.
    fn same_text(&mut self, text: &str) -> Option<()> {
        self.b[self.i..]
            .starts_with(text.as_bytes())
            .then(|| self.i += text.len())
    }

    /// Moves past a value that is `seen` (a value of the review read already) byte for byte,
    /// as `same_text`, or else skips it: a repeated part of the envelope is compared, not read
    /// again.
    fn same_or_skip(&mut self, seen: Option<&str>) -> Option<()> {
        match seen {
            Some(text) if self.same_text(text).is_some() => Some(()),
            _ => self.skip(),
        }
    }

    /// A value read as what it is (`Field`).
    fn field(&mut self) -> Option<Field<'b>> {
        Some(match self.peek()? {
            b'"' => Field::Str(self.string()?),
            b't' => self.literal(b"true").map(|()| Field::Bool(true))?,
            b'f' => self.literal(b"false").map(|()| Field::Bool(false))?,
            b'n' => self.literal(b"null").map(|()| Field::Null)?,
            _ => self.skip().map(|()| Field::Other)?,
        })
    }

    fn top(&mut self) -> Option<Top<'b>> {
        let mut out = TopFields::default();
        self.object(|s, key| {
            match &*key {
                "apiVersion" => out.api_version = Some(s.field()?),
                "kind" => out.kind = Some(s.field()?),
                "request" => out.request = Some(s.request()?),
                _ => s.skip()?,
            }
            Some(())
        })?;
        Some(Top(Some(out)))
    }

    fn request(&mut self) -> Option<Request<'b>> {
        let mut out = RequestFields::default();
        let mut noted = None;
        // The text of `kind` and of the first of `resource` and `requestResource`: the API
        // server writes the other of each pair the same unless it converted the request.
        let mut kind_text = None;
        let mut resource_text = None;
        // Where an object kept as text began (and its depth), to be read again as a tree if an
        // old object must be compared with it after all.
        let mut text_at = None;
        self.object(|s, key| {
            match &*key {
                "uid" => out.uid = Some(s.field()?),
                // The old object was compared with another kind or object: serde's reader
                // reads this rare body.
                "kind" | "object" if out.old_like_object => return None,
                "kind" => {
                    let start = s.i;
                    out.kind = Some(s.gvk()?);
                    kind_text = s.text.get(start..s.i);
                }
                "requestKind" => s.same_or_skip(kind_text)?,
                "resource" | "requestResource" => {
                    let start = s.i;
                    s.same_or_skip(resource_text)?;
                    resource_text = resource_text.or(s.text.get(start..s.i));
                }
                "operation" => out.operation = Some(s.field()?),
                "namespace" => out.namespace = Some(s.field()?),
                "name" => out.name = Some(s.field()?),
                "dryRun" => out.dry_run = Some(s.field()?),
                // A CAPI IPAddress not said to be an UPDATE is read into its typed fields and
                // kept as text (`address_text`); an object that reader gives up on, as a tree.
                "object"
                    if !is_update(&out.operation) && out.kind.as_ref().is_some_and(is_address) =>
                {
                    let (start, depth) = (s.i, s.depth);
                    noted = None;
                    text_at = None;
                    out.object = Some(match s.address_text() {
                        Some(address) => {
                            text_at = Some((start, depth));
                            let text = s.text.get(start..s.i)?;
                            ReviewObject::Text(TextObject::address(text, address, tree))
                        }
                        None => {
                            (s.i, s.depth) = (start, depth);
                            ReviewObject::Tree(s.level(Level::Object)?)
                        }
                    });
                }
                // The API server writes `operation` before `object`: the object of a review
                // said not to be an UPDATE is not noted, as no old object will be compared.
                "object" if matches!(&out.operation, Some(Field::Str(op)) if op != "UPDATE") => {
                    noted = None;
                    text_at = None;
                    out.object = Some(ReviewObject::Tree(s.level(Level::Object)?));
                }
                "object" => {
                    let noted = noted.insert(Noted::default());
                    text_at = None;
                    out.object = Some(ReviewObject::Tree(
                        s.level_noting(Level::Object, Some(noted))?,
                    ));
                }
                // An address kept as text before the operation was read (keys in another order
                // than the API server's): its tree is built now, noted, for the old object.
                "oldObject" if text_at.is_some() && s.peek()? != b'n' => {
                    let (start, depth) = text_at.take()?;
                    let (at, at_depth) = (s.i, s.depth);
                    (s.i, s.depth) = (start, depth);
                    let noted = noted.insert(Noted::default());
                    out.object = Some(ReviewObject::Tree(
                        s.level_noting(Level::Object, Some(noted))?,
                    ));
                    (s.i, s.depth) = (at, at_depth);
                    s.old_object(&mut out, Some(noted))?;
                }
                "oldObject" => s.old_object(&mut out, noted.as_ref())?,
                "userInfo" => out.user_info = Some(s.user_info()?),
                _ => s.skip()?,
            }
            Some(())
        })?;
        Some(Request(Some(out)))
    }

    /// `oldObject`, compared with the object's `noted` text where it was noted.
    fn old_object(&mut self, out: &mut RequestFields<'b>, noted: Option<&Noted<'b>>) -> Option<()> {
        let (start, depth) = (self.i, self.depth);
        let labels_read = out.kind.as_ref().is_none_or(labels_read_on_update);
        match noted.and_then(|noted| self.old_alike(noted)) {
            Some(labels_same) if labels_same || !labels_read => {
                out.old_object = None;
                out.old_like_object = true;
            }
            _ => {
                (self.i, self.depth) = (start, depth);
                out.old_object = Some(self.level(Level::Object)?);
                out.old_like_object = false;
            }
        }
        Some(())
    }

    fn gvk(&mut self) -> Option<Gvk<'b>> {
        let mut out = GvkFields::default();
        self.object(|s, key| {
            match &*key {
                "group" => out.group = Some(s.field()?),
                "version" => out.version = Some(s.field()?),
                "kind" => out.kind = Some(s.field()?),
                _ => s.skip()?,
            }
            Some(())
        })?;
        Some(Gvk(Some(out)))
    }

    fn user_info(&mut self) -> Option<UserInfo<'b>> {
        let mut out = UserInfo::default();
        self.object(|s, key| {
            match &*key {
                "username" => {
                    out.user = match s.field()? {
                        Field::Str(name) => Some(name),
                        _ => None,
                    }
                }
                "groups" => {
                    let mut groups = Vec::new();
                    s.array(|s| {
                        if let Field::Str(g) = s.field()? {
                            groups.push(g);
                        }
                        Some(())
                    })?;
                    out.groups = groups;
                }
                _ => s.skip()?,
            }
            Some(())
        })?;
        Some(out)
    }
}

/// Whether the operation read so far is an UPDATE.
fn is_update(op: &Option<Field<'_>>) -> bool {
    matches!(op, Some(Field::Str(op)) if op == "UPDATE")
}

/// Whether `request.kind` is a CAPI `IPAddress`, whose object is read as text (`address_text`).
fn is_address(gvk: &Gvk<'_>) -> bool {
    kind_of(gvk) == Some(Kind::IPAddress)
}

/// The kind `request.kind` names, when it is one of ours written as strings.
fn kind_of(gvk: &Gvk<'_>) -> Option<Kind> {
    let Gvk(Some(GvkFields {
        group: Some(Field::Str(group)),
        kind: Some(Field::Str(kind)),
        ..
    })) = gvk
    else {
        return None;
    };
    Kind::from_group_kind(group, kind)
}

/// Whether an UPDATE of this kind can be judged or mutated on a label (`rules::conditions`):
/// then an old object is the object's stand-in only when its labels are the same too. A kind
/// that is not ours, or not said, is taken to read them.
fn labels_read_on_update(gvk: &Gvk<'_>) -> bool {
    kind_of(gvk).is_none_or(conditions::reads_labels_on_update)
}

/// How many keys of each level of the object are noted; an object with more is not compared.
const NOTED: usize = 12;

/// The text of each value a review's `object` tree keeps, by key, at its top level and in its
/// `metadata`: what an UPDATE's `oldObject` is compared with (`old_alike`).
#[derive(Default)]
struct Noted<'b> {
    top: Keys<'b>,
    metadata: Keys<'b>,
    /// `metadata.generation`, which the tree leaves out: an old object with another one differs
    /// beyond its metadata.
    generation: Option<&'b str>,
}

impl<'b> Noted<'b> {
    fn at(&mut self, level: Level) -> &mut Keys<'b> {
        match level {
            Level::Object => &mut self.top,
            Level::Metadata => &mut self.metadata,
        }
    }
}

/// One map's keys and their values' text, on the stack: no allocation for a review.
#[derive(Default)]
struct Keys<'b> {
    /// The value was a map (its keys are noted).
    map: bool,
    /// A key with escapes, or more than `NOTED` keys: not compared.
    full: bool,
    n: usize,
    keys: [(&'b str, &'b str); NOTED],
}

impl<'b> Keys<'b> {
    /// A key (None when written with escapes) and its value's text. A repeated key is noted
    /// again: `get` finds the last, as the tree keeps the last, and an old object, whose keys
    /// are counted against `n`, is then never taken for this one.
    fn note(&mut self, key: Option<&'b str>, text: &'b str) {
        if let (Some(key), Some(slot)) = (key, self.keys.get_mut(self.n)) {
            *slot = (key, text);
            self.n += 1;
        } else {
            self.full = true;
        }
    }

    fn get(&self, key: &str) -> Option<&'b str> {
        self.keys[..self.n]
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|&(_, text)| text)
    }
}

mod address;
mod spare;

#[cfg(test)]
mod tests;
