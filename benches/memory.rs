//! Bytes the index holds per cached object, counted by a global allocator, for the state
//! `examples/gen-state.rs` generates (the live view keeps only these projections, never objects).
//! Not a criterion bench: it prints one table.
//!
//! `cargo bench --bench memory` (10k pools + 100k claims + 100k addresses + 10k Clusters, then
//! 100k pools and as many Clusters).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use ipam_guard::index::{Index, Object};
use ipam_guard::kinds::Kind;
use ipam_guard::model;
use serde_json::Value;

#[path = "support/mod.rs"]
mod support;

/// The system allocator, counting live bytes requested and live allocations. The library forbids
/// unsafe code; a `GlobalAlloc` cannot be written without it, so it lives here, in the bench.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static LIVE_ALLOCS: AtomicIsize = AtomicIsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the caller's layout and pointer unchanged; the
// counters are plain atomics and never touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size() as isize, 1);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size() as isize, 1);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        grew(-(layout.size() as isize), -1);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            grew(new_size as isize - layout.size() as isize, 0);
        }
        p
    }
}

fn grew(bytes: isize, allocs: isize) {
    let now = LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed) + bytes;
    LIVE_ALLOCS.fetch_add(allocs, Ordering::Relaxed);
    PEAK_BYTES.fetch_max(now.max(0) as usize, Ordering::Relaxed);
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Clone, Copy)]
struct Snapshot {
    bytes: isize,
    allocs: isize,
}

fn snapshot() -> Snapshot {
    Snapshot {
        bytes: LIVE_BYTES.load(Ordering::Relaxed),
        allocs: LIVE_ALLOCS.load(Ordering::Relaxed),
    }
}

fn object(doc: &Value) -> Option<(Kind, Object)> {
    let (kind, _) = Kind::from_api_version(doc["apiVersion"].as_str()?, doc["kind"].as_str()?)?;
    Some((kind, model::project(kind, doc)?))
}

/// Adds the objects of `kinds` to `index`, one kind group after another, and prints what each
/// group left allocated: the index's own bytes, projections and secondary indexes included.
fn measure(label: &str, index: &mut Index, docs: &[&Value], kinds: &[Kind]) {
    let before = snapshot();
    let mut n = 0usize;
    for doc in docs {
        if let Some((kind, o)) = object(doc) {
            if kinds.contains(&kind) {
                index.upsert(o);
                n += 1;
            }
        }
    }
    let after = snapshot();
    let bytes = after.bytes - before.bytes;
    let allocs = after.allocs - before.allocs;
    println!(
        "{label:<44} {n:>8} objects {:>10.1} MiB {:>7.0} B/object {:>5.2} allocations/object",
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / n.max(1) as f64,
        allocs as f64 / n.max(1) as f64,
    );
}

/// One Cluster per pool, as a management cluster of that many workload clusters holds: an IP
/// control-plane endpoint each, and the pod and service networks Cluster API's templates write.
fn clusters(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            serde_json::json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": format!("cluster-{i}"), "namespace": format!("team-{}", i % 50)},
                "spec": {
                    "controlPlaneEndpoint": {"host": format!("172.16.{}.{}", i / 250, i % 250 + 1), "port": 6443},
                    "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]},
                                       "services": {"cidrBlocks": ["10.128.0.0/12"]}}
                }
            })
        })
        .collect()
}

fn run(pools: usize, addresses: usize) {
    let files = support::objects(pools, addresses, 50);
    let docs: Vec<&Value> = files.values().flatten().collect();
    println!(
        "state: {pools} pools, {addresses} claims, {addresses} addresses (examples/gen-state.rs), {pools} Clusters"
    );
    let clusters = clusters(pools);
    let cluster_docs: Vec<&Value> = clusters.iter().collect();
    let start = snapshot();
    let mut index = Index::new();
    let pool_kinds = [Kind::InClusterIPPool, Kind::GlobalInClusterIPPool];
    measure("  pools", &mut index, &docs, &pool_kinds);
    measure("  claims", &mut index, &docs, &[Kind::IPAddressClaim]);
    measure("  addresses", &mut index, &docs, &[Kind::IPAddress]);
    measure("  clusters", &mut index, &cluster_docs, &[Kind::Cluster]);
    let end = snapshot();
    let total = index.len();
    let bytes = end.bytes - start.bytes;
    println!(
        "  {:<42} {total:>8} objects {:>10.1} MiB {:>7.0} B/object {:>5.2} allocations/object",
        "all",
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / total as f64,
        (end.allocs - start.allocs) as f64 / total as f64,
    );
    drop(index);
}

fn main() {
    // `cargo bench` passes `--bench`; this binary takes no options.
    run(10_000, 100_000);
    run(100_000, 100_000);
    println!(
        "peak live bytes during the run (generator output included): {:.1} MiB",
        PEAK_BYTES.load(Ordering::Relaxed) as f64 / (1 << 20) as f64
    );
}
