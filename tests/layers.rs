//! The house's layers only point down (issue 11): a module may name a module of a lower rank
//! through `crate::`, never one of its own rank or above. A new upward import fails here with
//! its file and line, before it turns into a cycle that is hard to take apart again.

use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules by rank, lowest first. `main.rs` and `lib.rs` may use anything.
///
/// `rule_id` sits below `catalogue` and `field` because both are keyed by it; `manifests`
/// (files → objects) reads `model` and `schema` and is read by `cluster` and `cli`.
const RANKS: &[(&str, u8)] = &[
    ("address", 0),
    ("kinds", 0),
    ("kube_version", 0),
    ("par", 0),
    ("rule_id", 0),
    ("catalogue", 1),
    ("field", 1),
    ("schema", 1),
    ("model", 2),
    ("index", 3),
    ("manifests", 4),
    ("rules", 4),
    ("cluster", 5),
    ("admission", 6),
    ("server", 7),
    ("decider", 8),
    ("cli", 9),
];

fn rank(module: &str) -> Option<u8> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
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

/// The references in `text` (a file of module `module`) that run sideways or up.
fn violations(module: &str, text: &str) -> Vec<(usize, String)> {
    let Some(own) = rank(module) else {
        return Vec::new();
    };
    references(text)
        .into_iter()
        .filter(|r| r.module != module && rank(&r.module).is_some_and(|their| their >= own))
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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut unranked = Vec::new();
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
        if rank(module).is_none() {
            unranked.push(rel.display().to_string());
            continue;
        }
        let text = fs::read_to_string(file).unwrap();
        for (line, target) in violations(module, &text) {
            problems.push(format!(
                "src/{}:{line}: `{module}` (rank {}) uses `{target}` (rank {})",
                rel.display(),
                rank(module).unwrap(),
                rank(&target).unwrap()
            ));
        }
    }
    assert!(
        unranked.is_empty(),
        "modules missing from the rank table in tests/layers.rs: {unranked:?}"
    );
    assert!(
        problems.is_empty(),
        "imports that run up or sideways:\n{}",
        problems.join("\n")
    );
}

#[test]
fn an_upward_import_is_caught_with_its_line() {
    let text = "//! Docs may name crate::cli.\n\
                use crate::address::Ip;\n\
                use crate::{kinds::Kind,\n    admission::Admission};\n\
                fn f() { crate::server::start(); ipam_guard::cli::run(); }\n";
    assert_eq!(
        violations("rules", text),
        vec![(4, "admission".to_string()), (5, "server".to_string())]
    );
    assert_eq!(
        violations("model", "use crate::rules::mutate::default_pool_group;\n"),
        vec![(1, "rules".to_string())]
    );
    assert_eq!(
        violations("rules", "use crate::manifests::x;\n"),
        vec![(1, "manifests".to_string())],
        "the same rank is not below"
    );
    assert!(violations("cli", text).is_empty());
}
