//! What reading a file gathers, apart from how it is read: `parse` (text → documents) and
//! `identify` (document → manifests) both fill a `FileResult` through the caller's `Each`, so
//! neither needs the other's file for it.

use std::collections::BTreeMap;

use super::template::Vars;
use super::{LoadError, Manifest, Other, Source};

/// What one file gave: its objects, each already through the caller's `each`.
#[derive(Debug)]
pub(super) struct FileResult<T = Manifest> {
    pub(super) manifests: Vec<T>,
    pub(super) errors: Vec<LoadError>,
    pub(super) skipped: BTreeMap<String, usize>,
    pub(super) skipped_at: Vec<(Source, String)>,
    pub(super) not_ipam: BTreeMap<String, usize>,
    pub(super) others: Vec<Other>,
    pub(super) not_objects: usize,
}

impl<T> Default for FileResult<T> {
    fn default() -> Self {
        FileResult {
            manifests: Vec::new(),
            errors: Vec::new(),
            skipped: BTreeMap::new(),
            skipped_at: Vec::new(),
            not_ipam: BTreeMap::new(),
            others: Vec::new(),
            not_objects: 0,
        }
    }
}

/// What a caller makes of each object, on the worker that read it, and which objects of kinds
/// ipam-guard does not judge it wants kept (by group and kind: those it has a CRD schema for).
pub(super) struct Each<'a, T> {
    pub(super) manifest: &'a (dyn Fn(Manifest) -> T + Sync + 'a),
    pub(super) keep_other: &'a (dyn Fn(&str, &str) -> bool + Sync + 'a),
    /// Template variables substituted into each file's text before it is parsed (`check --var`).
    pub(super) vars: Option<&'a Vars>,
}

impl<'a, T> Each<'a, T> {
    /// Every object of a served kind through `manifest`; no other object kept.
    pub(super) fn served(manifest: &'a (dyn Fn(Manifest) -> T + Sync + 'a)) -> Self {
        Each {
            manifest,
            keep_other: &|_, _| false,
            vars: None,
        }
    }
}

impl<T> FileResult<T> {
    pub(super) fn append(&mut self, other: FileResult<T>) {
        self.manifests.extend(other.manifests);
        self.errors.extend(other.errors);
        self.skipped_at.extend(other.skipped_at);
        self.others.extend(other.others);
        self.not_objects += other.not_objects;
        for (k, n) in other.skipped {
            *self.skipped.entry(k).or_default() += n;
        }
        for (k, n) in other.not_ipam {
            *self.not_ipam.entry(k).or_default() += n;
        }
    }
}
