//! Objects a cluster stores, judged as `check` judges files but taken one at a time as a list
//! streams in (`cluster::live::read`): each is mutated, projected and packed the moment it is
//! decoded, so a pass over 100k objects holds packed documents and projections, never the lists.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::patch::apply_add;
use super::phases::{Phases, Steps};
use super::pipeline::{hold, judge_held, quiet, request, Held};
use super::{Finding, Who};
use crate::cluster::live::read::Each;
use crate::cluster::WatchedObject;
use crate::index::Index;
use crate::kinds::Kind;
use crate::manifests::{Manifest, Source};
use crate::model::{ObjKey, Projection};
use crate::rules::{self, Options};

/// What findings about stored objects name as their file.
pub const FILE: &str = "cluster";

/// Which stored objects are judged; the others count only as what the judged ones are judged
/// against (their projections), so a namespace's audit keeps no other namespace's objects.
#[derive(Debug, Clone, Default)]
pub enum Judged {
    /// Every object (`audit`).
    #[default]
    All,
    /// Objects of this namespace (`audit -n NS`).
    Namespace(String),
    /// None: projections only (`check --kubeconfig`, `usage`).
    None,
}

impl Judged {
    /// Whether the object `key` names is one this pass judges.
    fn covers(&self, key: &ObjKey) -> bool {
        match self {
            Judged::All => true,
            Judged::Namespace(ns) => key.namespace.as_deref() == Some(ns.as_str()),
            Judged::None => false,
        }
    }
}

/// The objects of one cluster pass: `Each` for `cluster::live::read`, then `finish`.
#[derive(Default)]
pub struct Judging {
    judged: Judged,
    file: Option<Arc<str>>,
    held: Vec<Held>,
    /// Beside `held`, item for item.
    projections: Vec<Option<Projection>>,
    /// Objects not judged, as they count for the others.
    context: Vec<Projection>,
    steps: Steps,
}

impl Judging {
    /// Judges what `judged` selects, naming `file` as the source of every finding.
    pub fn new(judged: Judged, file: &str) -> Judging {
        Judging {
            judged,
            file: Some(Arc::from(file)),
            ..Judging::default()
        }
    }

    fn judges(&self, key: &ObjKey) -> bool {
        self.judged.covers(key)
    }

    /// The projections of the objects not judged (`check --kubeconfig`'s stored objects, and
    /// what `usage` counts).
    pub(crate) fn into_projections(self) -> Vec<Projection> {
        let mut all = self.context;
        all.extend(self.projections.into_iter().flatten());
        all
    }

    /// Judges the held objects as CREATEs against every object read: objects judged per kind,
    /// and the findings in the order the objects were read.
    /// `over_index` adds findings read from the whole index (the audit's H1–H3 and E1); only
    /// those about objects this pass judges are kept (`audit -n` reports its namespace alone).
    pub fn finish(
        self,
        options: Options,
        over_index: impl FnOnce(&Index) -> Vec<Finding>,
    ) -> (BTreeMap<Kind, usize>, Vec<Finding>) {
        let mut phases = Phases::start();
        let (objects, mut findings, index) = judge_held(
            self.held,
            self.projections,
            options,
            &self.context,
            &mut phases,
        );
        findings.extend(
            over_index(&index)
                .into_iter()
                .filter(|f| matches!(&f.subject.key, Who::Served(k) if self.judged.covers(k))),
        );
        // A command ends right after: freeing 100k projections one by one would only cost time.
        std::mem::forget(index);
        (objects, findings)
    }
}

impl Each for Judging {
    fn object(&mut self, kind: Kind, version: &str, mut obj: WatchedObject) {
        let Some(name) = obj.metadata.name.clone() else {
            return;
        };
        // What reading a file drops (`manifests`: metadata nothing reads) is not held for
        // stored objects either: at 100k objects it is megabytes of uids and versions.
        let meta = &mut obj.metadata;
        meta.uid = None;
        meta.resource_version = None;
        meta.generation = None;
        meta.generate_name = None;
        meta.finalizers = None;
        let key = ObjKey::new(kind, obj.metadata.namespace.as_deref(), &name);
        let object = obj.into_value(&crate::cluster::live::api_resource(kind, version));
        if !self.judges(&key) {
            // Stored objects others are checked against count as stored; a namespace's audit
            // counts the others as the whole audit would judge them: created, mutated first.
            let projection = match self.judged {
                Judged::None => crate::model::project(kind, &object),
                _ => project_as_created(kind, version, &key, &object),
            };
            self.context.extend(projection);
            return;
        }
        let file = self.file.get_or_insert_with(|| Arc::from(FILE));
        let m = Manifest {
            source: Source {
                file: file.clone(),
                document: None,
                item: None,
                line: None,
            },
            kind,
            version: version.to_string(),
            key,
            object,
        };
        let (held, projection) = hold(&m, |_| Vec::new(), Vec::new(), &self.steps);
        self.held.push(held);
        self.projections.push(projection);
    }
}

/// What an object counts as for the others when it is judged as a CREATE too: the projection of
/// the object the mutating webhook would leave (as `hold` projects it), with no document kept.
fn project_as_created(
    kind: Kind,
    version: &str,
    key: &ObjKey,
    object: &Value,
) -> Option<Projection> {
    let mut object = Cow::Borrowed(object);
    if kind.mutated() {
        let verdict = rules::mutate(&request(kind, version, key, &object));
        if !(quiet(&verdict) && verdict.patch.is_empty()) {
            for op in &verdict.patch {
                // A patch that cannot apply leaves the object as it is, as `hold` judges it.
                let _ = apply_add(object.to_mut(), op);
            }
        }
    }
    crate::model::project(kind, &object)
}
