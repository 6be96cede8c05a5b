//! `ipam-guard usage`: how full each pool is, fullest first. On files (`usage PATH...`, read as
//! `check` reads them) or on a live cluster (`usage [--kubeconfig]`, read as `audit` reads it).
//! The figures are `Index::pool_usage`'s, the same the `ipam_guard_pool_addresses` metric exports.

use std::io::{self, BufWriter, Write};

use super::usage_entry::UsageEntry;
use super::{UsageArgs, UsageFormat};
use crate::cluster::{index_of, StaticView};
use crate::index::usage::PoolUsage;
use crate::judge::cluster::projections;
use crate::kinds::{Kind, KINDS};
use crate::manifests;

/// Width of the bar in text mode.
const BAR: usize = 20;

/// Share at or above which a pool counts as nearly full in the summary (the example alert's).
const NEARLY_FULL: f64 = 0.9;

/// Runs `usage` and returns the exit code: 2 when an input (or the cluster) could not be read,
/// else 0. The table goes to stdout, errors and the summary to stderr.
pub async fn run(args: &UsageArgs) -> i32 {
    if let Some(e) = super::usage_free::path_given_as_pool(args) {
        eprintln!("error: {e}");
        return 2;
    }
    let kinds = match pool_kinds(&args.kinds) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let (index, errors) = if args.paths.is_empty() {
        let (client, server) = match crate::cluster::live::client_and_server(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
        )
        .await
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {}", crate::cluster::live::describe(&e));
                return 2;
            }
        };
        // The kinds usage counts are those the live view keeps; only their projections are held.
        let (projections, errors) =
            projections(&client, &server, super::progress::for_stderr(args.quiet)).await;
        (index_of(projections), errors)
    } else {
        let loaded = manifests::read_paths(&args.paths);
        let errors = loaded.errors.iter().map(ToString::to_string).collect();
        (
            StaticView::from_manifests(loaded.manifests).into_index(),
            errors,
        )
    };
    if let Some(filter) = &args.free {
        return super::usage_free::run(&index, errors, filter, args.output);
    }
    let mut usage = index.pool_usage();
    // The process ends right after: freeing 100k projections one by one would only cost time.
    std::mem::forget(index);
    usage.retain(|u| {
        (kinds.is_empty() || kinds.contains(&u.key.kind))
            && args
                .namespace
                .as_ref()
                .is_none_or(|ns| u.key.namespace.as_deref() == Some(ns.as_str()))
    });
    let selected = usage.len();
    let nearly_full = usage
        .iter()
        .filter(|u| u.share_used() >= NEARLY_FULL)
        .count();
    if let Some(top) = args.top {
        usage.truncate(top);
    }
    let mut err = io::stderr().lock();
    for e in &errors {
        let _ = writeln!(err, "error: {e}");
    }
    let mut out = BufWriter::new(io::stdout().lock());
    // A closed pipe (`usage | head`) is the reader's choice, not a failure.
    let _ = match args.output {
        UsageFormat::Text => write_table(&mut out, &usage),
        UsageFormat::Json => write_json(&mut out, &usage),
    };
    let _ = out.flush();
    let shown = if usage.len() < selected {
        format!(" (the {} fullest shown: --top)", usage.len())
    } else {
        String::new()
    };
    let _ = writeln!(
        err,
        "{selected} pools, {nearly_full} at least {}% used{shown}",
        NEARLY_FULL * 100.0
    );
    if errors.is_empty() {
        0
    } else {
        2
    }
}

/// The pool kinds `--kind` names (by name or plural, any case); none: every pool kind.
fn pool_kinds(names: &[String]) -> Result<Vec<Kind>, String> {
    let pools = || KINDS.iter().filter(|k| k.pool);
    names
        .iter()
        .map(|name| {
            pools()
                .find(|k| k.name.eq_ignore_ascii_case(name) || k.plural.eq_ignore_ascii_case(name))
                .map(|k| k.kind)
                .ok_or_else(|| {
                    let known: Vec<&str> = pools().map(|k| k.name).collect();
                    format!(
                        "--kind {name}: not a pool kind; one of {}",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

pub fn write_json(out: &mut impl Write, usage: &[PoolUsage]) -> io::Result<()> {
    let entries: Vec<UsageEntry> = usage.iter().map(UsageEntry::from).collect();
    serde_json::to_writer_pretty(&mut *out, &entries)?;
    writeln!(out)
}

/// The table: one line per pool in the order given (fullest first), columns sized to fit.
pub fn write_table(out: &mut impl Write, usage: &[PoolUsage]) -> io::Result<()> {
    let rows: Vec<[String; 6]> = usage
        .iter()
        .map(|u| {
            [
                u.key.to_string(),
                u.allocatable.to_string(),
                u.used.to_string(),
                u.free().to_string(),
                percent(u.share_used()),
                bar(u),
            ]
        })
        .collect();
    let header = ["POOL", "ALLOCATABLE", "USED", "FREE", "USED%", ""];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(header.map(str::to_string)).chain(rows) {
        // The pool name left-aligned, figures right-aligned, the bar last.
        let line = format!(
            "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `37.5%`; a share that rounds to zero but is not zero reads `<0.1%`, one that rounds to 100
/// but leaves addresses free reads `>99.9%`.
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p > 0.0 && p < 0.05 {
        "<0.1%".to_string()
    } else if (99.95..100.0).contains(&p) {
        ">99.9%".to_string()
    } else {
        format!("{p:.1}%")
    }
}

/// `[#####...............]`, with `(+N held, not allocatable)` when objects referencing the pool hold
/// addresses it does not hand out.
fn bar(u: &PoolUsage) -> String {
    let share = u.share_used();
    let mut filled = (share * BAR as f64).round() as usize;
    // Never show an empty bar for a pool in use, nor a full one for a pool with room left.
    if u.used > 0 && filled == 0 {
        filled = 1;
    }
    if u.free() > 0 && filled == BAR {
        filled = BAR - 1;
    }
    let mut s = format!("[{}{}]", "#".repeat(filled), ".".repeat(BAR - filled));
    if let Some(len) = u.sub_prefix {
        // The figures of a prefix pool are sub-prefixes: say so on its own line.
        s.push_str(&format!(" /{len} sub-prefixes"));
    }
    if u.outside > 0 {
        s.push_str(&format!(" (+{} held, not allocatable)", u.outside));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Kind;
    use crate::model::ObjKey;
    use std::sync::Arc;

    fn u(name: &str, allocatable: u128, used: u128, outside: u128) -> PoolUsage {
        PoolUsage {
            key: ObjKey::new(Kind::InClusterIPPool, Some("ns"), name),
            space: Arc::from("default"),
            family: Some(crate::address::Family::V4),
            allocatable,
            used,
            outside,
            sub_prefix: None,
        }
    }

    #[test]
    fn table_has_a_bar_per_pool_and_aligned_columns() {
        let mut out = Vec::new();
        write_table(
            &mut out,
            &[
                u("full", 4, 4, 0),
                u("half", 10, 5, 2),
                u("huge", u128::from(u64::MAX), 1, 0),
                u("empty", 0, 0, 0),
            ],
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "\
POOL                               ALLOCATABLE  USED                  FREE   USED%
InClusterIPPool ns/full                      4     4                     0  100.0%  [####################]
InClusterIPPool ns/half                     10     5                     5   50.0%  [##########..........] (+2 held, not allocatable)
InClusterIPPool ns/huge   18446744073709551615     1  18446744073709551614   <0.1%  [#...................]
InClusterIPPool ns/empty                     0     0                     0  100.0%  [####################]
"
        );
    }

    #[test]
    fn prefix_pools_say_they_count_sub_prefixes() {
        let mut p = u("v6", 65536, 2, 0);
        p.key = ObjKey::new(Kind::InClusterPrefixPool, Some("ns"), "v6");
        p.sub_prefix = Some(64);
        let mut out = Vec::new();
        write_table(&mut out, &[p.clone()]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("[#...................] /64 sub-prefixes\n"),
            "{text}"
        );
        let mut out = Vec::new();
        write_json(&mut out, &[p]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\"unit\": \"sub-prefixes\""), "{text}");
        assert!(text.contains("\"allocation_prefix_length\": 64"), "{text}");
    }

    #[test]
    fn json_keeps_sizes_beyond_64_bits_as_integers() {
        let mut out = Vec::new();
        write_json(&mut out, &[u("everything", u128::MAX, 3, 0)]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("\"allocatable\": 340282366920938463463374607431768211455"),
            "{text}"
        );
        assert!(text.contains("\"namespace\": \"ns\""), "{text}");
        assert!(text.contains("\"share_used\": "), "{text}");
    }

    #[test]
    fn percentages_never_hide_a_pool_in_use_or_a_free_address() {
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(1e-9), "<0.1%");
        assert_eq!(percent(0.375), "37.5%");
        assert_eq!(percent(0.99999), ">99.9%");
        assert_eq!(percent(1.0), "100.0%");
    }
}
