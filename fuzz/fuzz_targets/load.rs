//! Arbitrary bytes as a manifest file → the loader, and on through what `check` does with it
//! (projection, index, rules, both report formats). Never panics, never hangs.
//!
//! The bytes are read twice, as a `.yaml` and as a `.json` file (the extension picks the
//! reader), so seed files work unchanged for both. The loader reads paths: one file per
//! process in the temp directory.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use ipam_guard::cli::report::write_findings;
use ipam_guard::cli::OutputFormat;
use ipam_guard::judge::files::check;
use ipam_guard::manifests;
use ipam_guard::rules::Options;
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("ipam-guard-fuzz-load-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    for name in ["in.yaml", "in.json"] {
        let path = dir().join(name);
        std::fs::write(&path, data).expect("write the input file");
        let outcome = check(std::slice::from_ref(&path), Options::default());
        for e in &outcome.errors {
            let _ = e.to_string();
        }
        let _ = (outcome.summary.to_string(), outcome.summary.exit_code());
        for format in [OutputFormat::Text, OutputFormat::Json] {
            let mut out = Vec::new();
            write_findings(&mut out, format, &outcome.findings).expect("writing to memory");
        }
    }
    // The in-memory reader the tests and `--state-from` share.
    if let Ok(text) = std::str::from_utf8(data) {
        let loaded = manifests::read_str("in.yaml", text);
        let _ = loaded.skipped_total();
        for e in &loaded.errors {
            let _ = (e.to_string(), e.problem.metric_label());
        }
    }
});
