//! `ipam-guard check PATH...`: judges manifests on disk the way the API server would if each
//! were created next to all the others (X4): the CRD schema first (what the API server
//! refuses before any webhook: unknown fields, types, required fields, names), then mutation (a
//! patch that would apply is a warning), then validation of the patched object as a CREATE.
//! The judging is `judge::files`'; here the flags become a `Gate`, and the findings output.

use std::io::{self, BufWriter, IsTerminal, Write};

use globset::{Glob, GlobSetBuilder};

use super::report::{self, Report};
use super::{CheckArgs, OverlapScope};
use crate::judge::cluster::read_cluster;
use crate::judge::crd::read_crds;
use crate::judge::files::{check_keeping_index, Gate};
use crate::judge::phases::Phases;
use crate::kube_version::KubeVersion;
use crate::manifests::template::Vars;
use crate::rules::Options;
use crate::schema::Schemas;

/// From the flags: compiles `--exclude`, reads `--crd-dir` and, with `--kubeconfig`, the
/// cluster's objects and CRDs.
pub fn gate_of(args: &CheckArgs) -> Result<Gate, String> {
    let mut globs = GlobSetBuilder::new();
    for g in &args.exclude {
        globs.add(Glob::new(g).map_err(|e| format!("--exclude {g:?}: {e}"))?);
    }
    let mut schemas = match &args.crd_dir {
        Some(dir) => Some(read_crds(dir)?),
        None => None,
    };
    let given = match &args.kube_version {
        Some(v) => Some(KubeVersion::parse(v).map_err(|e| format!("--kube-version: {e}"))?),
        None => None,
    };
    let (stored, cluster) = if args.kubeconfig.is_some() || args.context.is_some() {
        let (stored, installed, version) = read_cluster(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            schemas.is_none(),
            || super::progress::for_stderr(args.quiet),
        )?;
        if let Some(mut installed) = installed {
            installed.fill_from(Schemas::builtin());
            schemas = Some(installed);
        }
        (stored, Some(version))
    } else {
        (Vec::new(), None)
    };
    let vars = if args.vars.is_empty() && !args.env {
        None
    } else {
        Some(Vars::new(&args.vars, args.env)?)
    };
    Ok(Gate {
        vars,
        exclude: globs.build().map_err(|e| format!("--exclude: {e}"))?,
        strict: args.strict,
        schemas,
        stored,
        target: given.or(cluster).unwrap_or_default(),
    })
}

/// Runs `check` and returns the exit code: 2 when an input could not be judged, else 1 when an
/// object would be denied, else 0. Findings go to stdout (with the errors too in the machine
/// formats), errors and the summary to stderr.
pub fn run(args: &CheckArgs) -> i32 {
    let options = Options::from(&args.rules);
    // Only with RUST_LOG set (`ipam_guard=debug`: the time of each phase); stderr otherwise
    // carries errors and the summary alone. Not locked for the run: workers may log.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(io::stderr().is_terminal())
            .with_writer(io::stderr)
            .try_init();
    }
    let mut err = io::stderr();
    let mut phases = Phases::start();
    // Before any file is read: the manifests' reader knows a declared kind once it is installed.
    if let Err(errors) = super::kinds::install(&args.kinds) {
        for e in errors {
            let _ = writeln!(err, "error: {e}");
        }
        return 2;
    }
    let gate = match gate_of(args) {
        Ok(g) => g,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return 2;
        }
    };
    if !gate.target.tested() {
        let _ = writeln!(
            err,
            "note: Kubernetes {} is not a release the project tests against; the schema step follows what is known of it (README, \"Kubernetes versions\")",
            gate.target
        );
    }
    if options.overlap_scope == OverlapScope::Off {
        let _ = writeln!(
            err,
            "note: --overlap-scope off: pool overlaps (P10) and duplicate addresses (A9) are not checked"
        );
    }
    let (outcome, index) = check_keeping_index(&args.paths, options, &gate, &mut phases);
    // The process ends right after: freeing 100k projections one by one would only cost time.
    std::mem::forget(index);
    for e in &outcome.errors {
        let _ = writeln!(err, "error: {e}");
    }
    let mut out = BufWriter::new(io::stdout().lock());
    // A closed pipe (`check … | head`) is the reader's choice, not a failure of the check.
    let _ = report::write_report(
        &mut out,
        args.output,
        &Report {
            findings: &outcome.findings,
            problems: &outcome.errors,
            subjects: &outcome.subjects,
            source: None,
            summary: Some(&outcome.summary),
        },
    );
    let _ = write!(err, "{}", outcome.summary);
    drop(out);
    phases.done("output");
    outcome.summary.exit_code()
}
