//! The declared kinds of every `--kinds` file together: one numbered table. `install` makes them
//! known to the process as `Kind::Declared(n)`, so every reader that recognises a kind by group
//! and kind (`Kind::from_group_kind`: manifests, the model's pool references) and every table that
//! asks a kind for its facts (`Kind::info`) sees them as it sees the built-in kinds.

use std::sync::RwLock;

use super::load::{parse, DeclError, Declaration, Role};
use crate::kinds::{declare, Kind, KindInfo};

/// Each declared kind's declaration, at the place of its number (`Kind::Declared(n)`): what
/// its objects are read by. Leaked as `kinds::declare` leaks the facts, for the same reason; a
/// kind installed again points at its new declaration.
static INSTALLED: RwLock<Vec<Option<&'static Declaration>>> = RwLock::new(Vec::new());

/// The declaration of a declared kind; None for a built-in one (or a number nothing was
/// installed under).
pub fn declaration(kind: Kind) -> Option<&'static Declaration> {
    let Kind::Declared(n) = kind else {
        return None;
    };
    let table = INSTALLED
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    table.get(usize::from(n)).copied().flatten()
}

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

    /// Makes every declaration known to the process (`kinds::declare`), in the registry's
    /// order, and returns the kind each became. A group and kind installed before keeps its
    /// number and reads with the new declaration from now on. Each install leaks its
    /// declarations (a few hundred bytes a kind, once per file read).
    pub fn install(self) -> Result<Vec<Kind>, String> {
        // Held while the kinds are declared, so no reader finds a kind without its declaration.
        let mut table = INSTALLED
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut kinds = Vec::with_capacity(self.kinds.len());
        for declaration in self.kinds {
            let declaration: &'static Declaration = Box::leak(Box::new(declaration));
            let versions: Vec<&'static str> =
                declaration.versions.iter().map(String::as_str).collect();
            let kind = declare(KindInfo {
                kind: Kind::Declared(0),
                group: &declaration.group,
                name: &declaration.kind,
                plural: &declaration.plural,
                versions: Box::leak(versions.into_boxed_slice()),
                namespaced: declaration.namespaced,
                pool: declaration.role == Role::Pool,
            })?;
            let Kind::Declared(n) = kind else {
                return Err(format!("{} was not declared", declaration.kind));
            };
            let n = usize::from(n);
            if table.len() <= n {
                table.resize(n + 1, None);
            }
            table[n] = Some(declaration);
            kinds.push(kind);
        }
        Ok(kinds)
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
