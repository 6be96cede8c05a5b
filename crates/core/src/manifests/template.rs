//! Cluster templates: `${VAR}` placeholders as `clusterctl generate cluster` fills them, and the
//! fields that still hold one.
//!
//! clusterctl substitutes the file's text before parsing it (drone/envsubst v2 semantics): only
//! `${…}` is an expression (a bare `$VAR` stays as written); `$$` writes `$` (so `$${V}` is the
//! literal text `${V}`); other text, backslashes included, is left alone (clusterctl's own tests
//! keep `\\` for Windows pipes); the default forms (`${V:=d}`, `${V:-d}`, `${V=d}`, `${V-d}`,
//! `${V:?d}`, `${V:+d}`) all mean "the value, or `d` when it is unset or empty", as drone's single
//! default function does. `${ V }` is read as `${V}` (clusterctl's legacy spelling).
//! Case (`^ ^^ , ,,`), length (`#`), substring (`:n`, `:n:len`), prefix and suffix removal (`# ##
//! % %%`, glob patterns) and replacement (`/ // /# /%`) work as there. Where clusterctl would
//! stop with "value for variables [...] is not set" (a variable without a value or default) the
//! expression is left as written, so `check` can say which field it could not judge.

use std::collections::HashMap;

use serde_json::Value;

/// Variable values: `--var NAME=VALUE`, and with `--env` the process environment (a `--var`
/// wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    values: HashMap<String, String>,
}

impl Vars {
    /// From `NAME=VALUE` pairs, then (when `env`) every environment variable not named there.
    pub fn new(pairs: &[String], env: bool) -> Result<Vars, String> {
        let mut values = HashMap::new();
        for p in pairs {
            match p.split_once('=') {
                Some((name, value)) if !name.is_empty() => {
                    values.insert(name.to_string(), value.to_string());
                }
                _ => return Err(format!("--var {p:?}: expected NAME=VALUE")),
            }
        }
        if env {
            for (name, value) in std::env::vars_os() {
                if let (Ok(name), Ok(value)) = (name.into_string(), value.into_string()) {
                    values.entry(name).or_insert(value);
                }
            }
        }
        Ok(Vars { values })
    }

    #[cfg(test)]
    pub(crate) fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vars {
        Vars {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// `text` with every expression whose variables have values (or defaults) replaced.
pub fn substitute(text: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let next = rest[c.len_utf8()..].chars().next();
        match (c, next) {
            ('$', Some('$')) => {
                out.push('$');
                rest = &rest[2..];
            }
            ('$', Some('{')) => match Parser::new(&rest[2..]).expr() {
                Some((expr, used)) => {
                    let whole = &rest[..2 + used];
                    match expr.eval(vars) {
                        Some(v) => out.push_str(&v),
                        None => out.push_str(whole),
                    }
                    rest = &rest[2 + used..];
                }
                // clusterctl refuses such a file ("bad substitution"); it is kept as written.
                None => {
                    out.push('$');
                    rest = &rest[1..];
                }
            },
            _ => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// One `${…}` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expr {
    Var(String),
    Len(String),
    /// `${V:=d}` and its kin: the value, else the arguments joined.
    Default(String, Vec<Arg>),
    Case(String, &'static str),
    Substr(String, String, Option<String>),
    Remove(String, String, String),
    Replace(String, String, String, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg {
    Text(String),
    Expr(Expr),
}

impl Expr {
    fn eval(&self, vars: &Vars) -> Option<String> {
        match self {
            Expr::Var(v) => vars.get(v).map(str::to_string),
            Expr::Len(v) => vars.get(v).map(|s| s.len().to_string()),
            Expr::Default(v, args) => match vars.get(v) {
                Some(s) if !s.is_empty() => Some(s.to_string()),
                _ => {
                    let mut out = String::new();
                    for a in args {
                        match a {
                            Arg::Text(t) => out.push_str(t),
                            Arg::Expr(e) => out.push_str(&e.eval(vars)?),
                        }
                    }
                    // An unset variable with an empty default is still "set" for clusterctl.
                    Some(out)
                }
            },
            Expr::Case(v, op) => {
                let s = vars.get(v)?;
                let mut chars = s.chars();
                Some(match *op {
                    "^^" => s.to_uppercase(),
                    ",," => s.to_lowercase(),
                    "^" => chars
                        .next()
                        .map(|c| c.to_uppercase().chain(chars).collect())
                        .unwrap_or_default(),
                    _ => chars
                        .next()
                        .map(|c| c.to_lowercase().chain(chars).collect())
                        .unwrap_or_default(),
                })
            }
            Expr::Substr(v, pos, len) => {
                let s = vars.get(v)?;
                Some(substr(s, pos, len.as_deref()))
            }
            Expr::Remove(v, op, pattern) => {
                let s = vars.get(v)?;
                Some(remove(s, op, pattern))
            }
            Expr::Replace(v, op, pattern, with) => {
                let s = vars.get(v)?;
                Some(match op.as_str() {
                    "//" => s.replace(pattern.as_str(), with),
                    "/#" if s.starts_with(pattern.as_str()) => {
                        format!("{with}{}", &s[pattern.len()..])
                    }
                    "/%" if s.ends_with(pattern.as_str()) => {
                        format!("{}{with}", &s[..s.len() - pattern.len()])
                    }
                    "/" => s.replacen(pattern.as_str(), with, 1),
                    _ => s.to_string(),
                })
            }
        }
    }
}

/// Bash's `${V:pos:len}` as drone/envsubst does it (byte offsets; an unparsable number leaves
/// the value whole).
fn substr(s: &str, pos: &str, len: Option<&str>) -> String {
    let Ok(mut pos) = pos.trim().parse::<i64>() else {
        return s.to_string();
    };
    let n = s.len() as i64;
    if pos < 0 {
        pos = (n + pos).max(0);
    }
    let pos = pos as usize;
    let slice = |a: usize, b: usize| s.get(a..b).unwrap_or("").to_string();
    match len {
        None if pos < s.len() => slice(pos, s.len()),
        None => String::new(),
        Some(len) => {
            let Ok(len) = len.trim().parse::<i64>() else {
                return s.to_string();
            };
            if pos as i64 + len >= n {
                slice(pos.min(s.len()), s.len())
            } else {
                slice(pos, (pos as i64 + len).max(pos as i64) as usize)
            }
        }
    }
}

/// `#`, `##`, `%`, `%%`: the shortest or longest prefix or suffix matching a glob removed.
fn remove(s: &str, op: &str, pattern: &str) -> String {
    let suffix = op.starts_with('%');
    let longest = op.len() == 2;
    let (s2, p2): (String, String) = if suffix {
        (s.chars().rev().collect(), pattern.chars().rev().collect())
    } else {
        (s.to_string(), pattern.to_string())
    };
    let ends: Vec<usize> = s2
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain([s2.len()])
        .collect();
    let found = if longest {
        ends.iter().rev().find(|e| glob(&p2, &s2[..**e]))
    } else {
        ends.iter().find(|e| glob(&p2, &s2[..**e]))
    };
    let out = match found {
        Some(e) => s2[*e..].to_string(),
        None => s2,
    };
    if suffix {
        out.chars().rev().collect()
    } else {
        out
    }
}

/// drone/envsubst's own glob (its `path` package), without character classes: `*` is any run
/// of characters, `/` included (`${P##*/}` is a file's name), `?` one character, `\` escapes.
fn glob(pattern: &str, s: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = s.chars().collect();
    fn m(p: &[char], t: &[char]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => (0..=t.len()).any(|i| m(&p[1..], &t[i..])),
            Some('?') => !t.is_empty() && m(&p[1..], &t[1..]),
            Some('\\') if p.len() > 1 => t.first() == Some(&p[1]) && m(&p[2..], &t[1..]),
            Some(c) => t.first() == Some(c) && m(&p[1..], &t[1..]),
        }
    }
    m(&p, &t)
}

/// Reads one expression after `${`: the expression and the bytes it used (through its `}`).
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

/// clusterctl documents `${VAR$FOO}` as one name.
fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser { text, at: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(&f) {
            self.bump();
        }
        &self.text[start..self.at]
    }

    fn close(&mut self, e: Expr) -> Option<(Expr, usize)> {
        self.eat('}').then_some((e, self.at))
    }

    fn expr(&mut self) -> Option<(Expr, usize)> {
        if let Some(legacy) = self.legacy() {
            return Some(legacy);
        }
        if self.eat('#') {
            let name = self.take_while(ident_char).to_string();
            if name.is_empty() {
                return None;
            }
            return self.close(Expr::Len(name));
        }
        let name = self.take_while(ident_char).to_string();
        if name.is_empty() {
            return None;
        }
        match self.peek()? {
            '}' => self.close(Expr::Var(name)),
            ':' if matches!(
                self.text[self.at + 1..].chars().next(),
                Some('=' | '-' | '?' | '+')
            ) =>
            {
                self.at += 2;
                self.default(name)
            }
            ':' => {
                self.at += 1;
                let pos = self.take_while(|c| c != ':' && c != '}').to_string();
                let len = if self.eat(':') {
                    Some(self.take_while(|c| c != '}').to_string())
                } else {
                    None
                };
                self.close(Expr::Substr(name, pos, len))
            }
            '=' | '-' => {
                self.at += 1;
                self.default(name)
            }
            c @ (',' | '^') => {
                self.at += 1;
                let op = match (c, self.eat(c)) {
                    (',', false) => ",",
                    (',', true) => ",,",
                    ('^', false) => "^",
                    _ => "^^",
                };
                self.close(Expr::Case(name, op))
            }
            c @ ('#' | '%') => {
                self.at += 1;
                let op = if self.eat(c) {
                    format!("{c}{c}")
                } else {
                    c.to_string()
                };
                let pattern = self.take_while(|c| c != '}').to_string();
                self.close(Expr::Remove(name, op, pattern))
            }
            '/' => {
                self.at += 1;
                let op = match self.peek() {
                    Some(c @ ('/' | '#' | '%')) => {
                        self.at += 1;
                        format!("/{c}")
                    }
                    _ => "/".to_string(),
                };
                let pattern = self.escaped_until('/');
                if !self.eat('/') {
                    return None;
                }
                let with = self.escaped_until('}');
                self.close(Expr::Replace(name, op, pattern, with))
            }
            _ => None,
        }
    }

    /// `${ NAME }`, `${ NAME}`, `${NAME }`: clusterctl drops the blanks first.
    fn legacy(&mut self) -> Option<(Expr, usize)> {
        let rest = &self.text[self.at..];
        let end = rest.find('}')?;
        let inner = &rest[..end];
        let name = inner.trim();
        let spaced = inner.len() != name.len();
        let simple = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        if spaced && simple && !name.contains(char::is_whitespace) {
            self.at += end + 1;
            return Some((Expr::Var(name.to_string()), self.at));
        }
        None
    }

    /// Text with `\/` and `\\` escapes, up to (not including) `stop`.
    fn escaped_until(&mut self, stop: char) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c == stop {
                break;
            }
            self.bump();
            if c == '\\' && matches!(self.peek(), Some('/' | '\\')) {
                out.push(self.bump().unwrap_or('\\'));
            } else {
                out.push(c);
            }
        }
        out
    }

    /// The arguments of a default: text up to `}` or a nested `${…}`.
    fn default(&mut self, name: String) -> Option<(Expr, usize)> {
        let mut args = Vec::new();
        loop {
            match self.peek()? {
                '}' => {
                    self.at += 1;
                    return Some((Expr::Default(name, args), self.at));
                }
                '$' if self.text[self.at + 1..].starts_with('{') => {
                    self.at += 2;
                    let mut inner = Parser::new(&self.text[self.at..]);
                    let (e, used) = inner.expr()?;
                    self.at += used;
                    args.push(Arg::Expr(e));
                }
                _ => {
                    let start = self.at;
                    self.bump();
                    while let Some(c) = self.peek() {
                        if c == '}' || (c == '$' && self.text[self.at + 1..].starts_with('{')) {
                            break;
                        }
                        self.bump();
                    }
                    args.push(Arg::Text(self.text[start..self.at].to_string()));
                }
            }
        }
    }
}

/// The first `${…}` placeholder in `s`, if any (`${` then a name character, through its `}`).
pub fn placeholder_in(s: &str) -> Option<&str> {
    // Nearly every string of a real manifest has no `$`: a byte search (memchr) answers those
    // without setting up a substring search.
    if !s.as_bytes().contains(&b'$') {
        return None;
    }
    let mut from = 0;
    while let Some(i) = s[from..].find("${") {
        let start = from + i;
        let after = &s[start + 2..];
        if after.starts_with(|c: char| ident_char(c) || c == '#' || c == ' ') {
            if let Some(end) = after.find('}') {
                return Some(&s[start..start + 2 + end + 1]);
            }
        }
        from = start + 2;
    }
    None
}

/// Every field of `object` whose string value (or a key of whose map) holds a placeholder, as
/// `(field path, the placeholder)`, in document order.
pub fn placeholders(object: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
        match v {
            Value::String(s) => {
                if let Some(p) = placeholder_in(s) {
                    out.push((path.clone(), p.to_string()));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item, path, out);
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let len = path.len();
                    if k.contains(['.', '/']) || placeholder_in(k).is_some() {
                        path.push_str(&format!("[{k}]"));
                    } else {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(k);
                    }
                    if let Some(p) = placeholder_in(k) {
                        out.push((path.clone(), p.to_string()));
                    }
                    walk(item, path, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    // The paths are built only for an object that holds a placeholder somewhere: formatting a
    // path for every field of every object cost `check` a tenth of its instructions.
    fn holds(v: &Value) -> bool {
        match v {
            Value::String(s) => placeholder_in(s).is_some(),
            Value::Array(items) => items.iter().any(holds),
            Value::Object(map) => map
                .iter()
                .any(|(k, item)| placeholder_in(k).is_some() || holds(item)),
            _ => false,
        }
    }
    let mut out = Vec::new();
    if holds(object) {
        walk(object, &mut String::new(), &mut out);
    }
    out
}

/// Whether a finding at `field` is about a field holding a placeholder: the field itself, a
/// field inside it, or a list or object below the top level that holds it (`spec.addresses`
/// for `spec.addresses[0]`: which family a placeholder is cannot be known).
pub fn touches(field: &str, placeholder_field: &str) -> bool {
    let under = |inner: &str, outer: &str| {
        inner.len() > outer.len()
            && inner.starts_with(outer)
            && matches!(inner.as_bytes()[outer.len()], b'.' | b'[')
    };
    field == placeholder_field
        || under(field, placeholder_field)
        || (field.contains(['.', '[']) && under(placeholder_field, field))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(text: &str, vars: &[(&str, &str)]) -> String {
        substitute(text, &Vars::from_pairs(vars.iter().copied()))
    }

    #[test]
    fn plain_and_default_forms() {
        let v = [("A", "x"), ("E", "")];
        assert_eq!(sub("a: ${A}", &v), "a: x");
        assert_eq!(sub("a: ${E}", &v), "a: ");
        assert_eq!(sub("${A:=d} ${B:=d} ${E:=d}", &v), "x d d");
        assert_eq!(sub("${A:-d} ${B:-d} ${E:-d}", &v), "x d d");
        // drone/envsubst: `=` uses the default for an empty value too.
        assert_eq!(sub("${A=d} ${B=d} ${E=d}", &v), "x d d");
        assert_eq!(sub("${B:=${A}-s} ${B:=p${C}}", &v), "x-s ${B:=p${C}}");
        assert_eq!(sub("${B:-}", &v), "");
        assert_eq!(sub("${A-d} ${B-d} ${E-d}", &v), "x d d");
        assert_eq!(sub("${A$B}", &[("A$B", "y")]), "y");
    }

    #[test]
    fn unresolved_and_literal_text_stays() {
        let v = [("A", "x")];
        assert_eq!(sub("${MISSING} $A ${ A } ${A }", &v), "${MISSING} $A x x");
        // Backslashes stay (clusterctl keeps `\\` for Windows named pipes).
        assert_eq!(sub("$${A} $$ \\\\ \\/ \\n", &v), "${A} $ \\\\ \\/ \\n");
        assert_eq!(
            sub("${{ github.x }} ${} ${A", &v),
            "${{ github.x }} ${} ${A"
        );
        assert_eq!(sub("line\n${A}\nend", &v), "line\nx\nend");
    }

    #[test]
    fn functions() {
        let v = [
            ("F", "bash.string.txt"),
            ("P", "/path/to/file"),
            ("U", "abcD"),
        ];
        assert_eq!(sub("${#F} ${#X}", &v), "15 ${#X}");
        assert_eq!(sub("${U^} ${U^^} ${U,} ${U,,}", &v), "AbcD ABCD abcD abcd");
        assert_eq!(
            sub("${F:5} ${F:5:6} ${F:-3}", &v),
            "string.txt string bash.string.txt"
        );
        assert_eq!(
            sub("${F#*.} ${F##*.} ${F%.*} ${F%%.*}", &v),
            "string.txt txt bash.string bash"
        );
        assert_eq!(sub("${P##*/} ${P#*/}", &v), "file path/to/file");
        assert_eq!(
            sub("${F/./-} ${F//./-} ${F/#bash/sh} ${F/%txt/md}", &v),
            "bash-string.txt bash-string-txt sh.string.txt bash.string.md"
        );
        assert_eq!(sub("${P//\\//-}", &v), "-path-to-file");
    }

    #[test]
    fn placeholders_are_found_with_their_fields() {
        let o = serde_json::json!({
            "metadata": {"name": "${CLUSTER_NAME}-pool", "labels": {"a/b": "${L}"}},
            "spec": {"addresses": ["10.0.0.1", "${IP:-10.0.0.2}"], "prefix": 24, "x": "$HOME ${{ a }}"}
        });
        assert_eq!(
            placeholders(&o),
            vec![
                ("metadata.labels[a/b]".to_string(), "${L}".to_string()),
                ("metadata.name".to_string(), "${CLUSTER_NAME}".to_string()),
                (
                    "spec.addresses[1]".to_string(),
                    "${IP:-10.0.0.2}".to_string()
                ),
            ]
        );
        assert!(touches("spec.addresses[1]", "spec.addresses[1]"));
        assert!(touches("spec.addresses", "spec.addresses[1]"));
        assert!(touches("spec.ref.name.x", "spec.ref.name"));
        assert!(!touches("spec", "spec.addresses[1]"));
        assert!(!touches("spec.addresses[10]", "spec.addresses[1]"));
        assert!(!touches("spec.prefix", "spec.p"));
    }
}
