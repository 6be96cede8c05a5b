//! The rule catalogue (`crates/core/src/catalogue/`), `docs/rules.md` generated from it, and
//! `ipam-guard explain`: every example triggers its rule through the real admission handler,
//! every id the code reports is in the catalogue, the committed page is what the catalogue
//! renders today, and `explain` prints the same entry.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use ipam_guard::catalogue::{Effect, RuleId, RULES};
use ipam_guard::cli::explain::{self, show};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_example_triggers_its_rule() {
    for rule in RULES {
        let shown = show(rule).unwrap_or_else(|e| panic!("{}: {e}", rule.id));
        let signed = format!("[ipam-guard {}]", rule.id);
        let t = &shown.transcript;
        match rule.effect() {
            // Its example may show either side; the answer must carry the rule either way.
            Effect::DenyOrWarn if shown.response.as_ref().unwrap()["allowed"] == true => {
                assert!(
                    t.lines()
                        .any(|l| l.starts_with("Warning: ") && l.ends_with(&signed)),
                    "{}: {t}",
                    rule.id
                );
            }
            Effect::Deny | Effect::DenyOrWarn => {
                let r = shown.response.as_ref().unwrap();
                assert_eq!(r["allowed"], false, "{}: {t}", rule.id);
                // X3's 503 carries a message, not a cause, signed all the same.
                if rule.id == "X3" {
                    assert_eq!(r["status"]["code"], 503, "{t}");
                    assert!(t.trim_end().ends_with(&signed), "{t}");
                } else {
                    // One cause on kubectl's `is invalid:` line, several each on a `* ` line.
                    assert!(
                        t.lines().any(|l| (l.starts_with("* ")
                            || l.starts_with("Error from server")
                            || (l.contains(" is invalid: ") && !l.ends_with("is invalid: ")))
                            && l.ends_with(&signed)),
                        "{}: {t}",
                        rule.id
                    );
                }
            }
            Effect::Warn => {
                let r = shown.response.as_ref().unwrap();
                assert_eq!(r["allowed"], true, "{}: {t}", rule.id);
                assert!(
                    t.lines()
                        .any(|l| l.starts_with("Warning: ") && l.ends_with(&signed)),
                    "{}: {t}",
                    rule.id
                );
            }
            Effect::Mutate => {
                let patch = shown.patch.as_ref().expect("a patch");
                let path = patch[0]["path"].as_str().unwrap();
                let expected = match rule.id {
                    RuleId::M1 => "/spec/poolRef/apiGroup",
                    RuleId::M2 => "/metadata/labels",
                    other => panic!("{other}: which field does it patch?"),
                };
                assert!(path.starts_with(expected), "{}: {path}", rule.id);
                assert_eq!(shown.response.as_ref().unwrap()["allowed"], true, "{t}");
            }
            Effect::Allow => {
                assert_eq!(
                    shown.response.as_ref().unwrap()["allowed"],
                    true,
                    "{}: {t}",
                    rule.id
                );
            }
            Effect::CheckOnly | Effect::AuditOnly => {
                assert!(t.contains(&format!("[{}]", rule.id)), "{}: {t}", rule.id);
            }
        }
    }
}

/// P11 lets through what P8 would refuse: the same update without `deletionTimestamp` is denied.
#[test]
fn p11_example_is_an_update_p8_would_deny_otherwise() {
    let p11 = ipam_guard::catalogue::rule("P11").unwrap();
    let mut alive = *p11;
    let object = p11
        .example
        .object
        .replace(", deletionTimestamp: '2026-01-01T00:00:00Z'", "");
    let old = p11
        .example
        .old
        .unwrap()
        .replace(", deletionTimestamp: '2026-01-01T00:00:00Z'", "");
    alive.example.object = Box::leak(object.into_boxed_str());
    alive.example.old = Some(Box::leak(old.into_boxed_str()));
    let shown = show(&alive).unwrap();
    assert!(
        shown.transcript.contains("[ipam-guard P8]"),
        "{}",
        shown.transcript
    );
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `s` looks like a rule id: letters then digits (C1, MP4, P10), or REQ.
fn looks_like_an_id(s: &str) -> bool {
    let letters = s.trim_end_matches(|c: char| c.is_ascii_digit());
    s == "REQ"
        || (matches!(
            letters,
            "A" | "C" | "P" | "PP" | "MP" | "MC" | "MA" | "S" | "V" | "M" | "K" | "X"
        ) && letters.len() < s.len())
}

/// Rule ids are typed (`RuleId`): the code names them as `RuleId::X`, never as text, so every id
/// it reports is a variant and (`catalogue` tests) has its entry. What is left to check here is
/// that no id slips back in as a string and that no variant is dead.
#[test]
fn every_rule_id_the_code_reports_is_typed_and_in_the_catalogue() {
    let mut files = Vec::new();
    // The rules live in the core crate; admission and the audit in the server one; the commands in
    // the root one.
    sources(&root().join("crates/core/src"), &mut files);
    sources(&root().join("crates/server/src"), &mut files);
    sources(&root().join("src"), &mut files);
    let mut used = BTreeSet::new();
    for f in files {
        if ["catalogue.rs", "rule_id.rs", "tests.rs", "test_support.rs"]
            .iter()
            .any(|n| f.ends_with(n))
            || f.to_string_lossy().ends_with("_tests.rs")
            || f.components().any(|c| c.as_os_str() == "catalogue")
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Only the code, not its unit tests (they make up findings of their own).
        let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap();
        for literal in code.split('"').skip(1).step_by(2) {
            assert!(
                !looks_like_an_id(literal),
                "{} names rule {literal:?} as text; use RuleId",
                f.display()
            );
        }
        for (at, _) in code.match_indices("RuleId::") {
            let rest = &code[at + "RuleId::".len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            if let Some(id) = RuleId::parse(&rest[..end]) {
                used.insert(id);
            }
        }
    }
    // An allowance (P11) is a path through the code, not something it reports.
    for rule in RULES.iter().filter(|r| r.effect() != Effect::Allow) {
        assert!(
            used.contains(&rule.id),
            "the catalogue lists {}, which no code reports",
            rule.id
        );
    }
}

#[test]
fn docs_rules_md_is_generated_from_the_catalogue() {
    let path = root().join("docs/rules.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = explain::document();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "lengths differ".to_string(),
                |i| format!("first difference at line {}", i + 1),
            );
        panic!(
            "docs/rules.md is stale ({first}). Refresh it with:\n    {}\n",
            explain::REFRESH
        );
    }
    for rule in RULES {
        assert!(
            committed.contains(&format!("\n## {}\n", rule.id)),
            "{}",
            rule.id
        );
    }
}

/// The page ends with the table of deliberate differences from the providers' own webhooks, one
/// row per entry of `catalogue::DIFFERENCES`, covering each provider.
#[test]
fn docs_rules_md_lists_the_differences_from_each_providers_webhook() {
    let page = explain::document();
    let at = page
        .find("\n## Differences from the providers' own webhooks\n")
        .expect("the section");
    let section = &page[at..];
    for d in ipam_guard::catalogue::DIFFERENCES {
        assert!(section.contains(d.case), "{}", d.case);
    }
    for provider in [
        "Cluster API",
        "in-cluster provider",
        "Metal3 IPAM",
        "Spiderpool",
    ] {
        assert!(
            ipam_guard::catalogue::DIFFERENCES
                .iter()
                .any(|d| d.provider.contains(provider)),
            "{provider}"
        );
    }
    // The known deliberate ones: X5's ratchet, P11 on terminating pools, a broken stored pool.
    for known in ["(X5)", "(P11)", "a broken stored pool must not block"] {
        assert!(section.contains(known), "{known}");
    }
}

#[test]
fn readme_links_the_rules_reference() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains("(docs/rules.md)"),
        "README must link docs/rules.md"
    );
}

fn ipam_guard(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(args)
        .output()
        .expect("run ipam-guard")
}

#[test]
fn explain_prints_the_entry_of_docs_rules_md() {
    let o = ipam_guard(&["explain", "p10"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    let entry = explain::entry(ipam_guard::catalogue::rule("P10").unwrap());
    assert_eq!(text, entry);
    assert!(explain::document().contains(&entry));
    assert!(
        text.contains("is invalid: spec.addresses[0]: Invalid value: \"10.0.0.0/24\": overlaps InClusterIPPool team-a/nodes"),
        "{text}"
    );
}

#[test]
fn explain_of_an_unknown_id_lists_the_ids_and_exits_2() {
    let o = ipam_guard(&["explain", "P99"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.starts_with("error: \"P99\" is not a rule id of ipam-guard; the ids are: C1, C2,"),
        "{err}"
    );
    for rule in RULES {
        assert!(err.contains(rule.id.as_str()), "{err}");
    }
    assert!(o.stdout.is_empty());
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// Users cannot see the project's internal specification: what they read says it in place or
/// points to docs/rules.md.
#[test]
fn user_facing_text_cites_no_spec() {
    let mut files: Vec<PathBuf> = ["README.md", "certs/README.md", "examples/README.md"]
        .iter()
        .map(|f| root().join(f))
        .collect();
    files_under(&root().join("manifests"), "yaml", &mut files);
    files_under(&root().join("manifests"), "md", &mut files);
    files_under(&root().join("docs"), "md", &mut files);
    let mut texts: Vec<(String, String)> = files
        .iter()
        .map(|f| (f.display().to_string(), std::fs::read_to_string(f).unwrap()))
        .collect();
    use clap::CommandFactory;
    let mut cli = ipam_guard::cli::Cli::command();
    texts.push(("--help".into(), cli.render_long_help().to_string()));
    for sub in cli.get_subcommands_mut() {
        let name = format!("{} --help", sub.get_name());
        texts.push((name, sub.render_long_help().to_string()));
    }
    for (what, text) in texts {
        for (i, line) in text.lines().enumerate() {
            assert!(
                !line.contains("SPEC") && !line.contains('§'),
                "{what}:{}: cites a specification users cannot see: {line}",
                i + 1
            );
        }
    }
}

/// Every id a user can meet has an entry in `explain` and docs/rules.md: every `RuleId`, the ids
/// `check` gives schema findings and unresolved template placeholders, and every `X<n>` the code, the docs, the manifests and the
/// help texts name (X1, X2, X5 are principles, not rules; they are cited all the same).
#[test]
fn every_id_a_user_can_meet_is_explained() {
    let mut ids: BTreeSet<String> = RuleId::ALL.iter().map(|r| r.as_str().to_string()).collect();
    ids.insert(ipam_guard::catalogue::SCHEMA.to_string());
    ids.insert(ipam_guard::catalogue::TEMPLATE.to_string());
    let mut files: Vec<PathBuf> = ["README.md", "certs/README.md", "examples/README.md"]
        .iter()
        .map(|f| root().join(f))
        .collect();
    files_under(&root().join("manifests"), "yaml", &mut files);
    files_under(&root().join("manifests"), "md", &mut files);
    files_under(&root().join("crates/core/src"), "rs", &mut files);
    files_under(&root().join("crates/server/src"), "rs", &mut files);
    files_under(&root().join("src"), "rs", &mut files);
    // The docs a reader is sent to, but not docs/rules.md: its entries are what is checked.
    files_under(&root().join("docs"), "md", &mut files);
    files.retain(|f| !f.ends_with("docs/rules.md"));
    let x_id = regex::Regex::new(r"\bX[0-9]+\b").unwrap();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for m in x_id.find_iter(&text) {
            ids.insert(m.as_str().to_string());
        }
    }
    for id in ["X1", "X2", "X3", "X4", "X5"] {
        assert!(ids.contains(id), "{id} is cited nowhere any more: {ids:?}");
    }
    let doc = std::fs::read_to_string(root().join("docs/rules.md")).unwrap();
    let bin = env!("CARGO_BIN_EXE_ipam-guard");
    for id in &ids {
        assert!(
            doc.contains(&format!("\n## {id}\n")),
            "docs/rules.md has no entry for {id}"
        );
        let out = Command::new(bin).args(["explain", id]).output().unwrap();
        assert!(out.status.success(), "explain {id}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.starts_with(&format!("## {id}\n")),
            "explain {id}: {text}"
        );
        // The page's last entry has its trailing blank line trimmed.
        assert!(
            doc.contains(text.trim_end()),
            "explain {id} is not docs/rules.md's entry"
        );
    }
}
