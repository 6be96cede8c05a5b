//! The declared kinds of every `--kinds` file together: one numbered table, so a kind can later be
//! named by its index the way a built-in one is named by `Kind`.

use super::load::{parse, DeclError, Declaration};

/// Every declaration of the files read, in file order then entry order.
#[derive(Debug, Default)]
pub struct Registry {
    kinds: Vec<Declaration>,
    /// The file each declaration came from, for errors and logs.
    files: Vec<String>,
}

impl Registry {
    /// Reads `(file name, text)` pairs. A kind declared in two files is an error naming both;
    /// every file's errors come back together.
    pub fn load(files: &[(String, String)]) -> Result<Registry, Vec<DeclError>> {
        let mut registry = Registry::default();
        let mut errors = Vec::new();
        for (file, text) in files {
            match parse(file, text) {
                Ok(kinds) => {
                    for (i, d) in kinds.into_iter().enumerate() {
                        if let Some(first) = registry.find(&d.group, &d.kind) {
                            errors.push(DeclError {
                                file: file.clone(),
                                entry: Some((i, Some(d.kind.clone()))),
                                problem: format!(
                                    "{} of group {} is already declared in {}",
                                    d.kind,
                                    d.group,
                                    registry.files[usize::from(first)]
                                ),
                            });
                            continue;
                        }
                        registry.kinds.push(d);
                        registry.files.push(file.clone());
                    }
                }
                Err(mut e) => errors.append(&mut e),
            }
        }
        if registry.kinds.len() > usize::from(u16::MAX) {
            errors.push(DeclError {
                file: files.last().map(|(f, _)| f.clone()).unwrap_or_default(),
                entry: None,
                problem: format!("more than {} declared kinds", u16::MAX),
            });
        }
        if errors.is_empty() {
            Ok(registry)
        } else {
            Err(errors)
        }
    }

    /// The index of the kind declared with this group and kind.
    pub fn find(&self, group: &str, kind: &str) -> Option<u16> {
        self.kinds
            .iter()
            .position(|d| d.group == group && d.kind == kind)
            .and_then(|i| u16::try_from(i).ok())
    }

    pub fn get(&self, index: u16) -> Option<&Declaration> {
        self.kinds.get(usize::from(index))
    }

    /// The file a declaration came from.
    pub fn file(&self, index: u16) -> Option<&str> {
        self.files.get(usize::from(index)).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Declaration> {
        self.kinds.iter()
    }
}

impl Declaration {
    /// How messages and `check` name the kind: as kubectl prints it, the bare kind.
    pub fn display_name(&self) -> &str {
        &self.kind
    }

    pub fn serves_version(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }
}
