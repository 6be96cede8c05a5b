//! The house's layers only point down: a module may name a module of a lower rank
//! through `crate::`, never one of its own rank or above. A new upward import fails here with
//! its file and line, before it turns into a cycle that is hard to take apart again.
//!
//! The layers are three crates (docs/layout.md): 0-4 `ipam-guard-core` (crates/core), 5-8
//! `ipam-guard-server` (crates/server), 9 `ipam-guard` (src). A crate cannot name one above it:
//! the compiler keeps those apart. What is left for this test is the order inside each crate.

use std::fs;
use std::path::{Path, PathBuf};

/// A table of top-level modules by rank, lowest first. `main.rs` and `lib.rs` may use anything.
type Ranks = &'static [(&'static str, u8)];

/// The modules of `ipam-guard-core`. `rule_id` sits below `catalogue` and `field` because both
/// are keyed by it; `manifests` (files → objects) reads `model` and `schema` and is read by
/// `cluster` and `cli`.
const CORE_RANKS: Ranks = &[
    ("address", 0),
    ("kinds", 0),
    ("kube_version", 0),
    ("par", 0),
    ("rule_id", 0),
    ("catalogue", 1),
    ("declared", 1),
    ("field", 1),
    ("schema", 1),
    ("model", 2),
    ("index", 3),
    ("manifests", 4),
    ("rules", 4),
];

/// The modules of `ipam-guard-server`. Each names the core's modules through the `pub use` in
/// its lib.rs; those are another crate, below all of these, and not in this table. `judge`
/// (schema → mutate → validate for `check`, `audit`, `usage` and the periodic audit) reads a
/// live cluster, so it sits above `cluster`, beside `admission` (neither uses the other), below
/// `server` (the periodic audit).
const SERVER_RANKS: Ranks = &[
    ("cluster", 5),
    ("admission", 6),
    ("judge", 6),
    ("server", 7),
    ("decider", 8),
];

/// The modules of `ipam-guard`, the commands: every module they name through `crate::` is
/// another crate's, re-exported in src/lib.rs.
const RANKS: Ranks = &[("cli", 9)];

/// Each crate's source folder (from the repository root) with its table.
const TREES: &[(&str, Ranks)] = &[
    ("crates/core/src", CORE_RANKS),
    ("crates/server/src", SERVER_RANKS),
    ("src", RANKS),
];

fn rank(ranks: Ranks, module: &str) -> Option<u8> {
    ranks.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// One `crate::<module>` reference: the line it is on and the module it names.
#[derive(Debug, PartialEq)]
struct Reference {
    line: usize,
    module: String,
}

/// Every top-level module `text` names through `crate::`, including each item of a
/// `use crate::{a, b::c}` group. Comments are skipped (docs may mention higher modules).
fn references(text: &str) -> Vec<Reference> {
    let mut code = String::with_capacity(text.len());
    for line in text.lines() {
        code.push_str(line.find("//").map_or(line, |i| &line[..i]));
        code.push('\n');
    }
    let line_at = |pos: usize| code[..pos].matches('\n').count() + 1;
    let ident_at = |pos: usize| -> &str {
        let rest = &code[pos..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        &rest[..end]
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("crate::") {
        let start = from + i;
        from = start + "crate::".len();
        // `ipam_guard::`/`my_crate::` are other crates, not this one.
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if code[from..].starts_with('{') {
            // A group: the first identifier of each item at depth one.
            let mut depth = 0;
            let mut item_start = true;
            let mut pos = from;
            for (off, c) in code[from..].char_indices() {
                pos = from + off;
                match c {
                    '{' => {
                        depth += 1;
                        item_start = depth == 1;
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && (c.is_ascii_alphabetic() || c == '_') => {
                        let module = ident_at(pos);
                        found.push(Reference {
                            line: line_at(pos),
                            module: module.to_string(),
                        });
                        item_start = false;
                    }
                    _ => {}
                }
            }
            from = pos;
        } else {
            let module = ident_at(from);
            if !module.is_empty() {
                found.push(Reference {
                    line: line_at(start),
                    module: module.to_string(),
                });
            }
        }
    }
    found
}

/// The references in `text` (a file of module `module`, ranked in `ranks`) that run sideways or
/// up.
fn violations(ranks: Ranks, module: &str, text: &str) -> Vec<(usize, String)> {
    let Some(own) = rank(ranks, module) else {
        return Vec::new();
    };
    references(text)
        .into_iter()
        .filter(|r| r.module != module && rank(ranks, &r.module).is_some_and(|their| their >= own))
        .map(|r| (r.line, r.module))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn layers_only_point_down() {
    let mut problems = Vec::new();
    let mut unranked = Vec::new();
    for (tree, ranks) in TREES {
        layers_of(tree, ranks, &mut problems, &mut unranked);
    }
    assert!(
        unranked.is_empty(),
        "modules missing from the rank tables in tests/layers.rs: {unranked:?}"
    );
    assert!(
        problems.is_empty(),
        "imports that run up or sideways:\n{}",
        problems.join("\n")
    );
}

/// The upward and sideways imports of the crate whose source is `tree`, and its files whose
/// module `ranks` leaves out.
fn layers_of(tree: &str, ranks: Ranks, problems: &mut Vec<String>, unranked: &mut Vec<String>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(tree);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs");
        if module == "main" || module == "lib" {
            continue;
        }
        if rank(ranks, module).is_none() {
            unranked.push(format!("{tree}/{}", rel.display()));
            continue;
        }
        let text = fs::read_to_string(file).unwrap();
        for (line, target) in violations(ranks, module, &text) {
            problems.push(format!(
                "{tree}/{}:{line}: `{module}` (rank {}) uses `{target}` (rank {})",
                rel.display(),
                rank(ranks, module).unwrap(),
                rank(ranks, &target).unwrap()
            ));
        }
    }
}

#[test]
fn an_upward_import_is_caught_with_its_line() {
    let text = "//! Docs may name crate::cli.\n\
                use crate::address::Ip;\n\
                use crate::{kinds::Kind,\n    server::Server};\n\
                fn f() { crate::decider::start(); ipam_guard::cli::run(); }\n";
    assert_eq!(
        violations(SERVER_RANKS, "admission", text),
        vec![(4, "server".to_string()), (5, "decider".to_string())]
    );
    assert_eq!(
        violations(
            CORE_RANKS,
            "model",
            "use crate::rules::mutate::default_pool_group;\n"
        ),
        vec![(1, "rules".to_string())]
    );
    assert_eq!(
        violations(CORE_RANKS, "rules", "use crate::manifests::x;\n"),
        vec![(1, "manifests".to_string())],
        "the same rank is not below"
    );
    assert_eq!(
        violations(SERVER_RANKS, "admission", "use crate::judge::x;\n"),
        vec![(1, "judge".to_string())],
        "the same rank is not below"
    );
    assert!(violations(RANKS, "cli", text).is_empty());
    assert!(
        violations(SERVER_RANKS, "cluster", "use crate::rules::Options;\n").is_empty(),
        "the core's modules are below every module of the server crate"
    );
}

// === Import circles between files ===
//
// Ranks keep top-level modules apart; inside one module, files could still import each other in
// a circle (a.rs uses b.rs which uses a.rs), which makes neither readable alone and neither
// movable without the other. Every `crate::`, `super::`, `self::` and child-module path is
// resolved to the file that defines what it names (following `pub use` re-exports), and the
// file graph must have no strongly connected component of more than one file.
//
// A parent's own `pub use child::X` lines are its facade, not a use, so they are no edge. Edges
// between a module file and the files of its own submodules are left out as well: a child using
// the types its parent declares while the parent calls into the child is how a module directory
// is built, not two files that cannot be read apart. Circles among siblings, cousins and across
// modules, of any length, are what this catches; none is allowed.

use std::collections::{BTreeMap, BTreeSet};

/// A module path from the crate root (`["cluster", "trust"]`).
type ModPath = Vec<String>;

/// A path found in a file: its byte offset, its line, and the absolute path it names.
type Found = (usize, usize, Vec<String>);

/// The text with line comments blanked (same length per line, so offsets keep their lines).
fn strip_comments(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    for line in text.lines() {
        match line.find("//") {
            Some(i) => {
                code.push_str(&line[..i]);
                code.extend(std::iter::repeat_n(' ', line.len() - i));
            }
            None => code.push_str(line),
        }
        code.push('\n');
    }
    code
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident_at(code: &str, pos: usize) -> &str {
    let rest = &code[pos..];
    let end = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
    &rest[..end]
}

fn skip_ws(code: &str, mut pos: usize) -> usize {
    while code[pos..].starts_with(char::is_whitespace) {
        pos += code[pos..].chars().next().unwrap().len_utf8();
    }
    pos
}

/// The paths a path expression starting at `pos` names, `{}` groups expanded (`a::{b, c::d}` →
/// `a::b`, `a::c::d`); `self` inside a group names the group's prefix. Returns where it ended.
fn expand_path(code: &str, pos: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    let mut pos = pos;
    loop {
        pos = skip_ws(code, pos);
        if code[pos..].starts_with('{') {
            pos += 1;
            loop {
                pos = skip_ws(code, pos);
                if code[pos..].starts_with('}') {
                    return pos + 1;
                }
                if code[pos..].starts_with(',') {
                    pos += 1;
                    continue;
                }
                if code[pos..].starts_with("self")
                    && !is_ident_char(code[pos + 4..].chars().next().unwrap_or(' '))
                {
                    out.push(segs.clone());
                    pos += 4;
                } else {
                    let before = pos;
                    pos = expand_path(code, pos, &segs, out);
                    if pos == before {
                        pos += code[pos..].chars().next().map_or(1, char::len_utf8);
                    }
                }
                // Skip an `as name` and anything else up to the item's end.
                while pos < code.len() && !code[pos..].starts_with([',', '}']) {
                    if code[pos..].starts_with('{') {
                        break;
                    }
                    pos += code[pos..].chars().next().unwrap().len_utf8();
                }
            }
        }
        if code[pos..].starts_with('*') {
            out.push(segs);
            return pos + 1;
        }
        let id = ident_at(code, pos);
        if id.is_empty() {
            if segs.len() > prefix.len() {
                out.push(segs);
            }
            return pos;
        }
        segs.push(id.to_string());
        pos += id.len();
        let after = skip_ws(code, pos);
        if code[after..].starts_with("::") && !code[after + 2..].starts_with('<') {
            pos = after + 2;
        } else {
            out.push(segs);
            return pos;
        }
    }
}

/// Byte ranges of inline `mod name { … }` blocks, with their names.
fn inline_mods(code: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("mod ") {
        let start = from + i;
        from = start + 4;
        if start > 0 && is_ident_char(code[..start].chars().next_back().unwrap()) {
            continue;
        }
        let name = ident_at(code, from);
        let after = skip_ws(code, from + name.len());
        if name.is_empty() || !code[after..].starts_with('{') {
            continue;
        }
        let mut depth = 0;
        for (off, c) in code[after..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        found.push((after, after + off, name.to_string()));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// Byte ranges of `pub use …;` / `pub(…) use …;` statements: re-exports.
fn reexport_spans(code: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("pub") {
        let start = from + i;
        from = start + 3;
        if start > 0 && is_ident_char(code[..start].chars().next_back().unwrap()) {
            continue;
        }
        let mut pos = from;
        if code[pos..].starts_with('(') {
            match code[pos..].find(')') {
                Some(j) => pos += j + 1,
                None => continue,
            }
        }
        pos = skip_ws(code, pos);
        if !code[pos..].starts_with("use ") {
            continue;
        }
        if let Some(j) = code[pos..].find(';') {
            spans.push((start, pos + j));
        }
    }
    spans
}

/// One file's module path, its declared child modules, its references and its re-exports.
struct FileInfo {
    module: ModPath,
    /// (line, absolute path named)
    refs: Vec<(usize, Vec<String>)>,
    /// name → absolute path it re-exports
    reexports: BTreeMap<String, Vec<String>>,
}

/// The module path a file under `src` has by its place (`a/mod.rs`, `a.rs` → `a`).
fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// Files declared with `#[path = "f.rs"] mod name;`: their module is the declarer's `name`.
fn path_attributes(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("#[path = \"") {
        let start = from + i + "#[path = \"".len();
        from = start;
        let Some(end) = code[start..].find('"') else {
            break;
        };
        let file = code[start..start + end].to_string();
        let rest = &code[start + end..];
        if let Some(m) = rest.find("mod ") {
            let name = ident_at(rest, m + 4);
            found.push((file, name.to_string()));
        }
    }
    found
}

/// Resolves `path` as written inside module `here` (file module plus inline modules) to an
/// absolute path, or None for paths into other crates.
fn absolute(path: &[String], here: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut at: Vec<String>;
    let mut rest = path;
    match first.as_str() {
        "crate" => {
            at = Vec::new();
            rest = &rest[1..];
        }
        "self" => {
            at = here.to_vec();
            rest = &rest[1..];
        }
        "super" => {
            at = here.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        name if children.contains(name) => at = here.to_vec(),
        _ => return None,
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// Every path the code names from `start` tokens, with the line it is on and the module it is
/// written in (inline modules included).
fn scan(
    code: &str,
    file_module: &[String],
    children: &BTreeSet<String>,
) -> (Vec<Found>, Vec<(usize, Vec<String>)>) {
    let inline = inline_mods(code);
    let here_at = |pos: usize| {
        let mut here = file_module.to_vec();
        let mut enclosing: Vec<&(usize, usize, String)> = inline
            .iter()
            .filter(|(s, e, _)| *s < pos && pos < *e)
            .collect();
        enclosing.sort_by_key(|(s, _, _)| *s);
        here.extend(enclosing.iter().map(|(_, _, n)| n.clone()));
        here
    };
    let line_at = |pos: usize| code[..pos].matches('\n').count() + 1;
    let mut refs = Vec::new();
    let mut pos = 0;
    while pos < code.len() {
        let c = code[pos..].chars().next().unwrap();
        if !is_ident_char(c) {
            pos += c.len_utf8();
            continue;
        }
        let id = ident_at(code, pos);
        let before = code[..pos].trim_end();
        let led = ["crate", "super", "self"].contains(&id) || children.contains(id);
        if led && code[pos + id.len()..].starts_with("::") && !before.ends_with("::") {
            let mut paths = Vec::new();
            let end = expand_path(code, pos, &[], &mut paths);
            let here = here_at(pos);
            for p in paths {
                if let Some(abs) = absolute(&p, &here, children) {
                    refs.push((pos, line_at(pos), abs));
                }
            }
            pos = end.max(pos + id.len());
        } else {
            pos += id.len();
        }
    }
    let mut reexports = Vec::new();
    for (s, e) in reexport_spans(code) {
        let use_at = s + code[s..].find("use ").unwrap() + 4;
        let mut paths = Vec::new();
        expand_path(code, use_at, &[], &mut paths);
        for p in paths {
            if let Some(abs) = absolute(&p, &here_at(s), children) {
                reexports.push((e, abs));
            }
        }
    }
    let spans = reexport_spans(code);
    let refs = refs
        .into_iter()
        .filter(|(p, _, _)| !spans.iter().any(|(s, e)| s <= p && p <= e))
        .collect();
    (refs, reexports)
}

/// Child modules declared in the file (`mod x;`, `pub mod x;`, `mod x { … }`).
fn children_of(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("mod ") {
        let start = from + i;
        from = start + 4;
        if start > 0 && is_ident_char(code[..start].chars().next_back().unwrap()) {
            continue;
        }
        let name = ident_at(code, from);
        let after = skip_ws(code, from + name.len());
        if !name.is_empty() && code[after..].starts_with([';', '{']) {
            out.insert(name.to_string());
        }
    }
    out
}

/// The files of `src` as a graph: for each file (path relative to `src`), the files it uses and
/// the first line it uses each on.
fn file_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut texts = BTreeMap::new();
    let mut modules: BTreeMap<String, ModPath> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let name = rel.to_string_lossy().replace('\\', "/");
        let code = strip_comments(&fs::read_to_string(file).unwrap());
        modules.insert(name.clone(), module_of(rel));
        texts.insert(name, code);
    }
    // `#[path]` files take the module their declarer gives them.
    for (name, code) in &texts {
        let dir = Path::new(name).parent().unwrap_or(Path::new(""));
        for (file, child) in path_attributes(code) {
            let target = dir.join(&file).to_string_lossy().replace('\\', "/");
            let mut m = modules[name].clone();
            m.push(child);
            modules.insert(target, m);
        }
    }
    let by_module: BTreeMap<ModPath, String> = modules
        .iter()
        .map(|(f, m)| (m.clone(), f.clone()))
        .collect();
    let mut infos = BTreeMap::new();
    for (name, code) in &texts {
        let module = modules[name].clone();
        let (refs, reexports) = scan(code, &module, &children_of(code));
        let info = FileInfo {
            refs: refs.into_iter().map(|(_, line, p)| (line, p)).collect(),
            reexports: reexports
                .into_iter()
                .filter_map(|(_, p)| Some((p.last()?.clone(), p)))
                .collect(),
            module,
        };
        infos.insert(name.clone(), info);
    }
    // The file that defines what `path` names: the longest file-module prefix, then through
    // that file's re-exports of the next segment.
    let resolve = |path: &[String]| -> Option<String> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let k = (1..=path.len())
                .rev()
                .find(|k| by_module.contains_key(&path[..*k]))?;
            let file = &by_module[&path[..k]];
            let next = path.get(k);
            match next.and_then(|n| infos[file].reexports.get(n)) {
                Some(target) if target.as_slice() != path.as_slice() => {
                    let mut p = target.clone();
                    p.extend(path[k + 1..].iter().cloned());
                    path = p;
                }
                _ => return Some(file.clone()),
            }
        }
        None
    };
    let below = |a: &ModPath, b: &ModPath| a.len() < b.len() && b.starts_with(a);
    let mut graph = BTreeMap::new();
    for (name, info) in &infos {
        let mut edges: BTreeMap<String, usize> = BTreeMap::new();
        for (line, path) in &info.refs {
            let Some(target) = resolve(path) else {
                continue;
            };
            let theirs = &modules[&target];
            if &target == name
                || theirs.is_empty()
                || below(&info.module, theirs)
                || below(theirs, &info.module)
            {
                continue;
            }
            edges.entry(target).or_insert(*line);
        }
        graph.insert(name.clone(), edges);
    }
    graph
}

/// Strongly connected components of more than one node (Tarjan), each sorted.
fn circles(graph: &BTreeMap<String, BTreeMap<String, usize>>) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<String, BTreeMap<String, usize>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            let graph = self.graph;
            for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out.sort();
    t.out
}

/// A circle as text: each file with the file it uses next in the circle and the line; `tree` is
/// the crate's source folder the file names are relative to.
fn describe(
    tree: &str,
    circle: &[String],
    graph: &BTreeMap<String, BTreeMap<String, usize>>,
) -> String {
    let mut lines = Vec::new();
    for a in circle {
        for b in circle {
            if let Some(line) = graph[a].get(b) {
                lines.push(format!("  {tree}/{a}:{line} uses {tree}/{b}"));
            }
        }
    }
    format!("[{}]\n{}", circle.join(", "), lines.join("\n"))
}

/// Each crate on its own: a path into the other crate names no file of this one, and the two
/// cannot form a circle (the core does not depend on the root crate).
#[test]
fn no_import_circles_between_files() {
    let mut found = Vec::new();
    for (tree, _) in TREES {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(tree);
        let graph = file_graph(&src);
        found.extend(
            circles(&graph)
                .into_iter()
                .map(|c| describe(tree, &c, &graph)),
        );
    }
    assert!(
        found.is_empty(),
        "files that import each other (move the shared piece to where it belongs):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_circle_of_any_length_is_found_with_its_files() {
    let edge = |a: &str, b: &str| (a.to_string(), BTreeMap::from([(b.to_string(), 1)]));
    let graph: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::from([
        edge("a.rs", "b.rs"),
        edge("b.rs", "a.rs"),
        edge("c/x.rs", "c/y.rs"),
        edge("c/y.rs", "c/z.rs"),
        edge("c/z.rs", "c/x.rs"),
        edge("d.rs", "a.rs"),
    ]);
    assert_eq!(
        circles(&graph),
        vec![
            vec!["a.rs".to_string(), "b.rs".to_string()],
            vec![
                "c/x.rs".to_string(),
                "c/y.rs".to_string(),
                "c/z.rs".to_string()
            ],
        ]
    );
}

#[test]
fn paths_resolve_through_super_groups_and_children() {
    let code = strip_comments(
        "mod child;\nuse super::{a::B, c::{self, D}};\nuse crate::x::y::*; // crate::no\n\
         fn f() { child::g(); other::child::h(); }\n",
    );
    let here = vec!["m".to_string(), "n".to_string()];
    let (refs, _) = scan(&code, &here, &children_of(&code));
    let paths: Vec<String> = refs.iter().map(|(_, _, p)| p.join("::")).collect();
    assert_eq!(
        paths,
        ["m::a::B", "m::c", "m::c::D", "x::y", "m::n::child::g"],
        "{refs:?}"
    );
}

// === Lines of code per file ===
//
// A file past 900 lines of code holds more than one idea. A line of code is any line that is
// neither blank nor a `//` comment (docs included in the comments); inline `#[cfg(test)]`
// modules count like any other code in the file, so moving tests into a file of their own is
// the way under the limit, not a way around it.

const MAX_CODE_LINES: usize = 900;

fn code_lines(text: &str) -> usize {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

/// Every `.rs` file under `dir` (a folder of the repository) past the limit, with its count.
fn over_the_limit(dir: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join(dir), &mut files);
    files.sort();
    files
        .iter()
        .filter_map(|f| {
            let n = code_lines(&fs::read_to_string(f).unwrap());
            (n > MAX_CODE_LINES).then(|| {
                format!(
                    "{}: {n} lines of code",
                    f.strip_prefix(root).unwrap().display()
                )
            })
        })
        .collect()
}

#[test]
fn no_source_file_over_900_lines_of_code() {
    let over: Vec<String> = TREES
        .iter()
        .flat_map(|(tree, _)| over_the_limit(tree))
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_CODE_LINES} lines of code (split them by idea):\n{}",
        over.join("\n")
    );
}

/// Tests too: a test file is read by whoever changes what it tests. Parts of one test target go
/// in a folder named after it (`crates/e2e/tests/e2e_gate.rs` with
/// `#[path = "e2e_gate/trial.rs"] mod trial;`), shared helpers in `tests/<name>/mod.rs`; both are
/// counted here file by file, in the root package's tests/ and in the e2e package's
/// (crates/e2e/tests).
#[test]
fn no_test_file_over_900_lines_of_code() {
    let mut over = over_the_limit("tests");
    over.extend(over_the_limit("crates/e2e/tests"));
    assert!(
        over.is_empty(),
        "test files over {MAX_CODE_LINES} lines of code (split them by idea):\n{}",
        over.join("\n")
    );
}

#[test]
fn code_lines_leave_out_blanks_and_comments() {
    assert_eq!(
        code_lines("//! doc\n\nfn f() {\n    // why\n    g(); // trailing\n}\n"),
        3
    );
}
