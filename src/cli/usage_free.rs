//! `ipam-guard usage --free [POOL]`: each pool's free ranges (what it hands out and nobody
//! holds), merged, largest first; prefix pools list their free sub-prefixes as CIDR blocks.
//! Read from the same view `usage` reads (files or a live cluster), in the same pool order.

use std::io::{self, BufWriter, Write};

use serde::Serialize;

use super::usage_entry::UsageEntry;
use super::{UsageArgs, UsageFormat};
use crate::address::format_range;
use crate::index::free::{FreeRun, PoolFree};
use crate::index::Index;

/// Runs `usage --free [POOL]` on a view already read (with the errors met reading it) and
/// returns the exit code: 2 when an input could not be read or POOL names no pool, else 0.
pub fn run(index: &Index, errors: Vec<String>, filter: &str, output: UsageFormat) -> i32 {
    let mut err = io::stderr().lock();
    for e in &errors {
        let _ = writeln!(err, "error: {e}");
    }
    let pools = select(index, filter);
    if pools.is_empty() && !filter.trim().is_empty() {
        let _ = writeln!(err, "error: no pool is named {filter:?}");
        return 2;
    }
    let mut out = BufWriter::new(io::stdout().lock());
    // A closed pipe (`usage --free | head`) is the reader's choice, not a failure.
    let _ = write(&mut out, &pools, output == UsageFormat::Json);
    let _ = out.flush();
    let free_runs: usize = pools.iter().map(|p| p.free.ranges().len()).sum();
    let _ = writeln!(err, "{} pools, {free_runs} free ranges", pools.len());
    if errors.is_empty() {
        0
    } else {
        2
    }
}

/// `usage --free dir/` binds `dir/` to the flag as POOL. Without other paths that would read a
/// cluster instead of the files: refused before any connection, with the spelling that works.
pub fn path_given_as_pool(args: &UsageArgs) -> Option<String> {
    let filter = args.free.as_deref()?;
    let looks_like_path = filter.contains('/')
        || filter.starts_with('.')
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|e| filter.ends_with(e));
    (args.paths.is_empty() && looks_like_path && std::path::Path::new(filter).exists()).then(|| {
        format!(
            "{filter:?} is a file or directory, read here as the POOL of --free: put paths before the flag (`ipam-guard usage {filter} --free`)"
        )
    })
}

/// The pools `filter` names (all when empty): by name, `namespace/name`, or as the usage table
/// writes them (`InClusterIPPool ns/name`). Kinds compare without regard to case.
pub fn select(index: &Index, filter: &str) -> Vec<PoolFree> {
    let filter = filter.trim();
    index
        .pool_free()
        .into_iter()
        .filter(|p| filter.is_empty() || names(p, filter))
        .collect()
}

fn names(p: &PoolFree, filter: &str) -> bool {
    let key = &p.usage.key;
    let ns_name = key.ns_name().to_string();
    if filter == &*key.name || filter == ns_name {
        return true;
    }
    match filter.split_once(' ') {
        Some((kind, rest)) => {
            rest.trim() == ns_name
                && (kind.eq_ignore_ascii_case(key.kind.name())
                    || kind.eq_ignore_ascii_case(&key.kind.to_string()))
        }
        None => false,
    }
}

/// Writes the free ranges of `pools` as `output` asks; `Err` only from the writer.
pub fn write(out: &mut impl Write, pools: &[PoolFree], json: bool) -> io::Result<()> {
    if json {
        write_json(out, pools)
    } else {
        write_text(out, pools)
    }
}

/// One block per pool: a heading with its free and allocatable figures, then one line per free
/// run (size right-aligned, then the range; a prefix pool's runs are its free CIDR blocks).
pub fn write_text(out: &mut impl Write, pools: &[PoolFree]) -> io::Result<()> {
    for p in pools {
        let u = &p.usage;
        let unit = match u.sub_prefix {
            Some(len) => format!("/{len} sub-prefixes"),
            None => "addresses".to_string(),
        };
        let family = u
            .family
            .map_or("no valid address".to_string(), |f| f.name().to_string());
        writeln!(
            out,
            "{} ({family}, address space {}): {} of {} {unit} free",
            u.key,
            u.space,
            u.free(),
            u.allocatable
        )?;
        let runs = p.runs_largest_first();
        if runs.is_empty() {
            writeln!(out, "  (none free)")?;
            continue;
        }
        let width = runs
            .iter()
            .map(|r| r.size.to_string().len())
            .max()
            .unwrap_or(1);
        for r in &runs {
            writeln!(out, "  {:>width$}  {}", r.size, run_text(p, r))?;
        }
    }
    Ok(())
}

/// A prefix pool's run is one CIDR block; an address pool's is a range (or one address).
fn run_text(p: &PoolFree, r: &FreeRun) -> String {
    match (p.usage.sub_prefix, r.cidrs.as_slice()) {
        (Some(_), [(ip, len)]) => format!("{ip}/{len}"),
        _ => format_range(r.family, r.range),
    }
}

#[derive(Debug, Serialize)]
struct FreeEntry {
    #[serde(flatten)]
    usage: UsageEntry,
    /// Largest first.
    free_ranges: Vec<RunEntry>,
}

#[derive(Debug, Serialize)]
struct RunEntry {
    first: String,
    last: String,
    /// In the pool's unit (`unit`): addresses, or sub-prefixes for a prefix pool.
    size: u128,
    /// The fewest CIDR blocks covering the run exactly.
    cidrs: Vec<String>,
}

/// One object per pool: `usage --output json`'s fields and `free_ranges`.
pub fn write_json(out: &mut impl Write, pools: &[PoolFree]) -> io::Result<()> {
    let entries: Vec<FreeEntry> = pools
        .iter()
        .map(|p| FreeEntry {
            usage: UsageEntry::from(&p.usage),
            free_ranges: p
                .runs_largest_first()
                .into_iter()
                .map(|r| RunEntry {
                    first: crate::address::Ip::new(r.family, r.range.start).to_string(),
                    last: crate::address::Ip::new(r.family, r.range.end).to_string(),
                    size: r.size,
                    cidrs: r
                        .cidrs
                        .iter()
                        .map(|(ip, len)| format!("{ip}/{len}"))
                        .collect(),
                })
                .collect(),
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &entries)?;
    writeln!(out)
}
