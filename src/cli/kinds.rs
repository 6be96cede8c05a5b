//! `--kinds FILE`: the `AddressKinds` files a command reads (docs/kinds.md), checked and
//! installed, so the kinds they declare are read and judged as the built-in ones.

use std::path::PathBuf;

use crate::declared::Registry;
use crate::kinds::Kind;

/// Reads every file, checks every declaration and makes the kinds known to the process. The
/// errors name the file, the entry and the problem, every one of them at once.
pub fn install(files: &[PathBuf]) -> Result<Vec<Kind>, Vec<String>> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let mut texts = Vec::with_capacity(files.len());
    let mut errors = Vec::new();
    for file in files {
        match std::fs::read_to_string(file) {
            Ok(text) => texts.push((file.display().to_string(), text)),
            Err(e) => errors.push(format!("--kinds {}: {e}", file.display())),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let registry = Registry::load(&texts)
        .map_err(|e| e.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    registry.install().map_err(|e| vec![e])
}
