//! One declared CEL expression: compiled once, evaluated under bounds of our own.
//!
//! The `cel` evaluator has no cost limit and cannot be interrupted, so a hostile or careless
//! expression is bounded before it runs (docs/kinds.md, "Bounds"):
//! - at compile: the source length, the nesting of brackets and the depth of the tree (parser and
//!   evaluator recurse on them; parsing runs on a thread with a large stack), functions
//!   from an allow-list (no `lists.range`, no `replace`: what makes output larger than its input),
//!   the nesting of comprehensions (`map`, `filter`, `all`, `exists`, …);
//! - at evaluation: the object's depth and size, then an estimate of the work (the expression's
//!   nodes × the largest collection it can iterate, raised to its comprehension nesting + 1, as a
//!   comprehension's result grows by copying) against a budget, as Kubernetes' per-call cost limit
//!   does; a unit was 10–20 ns here, so the budget is ≈ 20 ms of one core at worst;
//! - on the result: a list of at most `max_entries` strings, each an IP, a CIDR or `first-last`
//!   range in the project's own grammar (`crate::address`).

use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use kube_cel::cel::common::ast::{EntryExpr, Expr as Ast, IdedExpr};
use kube_cel::cel::{Context, Program, Value};
use kube_cel::KubeCelExt;

use crate::address::{parse_entry, AddrSet, Entry, Family, Forms};

/// The bounds every declared expression runs under.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of expression source.
    pub max_source: usize,
    /// Brackets and parentheses open at once.
    pub max_nesting: usize,
    /// Depth of the expression tree: evaluation recurses once per level.
    pub max_depth: u32,
    /// Comprehensions inside comprehensions (`map` in a `map` is 2).
    pub max_loops: u32,
    /// Depth of the object's JSON.
    pub max_object_depth: usize,
    /// Values (scalars, lists, maps) in the object.
    pub max_object_nodes: usize,
    /// Estimated steps of one evaluation; Kubernetes' per-call CEL cost limit.
    pub max_cost: u128,
    /// Entries in the returned list.
    pub max_entries: usize,
}

pub const LIMITS: Limits = Limits {
    max_source: 4096,
    max_nesting: 32,
    max_depth: 100,
    max_loops: 3,
    max_object_depth: 64,
    max_object_nodes: 200_000,
    max_cost: 1_000_000,
    max_entries: 10_000,
};

/// The stack of the thread an expression is compiled on.
const COMPILE_STACK: usize = 256 << 20;

/// Functions and operators a declared expression may call. Each costs at most linear time in
/// its input and yields no more than it reads, so the cost estimate holds; `sort` and
/// `distinct`, superlinear, count as a loop level. Anything else is refused at load.
const ALLOWED: &[&str] = &[
    // Operators, as the parser names them.
    "_?_:_",
    "_&&_",
    "_||_",
    "!_",
    "-_",
    "_-_",
    "_+_",
    "_*_",
    "_/_",
    "_%_",
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_[_]",
    "@in",
    "@not_strictly_false",
    // Core CEL.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "string",
    "int",
    "uint",
    "max",
    "min",
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "value",
    "hasValue",
    "or",
    "orValue",
    // Kubernetes strings.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "split",
    "substring",
    "trim",
    "join",
    // Kubernetes lists.
    "isSorted",
    "sum",
    "slice",
    "sort",
    "flatten",
    "distinct",
    "first",
    "last",
    "reverse",
    // Kubernetes IP and CIDR.
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isIPv4",
    "isIPv6",
    "cidr",
    "isCIDR",
    "isCIDRv4",
    "isCIDRv6",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
];

/// Function namespaces of CEL and Kubernetes' libraries: `ip.isCanonical(…)` is one function.
const NAMESPACES: &[&str] = &[
    "lists", "strings", "sets", "ip", "optional", "math", "base64",
];

/// Superlinear in their input: each is charged as one more loop level.
const SUPERLINEAR: &[&str] = &["sort", "distinct"];

/// A compiled expression with what its cost estimate needs.
pub struct Expr {
    source: String,
    program: Program,
    /// Nodes of the expression tree.
    nodes: u64,
    /// Deepest nesting of comprehensions (and superlinear calls).
    loops: u32,
    /// Calls `split`: a string may become a list as long as the string.
    splits: bool,
    /// Calls `flatten`: a list may become as long as the object has values.
    flattens: bool,
    /// Calls of `+` outside loops: each may join two lists, so a list may be as long as the
    /// longest times (1 + this).
    joins: u64,
    /// Calls of `+` inside loops: what a loop builds and `flatten` joins.
    joins_in_loops: u64,
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expr").field(&self.source).finish()
    }
}

/// The addresses an expression named, by family.
#[derive(Debug, Clone, PartialEq)]
pub struct Addresses {
    pub v4: AddrSet,
    pub v6: AddrSet,
}

impl Addresses {
    pub fn empty() -> Self {
        Addresses {
            v4: AddrSet::empty(Family::V4),
            v6: AddrSet::empty(Family::V6),
        }
    }
    /// The sets of `entries`, by family.
    pub fn of(entries: &[(String, Entry)]) -> Addresses {
        let mut out = Addresses::empty();
        for (_, entry) in entries {
            match entry.family {
                Family::V4 => out.v4.insert(entry.range),
                Family::V6 => out.v6.insert(entry.range),
            }
        }
        out
    }

    pub fn difference(&self, other: &Addresses) -> Addresses {
        Addresses {
            v4: self.v4.difference(&other.v4),
            v6: self.v6.difference(&other.v6),
        }
    }
}

/// Why an object's addresses could not be read: the object is not judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// The declaration's field: `addresses` or `excluded`.
    pub field: &'static str,
    pub expression: String,
    pub problem: String,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.field, self.expression, self.problem)
    }
}

impl std::error::Error for EvalError {}

/// What the cost estimate reads of an object, measured in one walk.
#[derive(Debug, Clone, Copy, Default)]
pub struct ObjectStats {
    nodes: usize,
    /// Longest list or map.
    longest: usize,
    /// Longest string, in bytes.
    longest_string: usize,
}

impl ObjectStats {
    /// Measures `object`, refusing one deeper or larger than the limits.
    pub fn of(object: &serde_json::Value, limits: &Limits) -> Result<ObjectStats, String> {
        let mut stats = ObjectStats::default();
        // Iterative, so depth is checked before it costs stack.
        let mut stack = vec![(object, 1usize)];
        while let Some((v, depth)) = stack.pop() {
            if depth > limits.max_object_depth {
                return Err(format!(
                    "the object is nested deeper than {} levels",
                    limits.max_object_depth
                ));
            }
            stats.nodes += 1;
            if stats.nodes > limits.max_object_nodes {
                return Err(format!(
                    "the object has more than {} values",
                    limits.max_object_nodes
                ));
            }
            match v {
                serde_json::Value::Array(items) => {
                    stats.longest = stats.longest.max(items.len());
                    stack.extend(items.iter().map(|i| (i, depth + 1)));
                }
                serde_json::Value::Object(map) => {
                    stats.longest = stats.longest.max(map.len());
                    stack.extend(map.values().map(|i| (i, depth + 1)));
                }
                serde_json::Value::String(s) => {
                    stats.longest_string = stats.longest_string.max(s.len());
                }
                _ => {}
            }
        }
        Ok(stats)
    }
}

/// The object as CEL sees it, converted once for every expression of its kind.
pub struct CelObject {
    value: Value,
    stats: ObjectStats,
}

impl CelObject {
    pub fn new(object: &serde_json::Value, limits: &Limits) -> Result<CelObject, String> {
        let stats = ObjectStats::of(object, limits)?;
        Ok(CelObject {
            value: to_cel(object),
            stats,
        })
    }
}

/// JSON as the API server hands it to CEL: an integer is an `int` (a generic conversion makes a
/// non-negative one a `uint`, and `uint + int` has no overload), a number with a fraction or
/// beyond `int` a `double`. Recursion is bounded by `ObjectStats::of`, which runs first.
fn to_cel(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(to_cel).collect()))
        }
        serde_json::Value::Object(map) => {
            let map: HashMap<String, Value> =
                map.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            Value::from(map)
        }
    }
}

impl Expr {
    /// Compiles `source`, refusing what the bounds forbid. The error is the problem alone.
    pub fn compile(source: &str) -> Result<Expr, String> {
        Expr::compile_with(source, &LIMITS)
    }

    pub(crate) fn compile_with(source: &str, limits: &Limits) -> Result<Expr, String> {
        if source.trim().is_empty() {
            return Err("the expression is empty".to_owned());
        }
        if source.len() > limits.max_source {
            return Err(format!(
                "the expression is longer than {} bytes",
                limits.max_source
            ));
        }
        let nesting = bracket_nesting(source);
        if nesting > limits.max_nesting {
            return Err(format!(
                "brackets nest {nesting} deep, more than {}",
                limits.max_nesting
            ));
        }
        // The parser recurses once per operator of a chain (`a.b.c…`, `!!…`): a chain as long
        // as the source admits overflows a default thread's stack, which aborts the process.
        // Compiling on a thread of its own with a large stack (reserved, not committed) keeps
        // that away; the depth found is then bounded so evaluation, on any thread, stays shallow.
        let src = source.to_owned();
        let max_depth = limits.max_depth;
        let compiled = std::thread::Builder::new()
            .name("cel-compile".to_owned())
            .stack_size(COMPILE_STACK)
            .spawn(move || -> Result<(Program, Shape), String> {
                let program = Program::compile(&src)
                    .map_err(|e| format!("does not compile: {}", one_line(&e.to_string())))?;
                let mut shape = Shape::default();
                shape.walk(program.expression(), 0, 1)?;
                // Refused here, so a deep tree is also dropped (recursively) on this stack.
                if shape.depth > max_depth {
                    return Err(format!(
                        "the expression nests {} deep, more than {max_depth}",
                        shape.depth
                    ));
                }
                Ok((program, shape))
            })
            .map_err(|e| format!("cannot compile: {e}"))?
            .join()
            .map_err(|_| "the expression does not compile".to_owned())?;
        let (program, shape) = compiled?;
        if shape.loops > limits.max_loops {
            return Err(format!(
                "comprehensions nest {} deep, more than {}",
                shape.loops, limits.max_loops
            ));
        }
        Ok(Expr {
            source: source.to_owned(),
            program,
            nodes: shape.nodes,
            loops: shape.loops,
            splits: shape.calls("split"),
            flattens: shape.calls("flatten"),
            joins: shape.joins,
            joins_in_loops: shape.joins_in_loops,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The estimated steps of evaluating this expression over an object measured as `stats`.
    fn cost(&self, stats: &ObjectStats) -> u128 {
        // The longest list the expression can iterate: the object's, or one it builds by joining
        // lists (`+` outside a loop), splitting a string or flattening what a loop built.
        let joins = u128::from(self.joins) + 1;
        let mut longest = (stats.longest.max(1) as u128).saturating_mul(joins);
        if self.splits {
            longest = longest.max(stats.longest_string as u128);
        }
        if self.flattens {
            let built = (stats.nodes as u128).saturating_mul(u128::from(self.joins_in_loops) + 1);
            longest = longest.max(built);
        }
        // A comprehension builds its list by `accu + [x]`, which copies the list so far: one
        // `map` over n items costs n² steps (measured: 10,000 items 9 s, 1,000 items 0.1 s), so
        // each level of loops multiplies by n and the innermost one by n again. A literal list
        // is no longer than the expression. Without loops, each join copies what it joins.
        let steps = match self.loops {
            0 => longest.saturating_mul(joins),
            loops => longest
                .max(u128::from(self.nodes))
                .saturating_pow(loops + 1),
        };
        steps.saturating_mul(u128::from(self.nodes))
    }

    /// Evaluates the expression over `object`; `field` names it in errors.
    pub(crate) fn eval(
        &self,
        field: &'static str,
        object: &CelObject,
        limits: &Limits,
    ) -> Result<Addresses, EvalError> {
        Ok(Addresses::of(&self.eval_entries(field, object, limits)?))
    }

    /// As `eval`, each entry of the result kept with its text, in the order returned: where a
    /// finding about one entry says what was written.
    pub(crate) fn eval_entries(
        &self,
        field: &'static str,
        object: &CelObject,
        limits: &Limits,
    ) -> Result<Vec<(String, Entry)>, EvalError> {
        let error = |problem: String| EvalError {
            field,
            expression: self.source.clone(),
            problem,
        };
        let cost = self.cost(&object.stats);
        if cost > limits.max_cost {
            return Err(error(format!(
                "estimated cost {cost} over this object exceeds the limit {}",
                limits.max_cost
            )));
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            BASE.with(|base| {
                let mut ctx = base.new_inner_scope();
                ctx.add_variable_from_value("object", object.value.clone());
                self.program.execute(&ctx)
            })
        }))
        .map_err(|_| error("evaluation failed".to_owned()))?
        .map_err(|e| error(format!("evaluation failed: {}", short(&e.to_string()))))?;
        read_entries(&result, limits).map_err(error)
    }
}

thread_local! {
    /// The functions every evaluation sees, registered once per thread.
    static BASE: Context<'static> = Context::default().with_all();
}

/// The result as address entries: a list of strings, each an IP, a CIDR or a `first-last` range.
fn read_entries(result: &Value, limits: &Limits) -> Result<Vec<(String, Entry)>, String> {
    let Value::List(items) = result else {
        return Err(format!(
            "returned {}, expected a list of strings",
            type_name(result)
        ));
    };
    if items.len() > limits.max_entries {
        return Err(format!(
            "returned {} entries, more than {}",
            items.len(),
            limits.max_entries
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(text) = item else {
            let hint = match item {
                Value::Opaque(_) => " (convert it with string())",
                _ => "",
            };
            return Err(format!(
                "[{i}]: returned {}, expected a string{hint}",
                type_name(item)
            ));
        };
        let entry = parse_entry(text, Forms::ALL)
            .map_err(|e| format!("[{i}]: Invalid value: {:?}: {e}", short(text)))?
            .value;
        out.push((text.to_string(), entry));
    }
    Ok(out)
}

fn type_name(v: &Value) -> String {
    match v {
        // What `ip()`, `cidr()` and their methods return.
        Value::Opaque(_) => "an ip or cidr value".to_owned(),
        v => v.type_of().to_string(),
    }
}

/// The deepest nesting of `(`, `[` and `{` outside string literals.
fn bracket_nesting(source: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in source.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// What a walk of the expression tree finds.
#[derive(Default)]
struct Shape {
    nodes: u64,
    depth: u32,
    loops: u32,
    joins: u64,
    joins_in_loops: u64,
    called: Vec<String>,
}

impl Shape {
    fn calls(&self, name: &str) -> bool {
        self.called.iter().any(|c| c == name)
    }

    /// Counts nodes and loop nesting; refuses calls off the allow-list and forms the evaluator
    /// cannot run (struct literals).
    fn walk(&mut self, e: &IdedExpr, loops: u32, depth: u32) -> Result<(), String> {
        self.nodes += 1;
        self.depth = self.depth.max(depth);
        let d = depth + 1;
        self.loops = self.loops.max(loops);
        match &e.expr {
            Ast::Call(call) => {
                // `lists.range(n)` parses as `range` called on the identifier `lists`.
                let namespace = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Ast::Ident(ns)) if NAMESPACES.contains(&ns.as_str()) => Some(ns),
                    _ => None,
                };
                let name = match namespace {
                    Some(ns) => format!("{ns}.{}", call.func_name),
                    None => call.func_name.clone(),
                };
                if !ALLOWED.contains(&name.as_str()) {
                    return Err(format!("function {name} is not allowed in a declaration"));
                }
                if name == "_+_" {
                    match loops {
                        0 => self.joins += 1,
                        _ => self.joins_in_loops += 1,
                    }
                }
                let inner = loops + u32::from(SUPERLINEAR.contains(&name.as_str()));
                self.loops = self.loops.max(inner);
                if !self.calls(&name) {
                    self.called.push(name);
                }
                if let (Some(t), None) = (&call.target, namespace) {
                    self.walk(t, inner, d)?;
                }
                for a in &call.args {
                    self.walk(a, inner, d)?;
                }
            }
            Ast::Comprehension(c) => {
                self.walk(&c.iter_range, loops, d)?;
                self.walk(&c.accu_init, loops, d)?;
                self.walk(&c.loop_cond, loops + 1, d)?;
                self.walk(&c.loop_step, loops + 1, d)?;
                self.walk(&c.result, loops, d)?;
            }
            Ast::List(l) => {
                for x in &l.elements {
                    self.walk(x, loops, d)?;
                }
            }
            Ast::Map(m) => {
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(kv) => {
                            self.walk(&kv.key, loops, d)?;
                            self.walk(&kv.value, loops, d)?;
                        }
                        EntryExpr::StructField(f) => self.walk(&f.value, loops, d)?,
                    }
                }
            }
            Ast::Select(s) => self.walk(&s.operand, loops, d)?,
            Ast::Ident(_) | Ast::Literal(_) => {}
            Ast::Struct(_) => return Err("message literals are not supported".to_owned()),
            Ast::Unspecified => return Err("the expression is incomplete".to_owned()),
        }
        Ok(())
    }
}

/// A parse error's first line, without the parser's `ERROR: <input>:` (the source is quoted
/// with a caret on the lines after it; the position says as much).
fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or_default();
    short(first.strip_prefix("ERROR: <input>:").unwrap_or(first))
}

/// At most 200 characters: an error must not quote a whole object back.
fn short(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
