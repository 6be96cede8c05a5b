//! Manifests on disk, judged the way the API server would if each were created next to all the
//! others (X4): read (templates rendered), each object checked against its CRD schema
//! after the mutating webhook's patch, then validated as a CREATE; findings pointed at their
//! field's line and put in file order. What `check` runs.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use globset::GlobSet;
use serde_json::Value;

use super::crd::schema_findings;
use super::phases::{Phases, Step, Steps};
use super::pipeline::{hold, judge_held, not_judged, Held};
use super::{Finding, OtherKey, Problem, Subject, Summary, Who};
use crate::index::Index;
use crate::kube_version::KubeVersion;
use crate::manifests;
use crate::manifests::template::{self, Vars};
use crate::model::Projection;
use crate::rule_id::RuleId;
use crate::rules::Options;
use crate::schema::{Lookup, Schemas};

/// What one `check` run found.
#[derive(Debug, Default)]
pub struct FileFindings {
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
    fn schemas(&self) -> &Schemas {
        self.schemas.as_ref().unwrap_or_else(|| Schemas::builtin())
    }
}

/// Reads `paths` and judges every object of a known kind, with the built-in CRDs.
pub fn check(paths: &[PathBuf], options: Options) -> FileFindings {
    check_with(paths, options, &Gate::default())
}

pub(crate) fn check_with(paths: &[PathBuf], options: Options, gate: &Gate) -> FileFindings {
    check_keeping_index(paths, options, gate, &mut Phases::start()).0
}

/// As `check_with`, reporting each phase to `phases` and handing back the index every object was
/// judged against (`check` ends right after and need not free it).
pub fn check_keeping_index(
    paths: &[PathBuf],
    options: Options,
    gate: &Gate,
    phases: &mut Phases,
) -> (FileFindings, Index) {
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
    // Objects of a declared kind its declaration cannot read: inputs not judged, as an unreadable
    // document is (exit 2), naming the object and the expression's problem.
    let mut unjudged = std::collections::HashSet::new();
    for h in &held {
        if let Some(problem) = &h.not_judged {
            unjudged.insert((h.source.file.clone(), h.source.document, h.source.item));
            errors.push(Problem {
                file: h.source.file.clone(),
                document: h.source.document,
                line: h.source.line,
                message: format!(
                    "{}{}: not judged: {problem}",
                    h.source
                        .item
                        .map(|i| format!("items[{i}]: "))
                        .unwrap_or_default(),
                    h.key
                ),
            });
        }
    }
    summary.unreadable = errors.len();
    let mut subjects: Vec<Subject> = held
        .iter()
        .map(|h| Subject::at(&h.source, h.key.clone()))
        .collect();
    subjects.extend(other_subjects);
    let (objects, mut findings, index) =
        judge_held(held, projections, options, &gate.stored, phases);
    if !unjudged.is_empty() {
        // Their validation said the same as an unavailable verdict (X3); the error above stands.
        findings.retain(|f| {
            let s = &f.subject;
            let at = (s.file.clone().unwrap_or_default(), s.document, s.item);
            f.rule != RuleId::X3.as_str() || !unjudged.contains(&at)
        });
    }
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
    let outcome = FileFindings {
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
