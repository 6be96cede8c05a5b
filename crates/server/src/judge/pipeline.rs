//! One object's way through the API server, as `check` and `audit` judge it: the mutating
//! webhook's patch applied and the schema judged on the result (`hold`, per object, on the
//! worker that read it), then every object validated as a CREATE against the index of all of
//! them (`judge_held`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::patch::{apply_add, mutation_warnings, pointer_to_field};
use super::phases::{Phases, Step, Steps};
use super::{Finding, Severity, Subject};
use crate::cluster::{index_of, judge_as_create, upsert_all, Identified};
use crate::field::{Verdict, Warning};
use crate::index::Index;
use crate::kinds::Kind;
use crate::manifests::template;
use crate::manifests::{Manifest, Packed, Source};
use crate::model::{ObjKey, Operation, Projection, Request};
use crate::par;
use crate::rule_id::RuleId;
use crate::rules::{self, Ctx, Options};

/// Judges objects as CREATEs against each other (mutation first, then validation; X4):
/// objects per kind and the findings, in the order of `manifests`. `audit` judges with this too;
/// stored objects have passed their schema, so it is not checked again.
pub fn judge(manifests: Vec<Manifest>, options: Options) -> (BTreeMap<Kind, usize>, Vec<Finding>) {
    let (objects, findings, _index) = judge_keeping_index(manifests, options);
    (objects, findings)
}

/// As `judge`, also handing back the index of every object (what `audit` reads for the findings
/// about stored objects over time, `rules::health`).
pub(crate) fn judge_keeping_index(
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
pub(super) struct Held {
    pub(super) source: Source,
    kind: Kind,
    version: String,
    pub(super) key: ObjKey,
    /// What its schema check found (taken while reading).
    schema: Vec<Finding>,
    /// What the mutation pass found: the values the patch fills in, a patch that cannot apply.
    mutation: Vec<Finding>,
    /// Fields holding unresolved template placeholders, with the placeholder (not judged).
    placeholders: Vec<(String, String)>,
    /// Why a declared kind's object cannot be read by its declaration (docs/kinds.md): it is not
    /// judged. Its validation says so too (an unavailable verdict, a denial here), so no caller
    /// passes it silently; `check` reports it as an input it could not judge instead.
    pub(super) not_judged: Option<String>,
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
pub(super) fn hold(
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
    // A declared kind's object is read by its declaration's expressions: one that cannot read
    // it (fails, exceeds a bound) leaves it not judged, said once (`not_judged`).
    let mut not_judged = None;
    let projection = steps.time(Step::Project, || {
        if !m.kind.is_declared() {
            return crate::model::project(m.kind, &object);
        }
        match crate::model::declared::read(m.kind, &object) {
            Ok(reading) => crate::model::project_read(m.kind, &object, Some(&reading)),
            Err(problem) => {
                not_judged = Some(problem);
                crate::model::project(m.kind, &object)
            }
        }
    });
    let held = Held {
        source: m.source.clone(),
        kind: m.kind,
        version: m.version.clone(),
        key: m.key.clone(),
        schema,
        mutation,
        placeholders,
        not_judged,
        object: std::sync::Mutex::new(Some(steps.time(Step::Pack, || Packed::new(&object)))),
    };
    (held, projection)
}

/// Judges held objects (and their `projections`) as CREATEs: objects per kind, the findings in
/// order, and the index they were judged against (so `check` can skip freeing it). `stored`:
/// objects that already exist (a cluster's), judged against but not judged themselves; an
/// object of `held` replaces a stored one of the same identity, as applying the file would.
pub(super) fn judge_held(
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
pub(super) fn not_judged(
    subject: &Subject,
    placeholders: &[(String, String)],
    found: &mut Vec<Finding>,
) {
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

pub(super) fn request<'a>(
    kind: Kind,
    version: &'a str,
    key: &'a ObjKey,
    object: &'a Value,
) -> Request<'a> {
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
pub(super) fn quiet(verdict: &Verdict) -> bool {
    verdict.errors.is_empty() && verdict.unavailable.is_none() && verdict.warnings.is_empty()
}

pub(super) fn record(subject: &Subject, verdict: &Verdict, out: &mut Vec<Finding>) {
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
