//! Reads `builtin.fields`, the project's own notation for the fields of the kinds it judges (the
//! notation is described at the top of that file). A line-based format rather than YAML: one
//! field per line with its facts beside it, shared shapes written once and long patterns built
//! from named parts keep the description a few hundred lines that a reviewer can hold against a
//! provider's API, and nothing of the providers' files (their layout, their documentation)
//! needs to be carried.

use std::cell::RefCell;
use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use super::{ListType, Node, Type};

pub(super) const TEXT: &str = include_str!("builtin.fields");

/// One `kind` block: the schema of its root object for each version it names.
#[derive(Debug)]
pub(super) struct Described {
    pub group: String,
    pub kind: String,
    pub versions: Vec<String>,
    pub root: Node,
}

/// One field line and the lines indented under it.
#[derive(Debug)]
struct Line<'t> {
    number: usize,
    name: &'t str,
    required: bool,
    /// The type or `@Shape`, then the attributes.
    words: Vec<&'t str>,
    children: Vec<Line<'t>>,
}

struct Block<'t> {
    number: usize,
    head: Vec<&'t str>,
    body: Vec<Line<'t>>,
}

/// Every kind the text describes. An error names the line and what is wrong with it.
pub(super) fn parse(text: &str) -> Result<Vec<Described>, String> {
    let mut patterns: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut blocks: Vec<Block> = Vec::new();
    // The open lines at each depth: the block's body is depth 0.
    let mut open: Vec<Line> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let content = raw.trim_start_matches(' ');
        if content.trim().is_empty() || content.starts_with('#') {
            continue;
        }
        if content.contains('\t') {
            return Err(format!("line {number}: a tab (indent with spaces)"));
        }
        let indent = raw.len() - content.len();
        if indent == 0 {
            close(&mut open, 0, &mut blocks);
            if let Some(rest) = content.strip_prefix("pattern ") {
                let (name, regex) = rest
                    .split_once(" = ")
                    .ok_or_else(|| format!("line {number}: `pattern NAME = REGEX` expected"))?;
                if patterns.insert(name.trim(), (number, regex)).is_some() {
                    return Err(format!("line {number}: pattern {name} is defined twice"));
                }
                continue;
            }
            let head: Vec<&str> = content.split_whitespace().collect();
            if !matches!(head.first(), Some(&"kind" | &"shape")) {
                return Err(format!(
                    "line {number}: `pattern`, `kind` or `shape` expected, not {content:?}"
                ));
            }
            blocks.push(Block {
                number,
                head,
                body: Vec::new(),
            });
            continue;
        }
        if blocks.is_empty() {
            return Err(format!("line {number}: a field outside a kind or shape"));
        }
        if indent % 2 != 0 || indent / 2 > open.len() + 1 {
            return Err(format!(
                "line {number}: indented {indent} spaces; a field is indented two more than its parent"
            ));
        }
        close(&mut open, indent / 2 - 1, &mut blocks);
        let mut words = content.split_whitespace();
        let first = words.next().expect("the line is not blank");
        let (name, required) = match first.strip_suffix('!') {
            Some(n) => (n, true),
            None => (first, false),
        };
        open.push(Line {
            number,
            name,
            required,
            words: words.collect(),
            children: Vec::new(),
        });
    }
    close(&mut open, 0, &mut blocks);

    let mut expanded = BTreeMap::new();
    for name in patterns.keys() {
        expand(name, &patterns, &mut Vec::new(), &mut expanded)?;
    }
    let mut shapes: BTreeMap<&str, &Block> = BTreeMap::new();
    for b in blocks.iter().filter(|b| b.head[0] == "shape") {
        let name = b
            .head
            .get(1)
            .ok_or_else(|| format!("line {}: `shape NAME TYPE ...` expected", b.number))?;
        if shapes.insert(name, b).is_some() {
            return Err(format!("line {}: shape {name} is defined twice", b.number));
        }
    }
    let reader = Reader {
        patterns: &expanded,
        compiled: RefCell::default(),
        shapes: &shapes,
    };
    let mut described = Vec::new();
    for b in blocks.iter().filter(|b| b.head[0] == "kind") {
        let [_, group, kind, versions] = b.head[..] else {
            return Err(format!(
                "line {}: `kind GROUP KIND VERSION,...` expected",
                b.number
            ));
        };
        let mut root = Node {
            ty: Some(Type::Object),
            ..Node::default()
        };
        reader.children(&mut root, &b.body, &mut Vec::new())?;
        described.push(Described {
            group: group.to_string(),
            kind: kind.to_string(),
            versions: versions.split(',').map(str::to_string).collect(),
            root,
        });
    }
    for (name, b) in &shapes {
        // An unused shape is a mistake waiting to be read as a fact; building it also checks it.
        let used = blocks.iter().any(|other| {
            other.head.iter().any(|w| w.strip_prefix('@') == Some(name)) || uses(&other.body, name)
        });
        if !used {
            return Err(format!("line {}: shape {name} is never used", b.number));
        }
    }
    Ok(described)
}

/// Ends the open lines deeper than `depth`, each becoming a child of the one above it.
fn close<'t>(open: &mut Vec<Line<'t>>, depth: usize, blocks: &mut [Block<'t>]) {
    while open.len() > depth {
        let done = open.pop().expect("open is longer than depth");
        match open.last_mut() {
            Some(parent) => parent.children.push(done),
            // Field lines are only opened once a block exists (checked by the caller).
            None => {
                if let Some(b) = blocks.last_mut() {
                    b.body.push(done)
                }
            }
        }
    }
}

fn uses(lines: &[Line], shape: &str) -> bool {
    lines.iter().any(|l| {
        l.words.first().and_then(|w| w.strip_prefix('@')) == Some(shape) || uses(&l.children, shape)
    })
}

/// The text of pattern `name` with every `%OTHER%` replaced by that pattern's text.
fn expand(
    name: &str,
    patterns: &BTreeMap<&str, (usize, &str)>,
    stack: &mut Vec<String>,
    done: &mut BTreeMap<String, String>,
) -> Result<String, String> {
    if let Some(text) = done.get(name) {
        return Ok(text.clone());
    }
    let Some(&(number, raw)) = patterns.get(name) else {
        return Err(format!("no pattern named {name}"));
    };
    if stack.iter().any(|s| s == name) {
        return Err(format!("line {number}: pattern {name} refers to itself"));
    }
    stack.push(name.to_string());
    let mut out = String::new();
    let mut parts = raw.split('%');
    out.push_str(parts.next().unwrap_or_default());
    // Between two `%`: a name (odd parts); the text has no other use for `%`.
    let rest: Vec<&str> = parts.collect();
    if !rest.len().is_multiple_of(2) {
        return Err(format!("line {number}: an unpaired % in pattern {name}"));
    }
    for pair in rest.chunks(2) {
        let inner =
            expand(pair[0], patterns, stack, done).map_err(|e| format!("line {number}: {e}"))?;
        out.push_str(&inner);
        out.push_str(pair[1]);
    }
    stack.pop();
    done.insert(name.to_string(), out.clone());
    Ok(out)
}

struct Reader<'a, 't> {
    patterns: &'a BTreeMap<String, String>,
    /// Each pattern compiled once, however many fields use it: compiling was most of the
    /// description's reading time.
    compiled: RefCell<BTreeMap<String, Regex>>,
    shapes: &'a BTreeMap<&'t str, &'a Block<'t>>,
}

impl Reader<'_, '_> {
    /// The properties, element (`[]`) or value schema (`{}`) of `parent` from its lines.
    fn children(
        &self,
        parent: &mut Node,
        lines: &[Line],
        shapes: &mut Vec<String>,
    ) -> Result<(), String> {
        for l in lines {
            let node = self.node(l, shapes)?;
            let at = |what: &str| format!("line {}: {what}", l.number);
            match l.name {
                "[]" => {
                    if parent.ty != Some(Type::Array) || parent.items.is_some() || l.required {
                        return Err(at("`[]` is the one element of an array"));
                    }
                    parent.items = Some(Box::new(node));
                }
                "{}" => {
                    if parent.ty != Some(Type::Object) || parent.additional.is_some() || l.required
                    {
                        return Err(at("`{}` is the one value schema of an object"));
                    }
                    parent.additional = Some(Box::new(node));
                }
                name => {
                    if parent.ty.is_some_and(|t| t != Type::Object) && !parent.preserve_unknown {
                        return Err(at("fields belong under an object"));
                    }
                    if parent.properties.insert(name.to_string(), node).is_some() {
                        return Err(at(&format!("{name} is listed twice")));
                    }
                    if l.required {
                        parent.required.push(name.to_string());
                    }
                }
            }
        }
        Ok(())
    }

    fn node(&self, l: &Line, shapes: &mut Vec<String>) -> Result<Node, String> {
        let at = |what: String| format!("line {}: {what}", l.number);
        let Some((&first, attrs)) = l.words.split_first() else {
            return Err(at(format!("{} has no type", l.name)));
        };
        let mut n = if let Some(shape) = first.strip_prefix('@') {
            if !l.children.is_empty() {
                return Err(at(format!(
                    "{} is shape {shape}: its fields are the shape's",
                    l.name
                )));
            }
            self.shape(shape, shapes).map_err(at)?
        } else {
            let mut n = Node::default();
            match first {
                "any" => {}
                "int-or-string" => n.int_or_string = true,
                t => n.ty = Some(Type::parse(t).map_err(at)?),
            }
            n
        };
        for a in attrs {
            self.attribute(&mut n, a).map_err(at)?;
        }
        self.children(&mut n, &l.children, shapes)?;
        Ok(n)
    }

    fn shape(&self, name: &str, stack: &mut Vec<String>) -> Result<Node, String> {
        let b = self
            .shapes
            .get(name)
            .ok_or_else(|| format!("no shape named {name}"))?;
        if stack.iter().any(|s| s == name) {
            return Err(format!("shape {name} contains itself"));
        }
        stack.push(name.to_string());
        let line = Line {
            number: b.number,
            name,
            required: false,
            words: b.head[2..].to_vec(),
            children: Vec::new(),
        };
        let mut n = self.node(&line, stack)?;
        self.children(&mut n, &b.body, stack)?;
        stack.pop();
        Ok(n)
    }

    fn attribute(&self, n: &mut Node, a: &str) -> Result<(), String> {
        let (key, value) = a.split_once('=').unwrap_or((a, ""));
        let bounds = |v| bounds(a, v);
        let count = |v: Option<&str>| -> Result<Option<u64>, String> {
            v.map(|v| v.parse().map_err(|_| format!("{a}: {v:?} is not a count")))
                .transpose()
        };
        match (key, value) {
            ("nullable", "") => n.nullable = true,
            ("preserve", "") => n.preserve_unknown = true,
            ("embedded", "") => n.embedded_resource = true,
            ("fmt", f) if !f.is_empty() => n.format = Some(f.to_string()),
            ("len", v) => {
                let (lo, hi) = bounds(v)?;
                (n.min_length, n.max_length) = (count(lo)?, count(hi)?);
            }
            ("items", v) => {
                let (lo, hi) = bounds(v)?;
                (n.min_items, n.max_items) = (count(lo)?, count(hi)?);
            }
            ("props", v) => {
                let (lo, hi) = bounds(v)?;
                (n.min_properties, n.max_properties) = (count(lo)?, count(hi)?);
            }
            ("range", v) => {
                let (lo, hi) = bounds(v)?;
                let num = |v: Option<&str>| -> Result<Option<f64>, String> {
                    v.map(|v| v.parse().map_err(|_| format!("{a}: {v:?} is not a number")))
                        .transpose()
                };
                (n.minimum, n.maximum) = (num(lo)?, num(hi)?);
            }
            ("re", name) => {
                let text = self
                    .patterns
                    .get(name)
                    .ok_or_else(|| format!("no pattern named {name}"))?;
                let mut compiled = self.compiled.borrow_mut();
                let re = match compiled.get(name) {
                    Some(re) => re.clone(),
                    None => {
                        let re = Regex::new(text).map_err(|e| format!("pattern {name}: {e}"))?;
                        compiled.insert(name.to_string(), re.clone());
                        re
                    }
                };
                n.pattern = Some((text.clone(), re));
            }
            ("enum", v) if !v.is_empty() => {
                let values = v
                    .split('|')
                    .map(|e| match n.ty {
                        Some(Type::String) => Ok(Value::from(e)),
                        Some(Type::Integer | Type::Number) => serde_json::from_str(e)
                            .map_err(|_| format!("{a}: {e:?} is not a number")),
                        _ => Err(format!("{a}: an enum of strings or numbers only")),
                    })
                    .collect::<Result<_, _>>()?;
                n.enumeration = Some(values);
            }
            ("default", v) => {
                n.default =
                    Some(serde_json::from_str(v).map_err(|e| format!("{a}: not JSON: {e}"))?)
            }
            ("list", "atomic") => n.list_type = Some(ListType::Atomic),
            ("list", "set") => n.list_type = Some(ListType::Set),
            ("list", v) if v.starts_with("map(") && v.ends_with(')') => {
                let keys = v["map(".len()..v.len() - 1].split(',').map(str::to_string);
                n.list_type = Some(ListType::Map(keys.collect()));
            }
            ("map", "atomic" | "granular") => n.map_type = Some(value.to_string()),
            _ => return Err(format!("unknown attribute {a:?}")),
        }
        Ok(())
    }
}

/// `MIN..MAX` of attribute `a`, either side possibly empty (absent).
fn bounds<'v>(a: &str, v: &'v str) -> Result<(Option<&'v str>, Option<&'v str>), String> {
    let (lo, hi) = v
        .split_once("..")
        .ok_or_else(|| format!("{a}: MIN..MAX expected"))?;
    Ok((
        (!lo.is_empty()).then_some(lo),
        (!hi.is_empty()).then_some(hi),
    ))
}

#[cfg(test)]
mod tests;
