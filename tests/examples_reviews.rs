//! Each example review in examples/reviews/ does what its name says, through the real admission
//! handler with the empty view a fresh `serve --dev` has.

use std::sync::Arc;

use base64::Engine as _;

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::Ledger;
use ipam_guard::rules::Options;

#[test]
fn every_example_review_does_what_its_name_says() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reviews");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut seen = Vec::new();
    for path in files {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let body = std::fs::read(&path).unwrap();
        let admission = Admission::new(Arc::new(Ledger::default()), Options::default());
        let (expect, rule) = ["-allowed", "-denied-", "-warned-", "-patched-"]
            .iter()
            .find_map(|k| name.find(k).map(|i| (*k, name[i + k.len()..].to_string())))
            .unwrap_or(("", String::new()));
        let endpoint = if expect == "-patched-" {
            Endpoint::Mutate
        } else {
            Endpoint::Validate
        };
        let answer = admission.review_now(endpoint, &body);
        assert_eq!(answer.http_status, 200, "{name}");
        let outcome = answer.summary.expect("a summary");
        let text = String::from_utf8_lossy(&answer.body);
        match expect {
            "-allowed" => assert!(outcome.allowed && outcome.warnings == 0, "{name}: {text}"),
            "-denied-" => {
                assert!(!outcome.allowed && outcome.code == 422, "{name}: {text}");
                assert!(outcome.rules.contains(&rule), "{name}: {:?}", outcome.rules);
            }
            "-warned-" => {
                assert!(outcome.allowed && outcome.warnings > 0, "{name}: {text}");
                assert!(outcome.rules.contains(&rule), "{name}: {:?}", outcome.rules);
            }
            "-patched-" => {
                assert!(outcome.allowed && outcome.patched, "{name}: {text}");
                // What each mutation fills in.
                let path = match rule.as_str() {
                    "M1" => "/spec/poolRef/apiGroup",
                    "M2" => "/metadata/labels",
                    other => panic!("{name}: no mutation {other}"),
                };
                let v: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
                let patch = base64::engine::general_purpose::STANDARD
                    .decode(v["response"]["patch"].as_str().unwrap())
                    .unwrap();
                let ops: Vec<serde_json::Value> = serde_json::from_slice(&patch).unwrap();
                assert!(
                    ops.iter()
                        .any(|op| op["path"].as_str().unwrap().starts_with(path)),
                    "{name}: {ops:?}"
                );
            }
            // The banner's example: any answer but an error.
            _ => assert!(outcome.allowed, "{name}: {text}"),
        }
        seen.push(expect);
    }
    for kind in ["-allowed", "-denied-", "-warned-", "-patched-"] {
        assert!(seen.contains(&kind), "no example is{kind}");
    }
}
