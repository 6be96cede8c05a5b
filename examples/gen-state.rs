//! Writes a large, valid cluster state for `ipam-guard check` and `serve --state-from`:
//!
//! ```text
//! cargo run --release --example gen-state -- --pools 10000 --addresses 100000 --out /tmp/state
//! ipam-guard check /tmp/state        # exits 0: nothing in it is wrong
//! ```
//!
//! The shape follows what `kubectl get … -o yaml` prints for a management cluster running the
//! in-cluster IPAM provider: namespaced InClusterIPPools per workload-cluster namespace plus some
//! GlobalInClusterIPPools; one IPAddressClaim per address (created by CAPV for a machine NIC, with
//! owner references, finalizer and a Ready status) and the IPAddress that fulfils it. A quarter of
//! the pools are IPv6; pools are spread over three address spaces, and the same subnets are reused
//! in each space (separate data centres behind NAT), so overlap checks see identical ranges that
//! must not conflict. Output is deterministic.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Parser, ValueEnum};
use serde_json::{json, Value};

#[derive(Debug, Parser)]
#[command(about = "Write a valid IPAM state (pools, claims, addresses) as manifests")]
struct Args {
    /// Pools to write (every tenth is a GlobalInClusterIPPool).
    #[arg(long, default_value_t = 1000)]
    pools: usize,
    /// IPAddresses to write, each with its IPAddressClaim.
    #[arg(long, default_value_t = 10000)]
    addresses: usize,
    /// Namespaces (one per workload cluster) the namespaced objects are spread over.
    #[arg(long, default_value_t = 50)]
    namespaces: usize,
    /// Output directory (created; files in it are overwritten).
    #[arg(long)]
    out: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Yaml)]
    format: Format,
    /// Only the fields the rules read (name, namespace, labels, annotations, spec): no uid,
    /// timestamps, finalizers, owner references or status.
    #[arg(long)]
    lean: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Multi-document YAML, one file per namespace and kind.
    Yaml,
    /// A `kind: List` JSON document per file, as `kubectl get -o json` prints it.
    Json,
}

const SPACES: [&str; 3] = ["default", "dc-east", "dc-west"];
const GROUP: &str = "ipam.cluster.x-k8s.io";
/// Host offsets handed out per pool start here (below: gateway, excluded block).
const FIRST_HOST: usize = 20;
const MAX_PER_POOL: usize = 230;

struct Pool {
    kind: &'static str,
    name: String,
    namespace: Option<String>,
    v6: bool,
    /// Subnet number, unique within an address space.
    subnet: usize,
}

impl Pool {
    fn ip(&self, host: usize) -> String {
        let j = self.subnet;
        if self.v6 {
            // Ipv6Addr prints the canonical (RFC 5952) text; a hand-made `::0` would draw warnings.
            let (hi, lo) = ((j >> 16) as u16, (j & 0xffff) as u16);
            std::net::Ipv6Addr::new(0x2001, 0xdb8, hi, lo, 0, 0, 0, host as u16).to_string()
        } else {
            format!("10.{}.{}.{}", j >> 8, j & 0xff, host)
        }
    }
    fn prefix(&self) -> u8 {
        if self.v6 {
            64
        } else {
            24
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut files = generate(args.pools, args.addresses, args.namespaces)?;

    if args.lean {
        for doc in files.values_mut().flatten() {
            lean(doc);
        }
    }

    fs::create_dir_all(&args.out)?;
    let mut written = 0;
    for ((namespace, what), docs) in &files {
        let dir = if namespace.is_empty() {
            args.out.clone()
        } else {
            args.out.join(namespace)
        };
        fs::create_dir_all(&dir)?;
        let name = if namespace.is_empty() {
            format!("global-{what}")
        } else {
            what.to_string()
        };
        write(&dir, &name, args.format, docs)?;
        written += docs.len();
    }
    eprintln!(
        "wrote {written} objects ({} pools, {} claims, {} addresses) to {}",
        args.pools,
        args.addresses,
        args.addresses,
        args.out.display()
    );
    Ok(())
}

/// The objects `main` writes, by (namespace, file kind); `""` is cluster-scoped. Public because
/// `examples/loadgen.rs` and the benches include this file to load the same state in memory.
pub fn generate(
    pools: usize,
    addresses: usize,
    namespaces: usize,
) -> anyhow::Result<BTreeMap<(String, &'static str), Vec<Value>>> {
    let args = Sizes {
        pools,
        addresses,
        namespaces,
    };
    anyhow::ensure!(args.pools > 0, "--pools must be at least 1");
    anyhow::ensure!(args.namespaces > 0, "--namespaces must be at least 1");
    let per_pool = args.addresses.div_ceil(args.pools);
    anyhow::ensure!(
        per_pool <= MAX_PER_POOL,
        "{per_pool} addresses per pool do not fit in a /24: raise --pools"
    );
    anyhow::ensure!(
        args.pools.div_ceil(SPACES.len()) <= 1 << 16,
        "too many pools for 10.0.0.0/8 split into /24s per address space"
    );

    let ns = |i: usize| format!("cluster-{:03}", i % args.namespaces);
    let pools: Vec<Pool> = (0..args.pools)
        .map(|i| {
            let global = i % 10 == 0;
            Pool {
                kind: if global {
                    "GlobalInClusterIPPool"
                } else {
                    "InClusterIPPool"
                },
                name: format!("{}-{i:05}", if global { "shared" } else { "nodes" }),
                namespace: (!global).then(|| ns(i)),
                v6: i % 4 == 3,
                subnet: i / SPACES.len(),
            }
        })
        .collect();

    // namespace ("" for cluster-scoped) -> documents, per file kind.
    let mut files: BTreeMap<(String, &str), Vec<Value>> = Default::default();
    for (i, p) in pools.iter().enumerate() {
        let key = (p.namespace.clone().unwrap_or_default(), "pools");
        files.entry(key).or_default().push(pool_object(i, p));
    }
    for k in 0..args.addresses {
        let p = &pools[k % args.pools];
        let host = FIRST_HOST + k / args.pools;
        let namespace = p.namespace.clone().unwrap_or_else(|| ns(k));
        let name = format!("m-{k:06}");
        let (claim, address) = claim_and_address(k, &name, &namespace, p, host);
        files
            .entry((namespace.clone(), "claims"))
            .or_default()
            .push(claim);
        files
            .entry((namespace, "addresses"))
            .or_default()
            .push(address);
    }
    Ok(files)
}

struct Sizes {
    pools: usize,
    addresses: usize,
    namespaces: usize,
}

pub fn write(dir: &Path, name: &str, format: Format, docs: &[Value]) -> anyhow::Result<()> {
    match format {
        Format::Yaml => {
            let mut out = BufWriter::new(fs::File::create(dir.join(format!("{name}.yaml")))?);
            for d in docs {
                out.write_all(b"---\n")?;
                out.write_all(serde_yaml_ng::to_string(d)?.as_bytes())?;
            }
            out.flush()?;
        }
        Format::Json => {
            let list = json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {"resourceVersion": ""},
                "items": docs,
            });
            let out = BufWriter::new(fs::File::create(dir.join(format!("{name}.json")))?);
            serde_json::to_writer_pretty(out, &list)?;
        }
    }
    Ok(())
}

/// Strips what no rule reads, leaving the smallest manifests a user might keep in git.
fn lean(doc: &mut Value) {
    if let Some(o) = doc.as_object_mut() {
        o.remove("status");
    }
    if let Some(m) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
        m.retain(|k, _| matches!(k.as_str(), "name" | "namespace" | "labels" | "annotations"));
    }
}

/// A stable fake uid, so reruns write identical files.
fn uid(kind: u8, n: usize) -> String {
    format!("{kind:02x}000000-0000-4000-8000-{n:012x}")
}

fn metadata(name: &str, namespace: Option<&str>, uid: String, rv: usize) -> Value {
    let mut m = json!({
        "name": name,
        "uid": uid,
        "resourceVersion": rv.to_string(),
        "generation": 1,
        "creationTimestamp": "2025-03-14T09:26:53Z",
    });
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

fn pool_object(i: usize, p: &Pool) -> Value {
    let space = SPACES[i % SPACES.len()];
    let mut meta = metadata(&p.name, p.namespace.as_deref(), uid(1, i), 1000 + i);
    if space != "default" {
        meta["annotations"] = json!({ "ipam-guard.io/address-space": space });
    }
    // Half the pools are written as a range, half as the whole subnet with the first hosts
    // excluded: both shapes the provider's docs show.
    let (addresses, excluded) = if i.is_multiple_of(2) {
        (
            vec![format!(
                "{}-{}",
                p.ip(FIRST_HOST),
                p.ip(FIRST_HOST + MAX_PER_POOL)
            )],
            vec![],
        )
    } else if p.v6 {
        (
            vec![format!("{}/64", p.ip(0))],
            vec![format!("{}-{}", p.ip(2), p.ip(FIRST_HOST - 1))],
        )
    } else {
        (
            vec![format!("{}/24", p.ip(0))],
            vec![format!("{}/28", p.ip(0)), p.ip(16)],
        )
    };
    let mut spec = json!({
        "addresses": addresses,
        "gateway": p.ip(1),
        "prefix": p.prefix(),
    });
    if !excluded.is_empty() {
        spec["excludedAddresses"] = json!(excluded);
    }
    json!({
        "apiVersion": format!("{GROUP}/v1alpha2"),
        "kind": p.kind,
        "metadata": meta,
        "spec": spec,
    })
}

fn claim_and_address(
    k: usize,
    name: &str,
    namespace: &str,
    p: &Pool,
    host: usize,
) -> (Value, Value) {
    let cluster = namespace.to_string();
    let pool_ref = json!({"apiGroup": GROUP, "kind": p.kind, "name": p.name});
    let mut claim_meta = metadata(name, Some(namespace), uid(2, k), 100_000 + 2 * k);
    claim_meta["labels"] = json!({ "cluster.x-k8s.io/cluster-name": cluster });
    claim_meta["finalizers"] = json!(["ipam.cluster.x-k8s.io/ReleaseAddress"]);
    claim_meta["ownerReferences"] = json!([{
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "VSphereVM",
        "name": format!("{cluster}-md-0-{k:06}"),
        "uid": uid(4, k),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    let claim = json!({
        "apiVersion": format!("{GROUP}/v1beta2"),
        "kind": "IPAddressClaim",
        "metadata": claim_meta,
        "spec": {"clusterName": cluster, "poolRef": pool_ref},
        "status": {
            "addressRef": {"name": name},
            "conditions": [{
                "type": "Ready", "status": "True",
                "lastTransitionTime": "2025-03-14T09:26:54Z", "reason": "Allocated",
                "message": ""
            }]
        }
    });
    let mut addr_meta = metadata(name, Some(namespace), uid(3, k), 100_001 + 2 * k);
    addr_meta["finalizers"] = json!(["ipam.cluster.x-k8s.io/ProtectAddress"]);
    addr_meta["ownerReferences"] = json!([{
        "apiVersion": format!("{GROUP}/v1beta2"),
        "kind": "IPAddressClaim",
        "name": name,
        "uid": uid(2, k),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    let address = json!({
        "apiVersion": format!("{GROUP}/v1beta2"),
        "kind": "IPAddress",
        "metadata": addr_meta,
        "spec": {
            "address": p.ip(host),
            "prefix": p.prefix(),
            "gateway": p.ip(1),
            "claimRef": {"name": name},
            "poolRef": pool_ref,
        }
    });
    (claim, address)
}
