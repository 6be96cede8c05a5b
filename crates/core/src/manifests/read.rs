//! Files to objects: every file read on its own worker, its text handed to the parser of its
//! format; one large JSON List split between idle cores. Apart from `parse` so that `split_list`,
//! which parses with `parse`, is chosen here and not by `parse` itself.

use std::io::Read;

use super::collect::{Each, FileResult};
use super::find::{Format, Input};
use super::parse::{parse_json, parse_yaml};
use super::{LoadError, Problem, Source};

/// Standard input as read (see `super::stdin_text`).
pub(super) static STDIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Parses inputs on every core (one file at a time per worker); results come back in input order.
/// With fewer files than cores, one large JSON `kind: List` is split between the idle cores
/// (`split_list`).
pub(super) fn parse_all<T: Send>(inputs: &[Input], each: &Each<T>) -> Vec<FileResult<T>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spare = (cores / inputs.len().max(1)).max(1);
    crate::par::map(inputs, 1, |input| parse_input(input, each, spare))
}

fn parse_input<T: Send>(input: &Input, each: &Each<T>, cores: usize) -> FileResult<T> {
    let bytes = match &input.path {
        Some(p) => std::fs::read(p),
        None => {
            let mut buf = Vec::new();
            std::io::stdin().lock().read_to_end(&mut buf).map(|_| {
                // Kept for whoever points at lines later (`check`): stdin cannot be read twice.
                let _ = STDIN.set(String::from_utf8_lossy(&buf).into_owned());
                buf
            })
        }
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            return FileResult {
                errors: vec![LoadError::new(Source::file(&input.name), e)],
                ..FileResult::default()
            }
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let problem = match input.format {
                Format::Yaml => Problem::Yaml(format!("not UTF-8 text ({e})")),
                Format::Json => Problem::Json(format!("not UTF-8 text ({e})")),
            };
            return FileResult {
                errors: vec![LoadError::new(Source::file(&input.name), problem)],
                ..FileResult::default()
            };
        }
    };
    // As clusterctl does, on the text: a value without line breaks leaves every line in place.
    let text = match each.vars {
        Some(vars) if text.contains('$') => super::template::substitute(&text, vars),
        _ => text,
    };
    match input.format {
        Format::Yaml => parse_yaml(&input.name, &text, each),
        Format::Json if cores > 1 && text.len() >= super::split_list::MIN_BYTES => {
            super::split_list::parse(&input.name, &text, each, cores)
                .unwrap_or_else(|| parse_json(&input.name, &text, each))
        }
        Format::Json => parse_json(&input.name, &text, each),
    }
}
