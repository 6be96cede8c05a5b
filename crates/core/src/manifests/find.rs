//! Finding the files to read: paths walked in sorted order, `--exclude` globs applied.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobSet;

use super::{LoadError, Source};

/// Every file to read under `paths`, in order, and how many were excluded. Paths that cannot be
/// read are errors; the others are still found.
pub(super) fn inputs(
    paths: &[PathBuf],
    exclude: &GlobSet,
    errors: &mut Vec<LoadError>,
) -> (Vec<Input>, usize) {
    let mut walk = Walk {
        inputs: Vec::new(),
        seen: HashSet::new(),
        errors,
        exclude,
        excluded: 0,
    };
    for path in paths {
        walk.collect(path, true);
    }
    (walk.inputs, walk.excluded)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Yaml,
    Json,
}

#[derive(Debug)]
pub(super) struct Input {
    /// As shown in messages: the path as given, joined with the entries walked below it.
    pub(super) name: Arc<str>,
    pub(super) path: Option<PathBuf>,
    pub(super) format: Format,
}

fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "yaml" | "yml" => Some(Format::Yaml),
        "json" => Some(Format::Json),
        _ => None,
    }
}

struct Walk<'a> {
    inputs: Vec<Input>,
    seen: HashSet<PathBuf>,
    errors: &'a mut Vec<LoadError>,
    exclude: &'a GlobSet,
    excluded: usize,
}

impl Walk<'_> {
    fn excluded(&self, path: &Path) -> bool {
        !self.exclude.is_empty()
            && (self.exclude.is_match(path)
                || path
                    .file_name()
                    .is_some_and(|n| self.exclude.is_match(Path::new(n))))
    }

    fn collect(&mut self, path: &Path, explicit: bool) {
        if path.as_os_str() != "-" && self.excluded(path) {
            self.excluded += 1;
            return;
        }
        collect(
            path,
            explicit,
            &mut self.inputs,
            &mut self.seen,
            self.errors,
            &mut |child| {
                if self.exclude.is_empty() {
                    return false;
                }
                let hit = self.exclude.is_match(child)
                    || child
                        .file_name()
                        .is_some_and(|n| self.exclude.is_match(Path::new(n)));
                if hit {
                    self.excluded += 1;
                }
                hit
            },
        );
    }
}

fn collect(
    path: &Path,
    explicit: bool,
    inputs: &mut Vec<Input>,
    seen: &mut HashSet<PathBuf>,
    errors: &mut Vec<LoadError>,
    skip: &mut dyn FnMut(&Path) -> bool,
) {
    let name: Arc<str> = Arc::from(path.to_string_lossy().as_ref());
    if explicit && path.as_os_str() == "-" {
        inputs.push(Input {
            name: Arc::from("-"),
            path: None,
            format: Format::Yaml,
        });
        return;
    }
    // Following symlinks is what a user expects; the canonical path both dedups a file named
    // twice and stops a symlink loop.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            errors.push(LoadError::new(Source::file(&name), e));
            return;
        }
    };
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if !seen.insert(canonical) {
        return;
    }
    if meta.is_dir() {
        let entries = match std::fs::read_dir(path) {
            Ok(rd) => rd,
            Err(e) => {
                errors.push(LoadError::new(Source::file(&name), e));
                return;
            }
        };
        let mut children: Vec<PathBuf> = Vec::new();
        for entry in entries {
            match entry {
                Ok(e) => {
                    if !e.file_name().to_string_lossy().starts_with('.') {
                        children.push(e.path());
                    }
                }
                Err(e) => errors.push(LoadError::new(Source::file(&name), e)),
            }
        }
        children.sort();
        for child in children {
            // Only manifests inside a directory: READMEs and scripts next to them are not errors.
            let is_dir = std::fs::metadata(&child).is_ok_and(|m| m.is_dir());
            if (is_dir || format_of(&child).is_some()) && !skip(&child) {
                collect(&child, false, inputs, seen, errors, skip);
            }
        }
    } else {
        inputs.push(Input {
            name,
            path: Some(path.to_path_buf()),
            format: format_of(path).unwrap_or(Format::Yaml),
        });
    }
}
