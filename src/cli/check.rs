//! `ipam-guard check PATH...`: judges manifests on disk the way the API server would if each
//! were created next to all the others (SPEC X4): the CRD schema first (what the API server
//! refuses before any webhook: unknown fields, types, required fields, names), then mutation (a
//! patch that would apply is a warning), then validation of the patched object as a CREATE.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;

use globset::{Glob, GlobSet, GlobSetBuilder};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};

mod phases;
mod stored;

pub use stored::{Judged, Judging};

use phases::{Phases, Step, Steps};

use super::report::{self, Finding, OtherKey, Problem, Report, Severity, Subject, Summary, Who};
use super::{CheckArgs, OverlapScope};
use crate::cluster::{index_of, judge_as_create, upsert_all, Identified};
use crate::field::{format_value, PatchOp, Verdict, Warning};
use crate::index::Index;
use crate::kinds::Kind;
use crate::kube_version::KubeVersion;
use crate::manifests::template::{self, Vars};
use crate::manifests::{self, Manifest, Packed, Source};
use crate::model::{ObjKey, Operation, Projection, Request};
use crate::par;
use crate::rule_id::RuleId;
use crate::rules::{self, Ctx, Options};
use crate::schema::{Lookup, Schemas};

/// What one `check` run found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// In file order, then document order; within an object schema findings, mutations,
    /// denials, then warnings.
    pub findings: Vec<Finding>,
    /// Inputs that could not be judged: unreadable files and documents, kinds of a served group
    /// that do not exist, and with `--strict` objects of kinds ipam-guard does not judge.
    pub errors: Vec<Problem>,
    /// Every object judged, in order (JUnit lists passing objects too).
    pub subjects: Vec<Subject>,
    pub summary: Summary,
}

/// What `check` reads and how, beyond the rule options.
#[derive(Debug, Default)]
pub struct Gate {
    pub exclude: GlobSet,
    pub strict: bool,
    /// Where each kind's schema comes from: `--crd-dir` alone when given; else, with
    /// `--kubeconfig`, the CRDs the cluster has installed, and for the judged kinds it does not
    /// serve the built-in description. None: the built-in description alone.
    pub schemas: Option<Schemas>,
    /// What a cluster already stores (`--kubeconfig`), as projections: judged against, never
    /// reported.
    pub stored: Vec<Projection>,
    /// The release whose API server the schema step speaks for: `--kube-version`, else the
    /// cluster's with `--kubeconfig`, else the newest tested.
    pub target: KubeVersion,
    /// Template variables (`--var`, `--env`): None leaves the files' text as written.
    pub vars: Option<Vars>,
}

impl Gate {
    /// From the flags: compiles `--exclude`, reads `--crd-dir` and, with `--kubeconfig`, the
    /// cluster's objects and CRDs.
    pub fn from_args(args: &CheckArgs) -> Result<Gate, String> {
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
            let (stored, installed, version) = read_cluster(args, schemas.is_none())?;
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

    fn schemas(&self) -> &Schemas {
        self.schemas.as_ref().unwrap_or_else(|| Schemas::builtin())
    }
}

/// Lists the cluster of `--kubeconfig`/`--context`: the objects it stores, the schemas of its
/// installed CRDs (the truth for that cluster: the versions it serves, the fields its providers'
/// releases define) and its release (`/version`). `check` is synchronous; the listing runs on
/// the binary's runtime when there is one (blocking this thread only), else on its own. The CRDs
/// are read only when `crds` (`--crd-dir` names the schemas otherwise).
type Cluster = (Vec<Projection>, Option<Schemas>, KubeVersion);
fn read_cluster(args: &CheckArgs, crds: bool) -> Result<Cluster, String> {
    let list = async {
        let (client, server) = crate::cluster::live::client_and_server(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
        )
        .await
        .map_err(|e| crate::cluster::live::describe(&e))?;
        // Projections only: the files are judged against what the stored objects count as.
        let (stored, errors) = crate::cluster::live::read::read(
            &client,
            &server,
            crate::cluster::live::watched,
            Judging::new(Judged::None, super::audit::FILE),
            super::progress::for_stderr(args.quiet),
        )
        .await;
        // Judging against a partial cluster could pass what the whole would refuse.
        if let Some(e) = errors.first() {
            return Err(e.clone());
        }
        let stored = stored.into_projections();
        // After the listing, whose errors name an unreachable server best.
        let info = client
            .apiserver_version()
            .await
            .map_err(|e| format!("{server}: reading /version: {e}"))?;
        let version = KubeVersion::from_version_info(&info.major, &info.minor)
            .map_err(|e| format!("{server}: {e}"))?;
        if !crds {
            return Ok((stored, None, version));
        }
        let (read, crds) = crate::cluster::live::read::list_resource(
            &client,
            &crate::cluster::live::crd_resource(),
            CrdSchemas::default(),
        )
        .await;
        let failed = |e: String| format!("cannot list CustomResourceDefinitions: {e}");
        read.map_err(|e| failed(crate::cluster::live::read::describe(&server, &e)))?;
        let crds = crds.ok_or_else(|| failed("the list decoder failed".to_string()))?;
        match crds.error {
            Some(e) => Err(e),
            None => Ok((stored, Some(crds.schemas), version)),
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => tokio::task::block_in_place(|| handle.block_on(list)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(list),
    }
}

/// The schemas of the CRDs a cluster has installed, built as their list streams in (a CRD is
/// large; a cluster may have hundreds).
#[derive(Default)]
struct CrdSchemas {
    schemas: Schemas,
    error: Option<String>,
}

impl crate::cluster::live::list::Items for CrdSchemas {
    fn item(&mut self, crd: crate::cluster::WatchedObject) {
        if self.error.is_some() {
            return;
        }
        let name = crd.metadata.name.clone().unwrap_or_default();
        // A list's items carry no kind; what `add_crd` reads is the spec.
        let mut value = Value::Object(crd.rest);
        value["kind"] = "CustomResourceDefinition".into();
        if let Err(e) = self.schemas.add_crd(&value) {
            self.error = Some(format!(
                "CustomResourceDefinition {name} in the cluster: {e}"
            ));
        }
    }
}

/// Every CustomResourceDefinition in the YAML/JSON files of `dir` (other documents are ignored).
fn read_crds(dir: &std::path::Path) -> Result<Schemas, String> {
    let mut schemas = Schemas::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("--crd-dir {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("--crd-dir {}: {e}", file.display()))?;
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let doc: Value = serde::Deserialize::deserialize(doc)
                .map_err(|e| format!("--crd-dir {}: {e}", file.display()))?;
            if doc.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
                schemas
                    .add_crd(&doc)
                    .map_err(|e| format!("--crd-dir {}: {e}", file.display()))?;
            }
        }
    }
    if schemas.is_empty() {
        return Err(format!(
            "--crd-dir {}: no CustomResourceDefinition found",
            dir.display()
        ));
    }
    Ok(schemas)
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
    let gate = match Gate::from_args(args) {
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
    let (outcome, index) = check_keeping_view(&args.paths, options, &gate, &mut phases);
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

/// Reads `paths` and judges every object of a known kind, with the built-in CRDs.
pub fn check(paths: &[PathBuf], options: Options) -> Outcome {
    check_with(paths, options, &Gate::default())
}

pub fn check_with(paths: &[PathBuf], options: Options, gate: &Gate) -> Outcome {
    check_keeping_view(paths, options, gate, &mut Phases::start()).0
}

fn check_keeping_view(
    paths: &[PathBuf],
    options: Options,
    gate: &Gate,
    phases: &mut Phases,
) -> (Outcome, Index) {
    // Each object is checked against its schema, mutated, projected and packed on the worker
    // that read it: between reading and judging only the packed document waits for the others.
    let schemas = gate.schemas();
    let steps = Steps::new();
    let has_schema = |group: &str, kind: &str| {
        !matches!(
            schemas.lookup(group, kind, ""),
            Lookup::UnknownKind { .. } | Lookup::UnknownGroup
        )
    };
    let loaded = manifests::read_paths_rendered(
        paths,
        &gate.exclude,
        gate.vars.as_ref(),
        |m| {
            // The API server's order: mutating admission, then the schema (of the patched
            // object), then validating admission.
            let schema = |patched: &Value| {
                steps.time(Step::Schema, || {
                    let subject = Subject::at(&m.source, m.key.clone());
                    schema_findings(
                        m.kind.group(),
                        m.kind.name(),
                        &m.version,
                        patched,
                        &subject,
                        schemas,
                        gate.target,
                    )
                })
            };
            let held = hold(&m, schema, template::placeholders(&m.object), &steps);
            steps.time(Step::Drop, || drop(m));
            held
        },
        has_schema,
    );
    phases.done("read");
    steps.report();
    let mut errors: Vec<Problem> = loaded.errors.iter().map(Problem::from).collect();
    if gate.strict {
        errors.extend(loaded.skipped_at.iter().map(|(at, label)| Problem {
            file: at.file.clone(),
            document: at.document,
            line: at.line,
            message: format!(
                "{}{label} is not a kind ipam-guard judges (--strict)",
                at.item.map(|i| format!("items[{i}]: ")).unwrap_or_default()
            ),
        }));
    }
    // Kinds ipam-guard does not judge but has a CRD for: that schema is all they are judged by.
    let mut schema_only: BTreeMap<String, usize> = BTreeMap::new();
    let mut other_findings: Vec<Vec<Finding>> = Vec::new();
    let mut other_subjects = Vec::new();
    for o in &loaded.others {
        let label = if o.group.is_empty() {
            o.kind.clone()
        } else {
            format!("{}.{}", o.kind, o.group)
        };
        *schema_only.entry(label).or_default() += 1;
        let meta = o.object.get("metadata");
        let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
        let who = Who::Other(std::sync::Arc::new(OtherKey {
            group: o.group.clone(),
            kind: o.kind.clone(),
            namespace: text("namespace").map(str::to_string),
            name: text("name").unwrap_or_default().to_string(),
        }));
        let subject = Subject::at_who(&o.source, who);
        let mut found = schema_findings(
            &o.group,
            &o.kind,
            &o.version,
            &o.object,
            &subject,
            schemas,
            gate.target,
        );
        not_judged(&subject, &template::placeholders(&o.object), &mut found);
        other_findings.push(found);
        other_subjects.push(subject);
    }
    let mut summary = Summary {
        files: Some(loaded.files),
        skipped: if gate.strict {
            Default::default()
        } else {
            loaded.skipped
        },
        not_ipam: loaded.not_ipam,
        schema_only,
        not_objects: loaded.not_objects,
        excluded: loaded.excluded,
        unreadable: errors.len(),
        ..Summary::default()
    };
    let (held, projections): (Vec<Held>, Vec<Option<Projection>>) =
        loaded.manifests.into_iter().unzip();
    let mut subjects: Vec<Subject> = held
        .iter()
        .map(|h| Subject::at(&h.source, h.key.clone()))
        .collect();
    subjects.extend(other_subjects);
    let (objects, mut findings, index) =
        judge_held(held, projections, options, &gate.stored, phases);
    if !other_findings.is_empty() {
        findings.extend(other_findings.into_iter().flatten());
        sort_by_place(&mut findings, &loaded.file_names);
    }
    summary.objects = objects;
    locate_fields(&mut findings, gate.vars.as_ref());
    summary.count(&findings);
    if gate.strict {
        errors.extend(
            findings
                .iter()
                .filter(|f| f.rule == crate::catalogue::TEMPLATE)
                .map(|f| Problem {
                    file: f.subject.file.clone().unwrap_or_else(|| "-".into()),
                    document: f.subject.document,
                    line: f.subject.line,
                    message: format!("{}: {} (--strict)", f.subject.key, f.message),
                }),
        );
        summary.unreadable = errors.len();
    }
    let outcome = Outcome {
        findings,
        errors,
        subjects,
        summary,
    };
    (outcome, index)
}

/// Points each finding at its field's line: the files with findings are read again (standard
/// input was kept), rendered with the same variables, and each path looked up in its document.
fn locate_fields(findings: &mut [Finding], vars: Option<&Vars>) {
    let mut texts: HashMap<std::sync::Arc<str>, Option<String>> = HashMap::new();
    for f in findings.iter_mut() {
        if f.field.is_empty() {
            continue;
        }
        let (Some(file), Some(start)) = (&f.subject.file, f.subject.line) else {
            continue;
        };
        let text = texts.entry(file.clone()).or_insert_with(|| {
            let text = if &**file == "-" {
                manifests::stdin_text().map(str::to_string)
            } else {
                std::fs::read_to_string(&**file).ok()
            }?;
            Some(match vars {
                Some(vars) => template::substitute(&text, vars),
                None => text,
            })
        });
        let Some(text) = text else { continue };
        f.field_line = match f.subject.item {
            // A `kind: List`'s items, or a bare list of objects.
            Some(i) => {
                manifests::lines::field_line(text, start, &format!("items[{i}].{}", f.field))
                    .or_else(|| {
                        manifests::lines::field_line(text, start, &format!("[{i}].{}", f.field))
                    })
            }
            None => manifests::lines::field_line(text, start, &f.field),
        };
    }
}

/// Findings in the order of the files (as read) and documents they are about. Stable: within
/// one object the order stays schema, mutation, denials, warnings.
fn sort_by_place(findings: &mut [Finding], files: &[std::sync::Arc<str>]) {
    let rank: HashMap<&str, usize> = files.iter().enumerate().map(|(i, f)| (&**f, i)).collect();
    findings.sort_by_key(|f| {
        let file = f.subject.file.as_deref().and_then(|f| rank.get(f).copied());
        (file, f.subject.document)
    });
}

/// What the API server itself would refuse before any webhook runs: the object against its CRD
/// schema (rule id `SCHEMA`), or an `apiVersion` whose version the CRD does not serve.
fn schema_findings(
    group: &str,
    kind: &str,
    version: &str,
    object: &Value,
    subject: &Subject,
    schemas: &Schemas,
    target: KubeVersion,
) -> Vec<Finding> {
    match schemas.lookup(group, kind, version) {
        Lookup::Found(_) => schemas
            .validate_as(target, group, kind, version, object)
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let severity = if e.warning {
                    Severity::Warn
                } else {
                    Severity::Deny
                };
                Finding::new(subject, e.path, e.message, crate::catalogue::SCHEMA, severity)
            })
            .collect(),
        Lookup::UnservedVersion { served } => vec![Finding::new(
            subject,
            "apiVersion",
            format!(
                "Unsupported value: \"{group}/{version}\": no matches for kind \"{kind}\" in version \"{group}/{version}\"; served versions: {}",
                served.join(", "),
            ),
            crate::catalogue::SCHEMA,
            Severity::Deny,
        )],
        // A --crd-dir without this kind: nothing to validate against, as on a cluster without
        // the CRD (where the write would fail for other reasons).
        Lookup::UnknownKind { .. } | Lookup::UnknownGroup => Vec::new(),
    }
}

/// Judges objects as CREATEs against each other (mutation first, then validation; SPEC X4):
/// objects per kind and the findings, in the order of `manifests`. `audit` judges with this too;
/// stored objects have passed their schema, so it is not checked again.
pub fn judge(manifests: Vec<Manifest>, options: Options) -> (BTreeMap<Kind, usize>, Vec<Finding>) {
    let (objects, findings, _index) = judge_keeping_index(manifests, options);
    (objects, findings)
}

/// As `judge`, also handing back the index of every object (what `audit` reads for the findings
/// about stored objects over time, `rules::health`).
pub fn judge_keeping_index(
    manifests: Vec<Manifest>,
    options: Options,
) -> (BTreeMap<Kind, usize>, Vec<Finding>, Index) {
    let mut phases = Phases::start();
    let steps = Steps::default();
    let held = par::map(&manifests, HOLD_PER_THREAD, |m| {
        hold(m, |_| Vec::new(), Vec::new(), &steps)
    });
    drop(manifests);
    phases.done("mutate");
    let (held, projections) = held.into_iter().unzip();
    judge_held(held, projections, options, &[], &mut phases)
}

/// Below this many objects per thread, mutating and packing stay on the calling thread.
const HOLD_PER_THREAD: usize = 1_000;

/// One object between reading and judging: who it is, what was found so far, and the document
/// as the mutating webhook would leave it, packed.
struct Held {
    source: Source,
    kind: Kind,
    version: String,
    key: ObjKey,
    /// What its schema check found (taken while reading).
    schema: Vec<Finding>,
    /// What the mutation pass found: the values the patch fills in, a patch that cannot apply.
    mutation: Vec<Finding>,
    /// Fields holding unresolved template placeholders, with the placeholder (not judged).
    placeholders: Vec<(String, String)>,
    /// Taken when the object is judged: the documents are freed while judging goes on, and
    /// the findings reuse their memory (a whole-cluster audit holds 100k of each).
    object: std::sync::Mutex<Option<Packed>>,
}

impl Identified for Held {
    fn kind(&self) -> Kind {
        self.kind
    }
    fn key(&self) -> &ObjKey {
        &self.key
    }
}

/// The API server runs mutating webhooks first, then checks the schema, then runs validating
/// webhooks, and stores what they produce: the object is patched here, `schema` judges the
/// patched object (a field M1 fills is not missing), and it is projected for the index and
/// packed until its turn to be judged. No other object is needed.
fn hold(
    m: &Manifest,
    schema: impl FnOnce(&Value) -> Vec<Finding>,
    placeholders: Vec<(String, String)>,
    steps: &Steps,
) -> (Held, Option<Projection>) {
    let mut mutation = Vec::new();
    let mut object = Cow::Borrowed(&m.object);
    steps.time(Step::Mutate, || {
        if !m.kind.mutated() {
            return;
        }
        let verdict = rules::mutate(&request(m.kind, &m.version, &m.key, &m.object));
        if quiet(&verdict) && verdict.patch.is_empty() {
            return;
        }
        let subject = Subject::at(&m.source, m.key.clone());
        record(&subject, &verdict, &mut mutation);
        for op in &verdict.patch {
            mutation.extend(
                mutation_warnings(op)
                    .into_iter()
                    .map(|w| Finding::warn(&subject, &w)),
            );
            if let Err(e) = apply_add(object.to_mut(), op) {
                // A patch the API server would reject: the object is judged unpatched.
                mutation.push(Finding::warn(
                    &subject,
                    &Warning::new(op.rule, pointer_to_field(&op.path), e),
                ));
            }
        }
    });
    let schema = schema(&object);
    // Status the rules never read is not carried into judging (a create drops it anyway).
    if !crate::model::reads_status(m.kind) && object.get("status").is_some() {
        if let Some(o) = object.to_mut().as_object_mut() {
            o.remove("status");
        }
    }
    let projection = steps.time(Step::Project, || crate::model::project(m.kind, &object));
    let held = Held {
        source: m.source.clone(),
        kind: m.kind,
        version: m.version.clone(),
        key: m.key.clone(),
        schema,
        mutation,
        placeholders,
        object: std::sync::Mutex::new(Some(steps.time(Step::Pack, || Packed::new(&object)))),
    };
    (held, projection)
}

/// Judges held objects (and their `projections`) as CREATEs: objects per kind, the findings in
/// order, and the index they were judged against (so `run` can skip freeing it). `stored`:
/// objects that already exist (a cluster's), judged against but not judged themselves; an
/// object of `held` replaces a stored one of the same identity, as applying the file would.
fn judge_held(
    mut held: Vec<Held>,
    projections: Vec<Option<Projection>>,
    options: Options,
    stored: &[Projection],
    phases: &mut Phases,
) -> (BTreeMap<Kind, usize>, Vec<Finding>, Index) {
    let mut objects = BTreeMap::new();
    let mut per_object: Vec<Vec<Finding>> = Vec::with_capacity(held.len());
    let mut mutations: Vec<Vec<Finding>> = Vec::with_capacity(held.len());
    let mut templated: Vec<Vec<(String, String)>> = Vec::with_capacity(held.len());
    for h in &mut held {
        per_object.push(std::mem::take(&mut h.schema));
        mutations.push(std::mem::take(&mut h.mutation));
        templated.push(std::mem::take(&mut h.placeholders));
    }
    let held = held;
    let (mut index, stored) = std::thread::scope(|s| {
        // The index needs only the projections: it is built while the keys are compared.
        let building = s.spawn(move || index_of(projections.into_iter().flatten()));
        // Keys borrowed from `held`, each with its first object: no key copied for 100k objects.
        let mut first_seen: HashMap<&ObjKey, usize> = HashMap::with_capacity(held.len());
        for (i, (h, mut mutation)) in held.iter().zip(mutations).enumerate() {
            *objects.entry(h.kind).or_default() += 1;
            // Two templates' `${NAMESPACE}/${NAME}` are not one object: who they are is unknown.
            let templated = template::placeholder_in(&h.key.name).is_some()
                || h.key
                    .namespace
                    .as_deref()
                    .is_some_and(|ns| template::placeholder_in(ns).is_some());
            if templated {
                // Nothing to compare.
            } else if let Some(first) = first_seen.get(&h.key) {
                let first = &held[*first].source;
                per_object[i].push(Finding::warn(
                    &Subject::at(&h.source, h.key.clone()),
                    &Warning::new(
                        RuleId::X4,
                        "metadata.name",
                        format!(
                            "defined again (first at {first}); a second CREATE would fail with AlreadyExists, \
                             and the others are judged against the last definition"
                        ),
                    ),
                ));
            } else {
                first_seen.insert(&h.key, i);
            }
            per_object[i].append(&mut mutation);
        }
        let stored: Vec<Projection> = stored
            .iter()
            .filter(|s| !first_seen.contains_key(s.key()))
            .cloned()
            .collect();
        let index = building
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (index, stored)
    });
    // After the files' objects, as `kubectl apply` of the files onto the cluster would leave it.
    upsert_all(&mut index, stored);
    phases.done("index");
    let judged = judge_as_create(&mut index, &held, |h, index| {
        let packed = h
            .object
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        // Each object is judged once; an object taken already would be judged as nothing.
        let object = packed.map_or(Value::Null, |p| p.unpack());
        let verdict = rules::validate(
            &request(h.kind, &h.version, &h.key, &object),
            &Ctx {
                index,
                options,
                now: std::time::Instant::now(),
            },
        );
        let mut found = Vec::new();
        if !quiet(&verdict) {
            record(&Subject::at(&h.source, h.key.clone()), &verdict, &mut found);
        }
        found
    });
    for ((i, found), more) in per_object.iter_mut().enumerate().zip(judged) {
        // One finding per problem: where a rule denies a field the schema refuses too, the
        // rule's words stand (they say what is wrong in IPAM terms; the schema's say only that a
        // pattern failed). A rule's warning never hides a schema denial.
        let denied: std::collections::HashSet<&str> = more
            .iter()
            .filter(|f| f.severity == Severity::Deny)
            .map(|f| f.field.as_str())
            .collect();
        if !denied.is_empty() {
            found.retain(|f| {
                f.rule != crate::catalogue::SCHEMA || !denied.contains(f.field.as_str())
            });
        }
        drop(denied);
        found.extend(more);
        if !templated[i].is_empty() {
            let subject = Subject::at(&held[i].source, held[i].key.clone());
            not_judged(&subject, &templated[i], found);
        }
    }
    let findings = per_object.into_iter().flatten().collect();
    // The packed documents are freed here, inside the phase that used them last.
    drop(held);
    phases.done("judge");
    (objects, findings, index)
}

/// An object with fields holding unresolved placeholders: nothing is said about those fields
/// (a schema pattern or a rule would only say that `${VAR}` is not an address), and one
/// finding, first, says which were not judged.
fn not_judged(subject: &Subject, placeholders: &[(String, String)], found: &mut Vec<Finding>) {
    if placeholders.is_empty() {
        return;
    }
    found.retain(|f| {
        !placeholders
            .iter()
            .any(|(field, _)| template::touches(&f.field, field))
    });
    const SHOWN: usize = 5;
    let mut listed: Vec<String> = placeholders
        .iter()
        .take(SHOWN)
        .map(|(field, p)| format!("{p} at {field}"))
        .collect();
    if placeholders.len() > SHOWN {
        listed.push(format!("and {} more", placeholders.len() - SHOWN));
    }
    found.insert(
        0,
        Finding::new(
            subject,
            "",
            format!("not judged: unresolved {}", listed.join(", ")),
            crate::catalogue::TEMPLATE,
            Severity::Info,
        ),
    );
}

fn request<'a>(kind: Kind, version: &'a str, key: &'a ObjKey, object: &'a Value) -> Request<'a> {
    Request {
        operation: Operation::Create,
        kind,
        version,
        namespace: key.namespace.as_deref(),
        name: &key.name,
        object: Some(object),
        old_object: None,
        dry_run: false,
    }
}

/// Nothing to report: most objects, which need no subject built for them.
fn quiet(verdict: &Verdict) -> bool {
    verdict.errors.is_empty() && verdict.unavailable.is_none() && verdict.warnings.is_empty()
}

fn record(subject: &Subject, verdict: &Verdict, out: &mut Vec<Finding>) {
    out.extend(verdict.errors.iter().map(|e| Finding::deny(subject, e)));
    if let Some(why) = &verdict.unavailable {
        // A static view is always synced; should a rule still say so, it must not pass silently.
        out.push(Finding::deny(
            subject,
            &crate::field::FieldError::forbidden(RuleId::X3, "", why.clone()),
        ));
    }
    out.extend(verdict.warnings.iter().map(|w| Finding::warn(subject, w)));
}

/// One warning per value the patch fills in: a patch that creates `metadata.labels` is reported
/// at the label it adds, the way a user would look for it.
fn mutation_warnings(op: &PatchOp) -> Vec<Warning> {
    let warning = |field: String, value: &Value| {
        Warning::new(
            op.rule,
            field,
            format!(
                "not set; the mutating webhook sets it to {}",
                format_value(value)
            ),
        )
    };
    match &op.value {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| {
                let key = k.replace('~', "~0").replace('/', "~1");
                warning(pointer_to_field(&format!("{}/{key}", op.path)), v)
            })
            .collect(),
        v => vec![warning(pointer_to_field(&op.path), v)],
    }
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `/metadata/labels/cluster.x-k8s.io~1cluster-name` → `metadata.labels[cluster.x-k8s.io/cluster-name]`,
/// the way `field.Path` writes map keys and list indexes.
fn pointer_to_field(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1).map(unescape) {
        let index = !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit());
        if index || seg.contains(['.', '/']) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// Applies one operation of the mutating webhook's patch (RFC 6902, by `json-patch`), as the
/// API server would before validation.
fn apply_add(doc: &mut Value, op: &PatchOp) -> Result<(), String> {
    let fail = |why: &str| {
        format!(
            "the mutating webhook's patch {} cannot apply: {why}",
            op.path
        )
    };
    let path = PointerBuf::parse(op.path.as_str()).map_err(|_| fail("not a JSON pointer"))?;
    let add = PatchOperation::Add(AddOperation {
        path,
        value: op.value.clone(),
    });
    json_patch::patch(doc, &[add]).map_err(|_| fail(why_add_fails(doc, &op.path)))
}

/// Why an `add` at `path` cannot apply to `doc`: the crate says only "path is invalid", while a
/// reader needs to know which part of it.
fn why_add_fails(doc: &Value, path: &str) -> &'static str {
    let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    match doc.pointer(parent) {
        None => "the parent does not exist",
        Some(Value::Array(_)) => "index out of bounds",
        Some(_) => "the parent is not an object or a list",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(
            pointer_to_field("/spec/poolRef/apiGroup"),
            "spec.poolRef.apiGroup"
        );
        assert_eq!(
            pointer_to_field("/metadata/labels/cluster.x-k8s.io~1cluster-name"),
            "metadata.labels[cluster.x-k8s.io/cluster-name]"
        );
        assert_eq!(pointer_to_field("/spec/addresses/0"), "spec.addresses[0]");
    }

    #[test]
    fn add_fills_and_replaces() {
        let mut doc = json!({"spec": {"poolRef": {"apiGroup": ""}}, "metadata": {}});
        let op = |path: &str, value: Value| PatchOp {
            rule: RuleId::M1,
            path: path.into(),
            value,
        };
        apply_add(&mut doc, &op("/spec/poolRef/apiGroup", json!("g"))).unwrap();
        apply_add(&mut doc, &op("/metadata/labels", json!({"a": "b"}))).unwrap();
        apply_add(
            &mut doc,
            &op(
                "/metadata/labels/cluster.x-k8s.io~1cluster-name",
                json!("c"),
            ),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"poolRef": {"apiGroup": "g"}},
                   "metadata": {"labels": {"a": "b", "cluster.x-k8s.io/cluster-name": "c"}}})
        );
        let fails = |doc: &mut Value, path: &str| apply_add(doc, &op(path, json!(1))).unwrap_err();
        assert!(fails(&mut doc, "/status/x").ends_with("the parent does not exist"));
        assert!(fails(&mut doc, "/spec/poolRef/apiGroup/x")
            .ends_with("the parent is not an object or a list"));
        let mut list = json!({"a": [1]});
        assert!(fails(&mut list, "/a/2").ends_with("index out of bounds"));
        assert!(fails(&mut list, "a").ends_with("not a JSON pointer"));
        apply_add(&mut list, &op("/a/-", json!(2))).unwrap();
        assert_eq!(list, json!({"a": [1, 2]}));
    }
}
