//! The AdmissionReviews the replay tests read (`tests/fixtures/reviews/<server>/`), recorded
//! here from a real kube-apiserver: a webhook that admits everything and keeps each body it is
//! POSTed (`e2e::recorder`) is registered for every kind of the table, and a client writes the
//! objects below through the API server as kubectl would (create, other served versions, label,
//! patch, replace, server-side apply, dry-run, status, finalizers, delete).
//!
//! A normal run records them again into a temp dir and fails when they differ from the
//! committed ones in anything but what varies per run (uids, timestamps, resourceVersions),
//! so the fixtures stay what the API server sends. The committed sets are recorded again,
//! against every API server found, with
//!
//!     IPAM_GUARD_RECAPTURE=1 cargo test -p ipam-guard-e2e --test e2e_capture -- --nocapture
//!
//! which rewrites `tests/fixtures/reviews/v<major>.<minor>/` for each (a review alike but for
//! what varies per run is left as it was). The CRDs are upstream's,
//! read in place from `../shared/fixtures/crds/`; without them (or without an API server) this
//! test skips with a line saying why, and the replay tests still read the committed sets.

mod e2e;

use std::collections::BTreeMap;
use std::path::Path;

use e2e::api::*;
use e2e::recorder::Recorder;
use e2e::{ControlPlane, Version};
use http::Method;
use serde_json::{json, Value};

const NS: &str = "capture-ns";
const ECO: &str = "capture-eco";
const RECAPTURE: &str = "IPAM_GUARD_RECAPTURE";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_capture_the_committed_reviews_are_what_the_api_server_sends() {
    e2e::each_server(
        "e2e_capture_the_committed_reviews_are_what_the_api_server_sends",
        against,
    )
    .await;
}

/// Where the set recorded from servers of `version`'s minor release is kept, from the project
/// root.
fn committed_dir(version: Version) -> String {
    format!(
        "tests/fixtures/reviews/v{}.{}",
        version.major, version.minor
    )
}

async fn against(server: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&server).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, NS).await;
    create_namespace(&client, ECO).await;
    let recorder = Recorder::start().await;
    recorder.register(&client).await;
    let mut c = Capture {
        client,
        recorder,
        reviews: BTreeMap::new(),
    };
    c.wait_until_recording().await;
    capi(&mut c).await;
    metal3(&mut c).await;
    spiderpool(&mut c).await;
    vsphere(&mut c).await;

    let shown = committed_dir(server.version);
    let dir = e2e::repo_root().join(&shown);
    if std::env::var_os(RECAPTURE).is_some() {
        // A review alike with its committed one but for what varies per run keeps its bytes,
        // so that a recapture changes only what the API server now sends differently.
        let committed = read_set(&dir).unwrap_or_default();
        for (name, body) in c.reviews.iter_mut() {
            if let Some(old) = committed.get(name) {
                let one = |b: &Vec<u8>| BTreeMap::from([(name.clone(), b.clone())]);
                if compare(&one(old), &one(body)).is_empty() {
                    body.clone_from(old);
                }
            }
        }
        write_set(&dir, &c.reviews);
        e2e::note(format!("recorded {} reviews into {shown}", c.reviews.len()));
        return;
    }
    let Some(committed) = read_set(&dir) else {
        e2e::note(format!(
            "nothing compared: no committed set for this release ({shown} is absent; {RECAPTURE}=1 records it)"
        ));
        return;
    };
    let fresh = tempfile::Builder::new()
        .prefix("ipam-guard-capture-")
        .tempdir()
        .unwrap();
    write_set(fresh.path(), &c.reviews);
    let differences = compare(&committed, &c.reviews);
    if !differences.is_empty() {
        let kept = fresh.keep();
        panic!(
            "the API server no longer sends what {shown} holds ({} kept for a diff; {RECAPTURE}=1 records them again):\n{}",
            kept.display(),
            differences.join("\n")
        );
    }
    e2e::note(format!("{} reviews alike with {shown}", committed.len()));
}

struct Capture {
    client: kube::Client,
    recorder: Recorder,
    /// File stem (`<kind>-<operation>[-<variant>]`) to the body as POSTed.
    reviews: BTreeMap<String, Vec<u8>>,
}

impl Capture {
    /// The API server takes a new webhook registration into use a moment after storing it:
    /// dry-run creates of a kind both webhooks see until both are called, so that no step below
    /// goes unrecorded.
    async fn wait_until_recording(&self) {
        let probe = json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
            "metadata": {"name": "recorder-probe", "namespace": NS},
            "spec": {"poolRef": pool_ref("InClusterIPPool", "pool-a")}
        });
        e2e::eventually("both recorders to be called", WAIT, || async {
            create(&self.client, &probe, true).await.expect(201);
            let paths: Vec<String> = self.recorder.take().into_iter().map(|(p, _)| p).collect();
            ["/validate", "/mutate"]
                .iter()
                .all(|p| paths.iter().any(|q| q == p))
        })
        .await;
    }

    /// Keeps the reviews of the write just answered `resp`: the validating one under `name`,
    /// the mutating one (kinds ipam-guard mutates, CREATE and UPDATE) under `mutating/name`.
    /// The API server may ask twice for one write: an update is tried first on the object its
    /// cache holds, and when that turns out stale (a DELETE just set `deletionTimestamp`), again
    /// on the stored one. The last of each is kept, the one of the write that was stored.
    #[track_caller]
    fn keep(&mut self, name: &str, resp: Resp, status: u16) {
        resp.expect(status);
        let bodies = self.recorder.take();
        for (path, stem) in [
            ("/validate", name.to_string()),
            ("/mutate", format!("mutating/{name}")),
        ] {
            let Some((_, body)) = bodies.iter().rev().find(|(p, _)| p == path) else {
                assert!(path == "/mutate", "{name}: the recorder was not called");
                continue;
            };
            let old = self.reviews.insert(stem.clone(), body.to_vec());
            assert!(old.is_none(), "{stem} recorded twice");
        }
    }

    async fn create(&mut self, name: &str, obj: Value) {
        let r = create(&self.client, &obj, false).await;
        self.keep(name, r, 201);
    }

    async fn merge(&mut self, name: &str, obj: &Value, patch: Value) {
        let r = merge_patch(&self.client, obj, patch).await;
        self.keep(name, r, 200);
    }

    /// What `kubectl label … tier=gold --overwrite` sends.
    async fn label(&mut self, name: &str, obj: &Value) {
        let patch = json!({"metadata": {"labels": {"tier": "gold"}}});
        self.merge(name, obj, patch).await;
    }

    /// What `kubectl patch --type=json` sends.
    async fn json_patch(&mut self, name: &str, obj: &Value, patch: Value) {
        let r = call(
            &self.client,
            Method::PATCH,
            &item_path(obj),
            Some(&patch),
            "application/json-patch+json",
        )
        .await;
        self.keep(name, r, 200);
    }

    async fn delete(&mut self, name: &str, obj: &Value) {
        let r = delete(&self.client, obj).await;
        self.keep(name, r, 200);
    }
}

fn capi_obj(version: &str, kind: &str, name: &str, namespaced: bool, spec: Value) -> Value {
    let mut metadata = json!({"name": name, "labels": {"env": "test"}});
    if namespaced {
        metadata["namespace"] = json!(NS);
    }
    json!({
        "apiVersion": format!("ipam.cluster.x-k8s.io/{version}"), "kind": kind,
        "metadata": metadata, "spec": spec
    })
}

fn pool_ref(kind: &str, name: &str) -> Value {
    json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": kind, "name": name})
}

fn address_spec(address: &str) -> Value {
    json!({
        "address": address, "prefix": 24, "gateway": "10.10.0.1",
        "claimRef": {"name": "claim-a"}, "poolRef": pool_ref("InClusterIPPool", "pool-a")
    })
}

/// Cluster API's kinds in namespace `capture-ns`: pool-a, global-pool-a, claim-a and addr-a
/// through their storage versions, then one object of each older served version.
async fn capi(c: &mut Capture) {
    let pool = capi_obj(
        "v1alpha2",
        "InClusterIPPool",
        "pool-a",
        true,
        json!({"addresses": ["10.10.0.10-10.10.0.20", "10.10.0.32/28"], "prefix": 24, "gateway": "10.10.0.1"}),
    );
    let global = capi_obj(
        "v1alpha2",
        "GlobalInClusterIPPool",
        "global-pool-a",
        false,
        json!({"addresses": ["2001:db8::10-2001:db8::20"], "excludedAddresses": ["2001:db8::15"],
               "prefix": 64, "gateway": "2001:db8::1"}),
    );
    let claim_spec = |name: &str| json!({"clusterName": "workload-1", "poolRef": pool_ref("InClusterIPPool", name)});
    let claim = capi_obj(
        "v1beta2",
        "IPAddressClaim",
        "claim-a",
        true,
        claim_spec("pool-a"),
    );
    let address = capi_obj(
        "v1beta2",
        "IPAddress",
        "addr-a",
        true,
        address_spec("10.10.0.10"),
    );
    c.create("inclusterippool-create", pool.clone()).await;
    c.create("globalinclusterippool-create", global.clone())
        .await;
    c.create("ipaddressclaim-create", claim.clone()).await;
    c.create("ipaddress-create", address.clone()).await;

    c.label("inclusterippool-update-label", &pool).await;
    c.label("globalinclusterippool-update-label", &global).await;
    c.label("ipaddressclaim-update-label", &claim).await;
    c.label("ipaddress-update-label", &address).await;

    let spec = json!({"spec": {"addresses": ["10.10.0.10-10.10.0.30"], "gateway": "10.10.0.254"}});
    c.merge("inclusterippool-update-spec", &pool, spec).await;
    let spec = json!({"spec": {"excludedAddresses": ["2001:db8::15", "2001:db8::16"]}});
    c.merge("globalinclusterippool-update-spec", &global, spec)
        .await;
    let spec = json!({"spec": {"poolRef": pool_ref("GlobalInClusterIPPool", "global-pool-a")}});
    c.merge("ipaddressclaim-update-spec", &claim, spec).await;
    let spec = json!([{"op": "replace", "path": "/spec/address", "value": "10.10.0.11"}]);
    c.json_patch("ipaddress-update-spec", &address, spec).await;

    // `kubectl replace`: a PUT of the whole object as stored, with a new prefix.
    let mut stored = get(&c.client, &pool).await.expect(200).body.clone();
    stored["spec"]["prefix"] = json!(25);
    stored["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    let r = call(
        &c.client,
        Method::PUT,
        &item_path(&pool),
        Some(&stored),
        "application/json",
    )
    .await;
    c.keep("inclusterippool-update-replace", r, 200);

    // `--dry-run=server`: the review says `dryRun: true` and nothing is stored.
    let dry = capi_obj(
        "v1beta2",
        "IPAddressClaim",
        "claim-dry",
        true,
        claim_spec("pool-a"),
    );
    let r = create(&c.client, &dry, true).await;
    c.keep("ipaddressclaim-create-dryrun", r, 201);
    let back = json!({"spec": {"poolRef": pool_ref("InClusterIPPool", "pool-a")}});
    let path = format!("{}?dryRun=All", item_path(&claim));
    let r = call(
        &c.client,
        Method::PATCH,
        &path,
        Some(&back),
        "application/merge-patch+json",
    )
    .await;
    c.keep("ipaddressclaim-update-dryrun", r, 200);

    // `kubectl apply --server-side`: an apply patch that creates.
    let ssa = capi_obj(
        "v1beta2",
        "IPAddressClaim",
        "claim-ssa",
        true,
        claim_spec("pool-a"),
    );
    let path = format!("{}?fieldManager=ipam-guard-capture", item_path(&ssa));
    let r = call(
        &c.client,
        Method::PATCH,
        &path,
        Some(&ssa),
        "application/apply-patch+yaml",
    )
    .await;
    c.keep("ipaddressclaim-create-ssa", r, 201);

    // Older served versions: no conversion webhook, so the review carries the version written.
    let old_pool = json!({"subnet": "10.20.0.0/24", "start": "10.20.0.10", "end": "10.20.0.20",
                          "prefix": 24, "gateway": "10.20.0.1"});
    let old_pool = capi_obj(
        "v1alpha1",
        "InClusterIPPool",
        "pool-v1alpha1",
        true,
        old_pool,
    );
    c.create("inclusterippool-create-v1alpha1", old_pool).await;
    let old_global = json!({"addresses": ["192.0.2.0/28"], "prefix": 24, "gateway": "192.0.2.1"});
    let old_global = capi_obj(
        "v1alpha1",
        "GlobalInClusterIPPool",
        "global-pool-v1alpha1",
        false,
        old_global,
    );
    c.create("globalinclusterippool-create-v1alpha1", old_global)
        .await;
    let alpha_claim = json!({"poolRef": pool_ref("InClusterIPPool", "pool-a")});
    let alpha_claim = capi_obj(
        "v1alpha1",
        "IPAddressClaim",
        "claim-v1alpha1",
        true,
        alpha_claim,
    );
    c.create("ipaddressclaim-create-v1alpha1", alpha_claim)
        .await;
    let beta_claim = capi_obj(
        "v1beta1",
        "IPAddressClaim",
        "claim-v1beta1",
        true,
        claim_spec("pool-a"),
    );
    c.create("ipaddressclaim-create-v1beta1", beta_claim).await;
    for version in ["v1alpha1", "v1beta1"] {
        let name = format!("addr-{version}");
        let old = capi_obj(
            version,
            "IPAddress",
            &name,
            true,
            address_spec("10.10.0.10"),
        );
        c.create(&format!("ipaddress-create-{version}"), old).await;
    }

    c.delete("ipaddress-delete", &address).await;
    c.delete("ipaddressclaim-delete", &claim).await;
    c.delete("inclusterippool-delete", &pool).await;
    c.delete("globalinclusterippool-delete", &global).await;
    let path = format!("{}?dryRun=All", item_path(&ssa));
    let r = call(&c.client, Method::DELETE, &path, None, "application/json").await;
    c.keep("ipaddressclaim-delete-dryrun", r, 200);
}

fn eco_meta(name: &str) -> Value {
    json!({"name": name, "namespace": ECO, "labels": {"cluster.x-k8s.io/cluster-name": "workload-1"}})
}

/// Metal3's IPPool, IPClaim and IPAddress in `capture-eco`; the address carries the finalizer
/// Metal3's controller puts on it, so its DELETE is followed by the UPDATE that removes it.
async fn metal3(c: &mut Capture) {
    const CLAIM: &str = "test1-controlplane-template-0-provisioning-pool";
    let pool = json!({
        "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
        "metadata": eco_meta("provisioning-pool"),
        "spec": {
            "clusterName": "workload-1", "namePrefix": "test1-prov",
            "pools": [
                {"start": "192.168.0.10", "end": "192.168.0.30", "prefix": 25, "gateway": "192.168.0.1"},
                {"subnet": "192.168.1.0/26"},
                {"subnet": "192.168.1.128/25", "dnsServers": ["192.168.1.2"]}
            ],
            "prefix": 24, "gateway": "192.168.1.1", "dnsServers": ["8.8.8.8", "8.8.4.4"],
            "preAllocations": {"claim1": "192.168.0.12"}
        }
    });
    let claim = json!({
        "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
        "metadata": eco_meta(CLAIM),
        "spec": {"pool": {"name": "provisioning-pool", "namespace": ECO}}
    });
    let mut address = json!({
        "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
        "metadata": eco_meta("test1-prov-192-168-0-13"),
        "spec": {
            "address": "192.168.0.13", "prefix": 25, "gateway": "192.168.0.1",
            "dnsServers": ["8.8.8.8", "8.8.4.4"],
            "claim": {"name": CLAIM, "namespace": ECO},
            "pool": {"name": "provisioning-pool", "namespace": ECO}
        }
    });
    address["metadata"]["finalizers"] = json!(["ipaddress.ipam.metal3.io"]);
    c.create("metal3-ippool-create", pool.clone()).await;
    c.create("metal3-ipclaim-create", claim.clone()).await;
    c.create("metal3-ipaddress-create", address.clone()).await;
    c.label("metal3-ippool-update-label", &pool).await;
    c.label("metal3-ipclaim-update-label", &claim).await;
    c.label("metal3-ipaddress-update-label", &address).await;
    let spec = json!([
        {"op": "replace", "path": "/spec/pools/0/end", "value": "192.168.0.40"},
        {"op": "add", "path": format!("/spec/preAllocations/{CLAIM}"), "value": "192.168.0.13"}
    ]);
    c.json_patch("metal3-ippool-update-spec", &pool, spec).await;
    let spec = json!({"spec": {"pool": {"name": "provisioning-pool-b"}}});
    c.merge("metal3-ipclaim-update-spec", &claim, spec).await;
    let spec = json!([{"op": "replace", "path": "/spec/address", "value": "192.168.0.14"}]);
    c.json_patch("metal3-ipaddress-update-spec", &address, spec)
        .await;
    c.delete("metal3-ipaddress-delete", &address).await;
    let unfinalize = json!([{"op": "remove", "path": "/metadata/finalizers"}]);
    c.json_patch("metal3-ipaddress-update-finalizer", &address, unfinalize)
        .await;
    c.delete("metal3-ipclaim-delete", &claim).await;
    c.delete("metal3-ippool-delete", &pool).await;
}

/// Spiderpool's cluster-scoped SpiderIPPool, IPv4 and IPv6. Its status is written through the
/// status subresource as Spiderpool's controller writes it (`allocatedIPs` a JSON string), which
/// the later reviews carry.
async fn spiderpool(c: &mut Capture) {
    let spider = |name: &str, spec: Value| {
        json!({
            "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": name, "labels": {"env": "test"}}, "spec": spec
        })
    };
    let v4 = spider(
        "vlan100-v4",
        json!({
            "ipVersion": 4, "subnet": "172.18.41.0/24",
            "ips": ["172.18.41.40-172.18.41.50", "172.18.41.60"], "excludeIPs": ["172.18.41.45"],
            "gateway": "172.18.41.1", "routes": [{"dst": "172.18.0.0/16", "gw": "172.18.41.254"}],
            "podAffinity": {"matchLabels": {"app": "web"}}
        }),
    );
    let v6 = spider(
        "vlan100-v6",
        json!({
            "ipVersion": 6, "subnet": "fd00:172:18::/64", "ips": ["fd00:172:18::100-fd00:172:18::1ff"],
            "excludeIPs": ["fd00:172:18::150"], "gateway": "fd00:172:18::1"
        }),
    );
    c.create("spiderippool-create", v4.clone()).await;
    c.create("spiderippool-create-ipv6", v6).await;
    let allocated = json!({"172.18.41.40": {"pod": "default/web-0", "podUid": "5c3b9b8e-4a8e-4b8a-9d6f-1f2e3d4c5b6a"}});
    let status = json!({"status": {
        "allocatedIPs": allocated.to_string(), "allocatedIPCount": 1, "totalIPCount": 11
    }});
    let path = format!("{}/status", item_path(&v4));
    let r = call(
        &c.client,
        Method::PATCH,
        &path,
        Some(&status),
        "application/merge-patch+json",
    )
    .await;
    r.expect(200);
    assert!(
        c.recorder.take().is_empty(),
        "a status write is not reviewed"
    );
    c.label("spiderippool-update-label", &v4).await;
    let spec = json!({"spec": {"ips": ["172.18.41.40-172.18.41.55", "172.18.41.60"],
                               "excludeIPs": ["172.18.41.45", "172.18.41.46"]}});
    c.merge("spiderippool-update-spec", &v4, spec).await;
    c.delete("spiderippool-delete", &v4).await;
}

/// CAPV's VSphereMachine and VSphereMachineTemplate, whose devices take addresses from pools.
async fn vsphere(c: &mut Capture) {
    let machine_spec = |version: &str| {
        let mut spec = json!({
            "server": "vcenter.example.com", "datacenter": "DC0", "datastore": "vsanDatastore",
            "folder": "/DC0/vm/capi", "resourcePool": "/DC0/host/DC0_C0/Resources/capi",
            "storagePolicyName": "vSAN Default Storage Policy",
            "template": "ubuntu-2204-kube-v1.30.0", "cloneMode": "linkedClone",
            "thumbprint": "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD",
            "numCPUs": 2, "memoryMiB": 8192, "diskGiB": 25, "os": "Linux",
            "network": {"devices": [{
                "networkName": "VM Network", "dhcp4": false, "dhcp6": false,
                "nameservers": ["10.10.0.2"],
                "addressesFromPools": [pool_ref("InClusterIPPool", "vsphere-node-pool")]
            }]}
        });
        if version == "v1beta2" {
            spec["powerOffMode"] = json!("trySoft");
        }
        spec
    };
    let object = |version: &str, kind: &str, name: &str, spec: Value| {
        json!({
            "apiVersion": format!("infrastructure.cluster.x-k8s.io/{version}"), "kind": kind,
            "metadata": {"name": name, "namespace": ECO}, "spec": spec
        })
    };
    let machine = |version: &str, name: &str| {
        let mut m = object(version, "VSphereMachine", name, machine_spec(version));
        m["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "workload-1",
                                         "cluster.x-k8s.io/deployment-name": "workload-1-md-0"});
        m
    };
    let template = |version: &str, name: &str| {
        let spec = json!({"template": {"spec": machine_spec(version)}});
        object(version, "VSphereMachineTemplate", name, spec)
    };
    let t = template("v1beta2", "workload-1-worker");
    let m = machine("v1beta2", "workload-1-worker-x7k2p");
    c.create("vspheremachinetemplate-create", t.clone()).await;
    c.create("vspheremachine-create", m.clone()).await;
    c.label("vspheremachinetemplate-update-label", &t).await;
    c.label("vspheremachine-update-label", &m).await;
    let spec = json!([{"op": "replace", "value": "vsphere-node-pool-b",
                       "path": "/spec/template/spec/network/devices/0/addressesFromPools/0/name"}]);
    c.json_patch("vspheremachinetemplate-update-spec", &t, spec)
        .await;
    let spec = json!([{"op": "add", "path": "/spec/network/devices/0/addressesFromPools/-",
                       "value": pool_ref("GlobalInClusterIPPool", "vsphere-node-pool-v6")}]);
    c.json_patch("vspheremachine-update-spec", &m, spec).await;
    let old_t = template("v1beta1", "workload-1-worker-v1beta1");
    c.create("vspheremachinetemplate-create-v1beta1", old_t)
        .await;
    let old_m = machine("v1beta1", "workload-1-worker-v1beta1");
    c.create("vspheremachine-create-v1beta1", old_m).await;
    c.delete("vspheremachine-delete", &m).await;
    c.delete("vspheremachinetemplate-delete", &t).await;
}

/// The folders of a set: the validating reviews, and the mutating ones beside them.
fn folders(dir: &Path) -> [(std::path::PathBuf, &'static str); 2] {
    [(dir.to_path_buf(), ""), (dir.join("mutating"), "mutating/")]
}

/// Replaces the `*.json` of `dir` (and `dir/mutating`) with `reviews`, each byte for byte as
/// POSTed.
fn write_set(dir: &Path, reviews: &BTreeMap<String, Vec<u8>>) {
    for (folder, _) in folders(dir) {
        std::fs::create_dir_all(&folder).unwrap();
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
    for (name, body) in reviews {
        std::fs::write(dir.join(format!("{name}.json")), body).unwrap();
    }
}

fn read_set(dir: &Path) -> Option<BTreeMap<String, Vec<u8>>> {
    let mut set = BTreeMap::new();
    for (folder, prefix) in folders(dir) {
        for entry in std::fs::read_dir(folder).ok()? {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let stem = path.file_stem().unwrap().to_string_lossy();
                set.insert(format!("{prefix}{stem}"), std::fs::read(&path).unwrap());
            }
        }
    }
    Some(set)
}

/// What differs between the committed set and a fresh one, one line per review.
fn compare(
    committed: &BTreeMap<String, Vec<u8>>,
    fresh: &BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for name in committed.keys().filter(|n| !fresh.contains_key(*n)) {
        out.push(format!("{name}: committed, no longer recorded"));
    }
    for (name, body) in fresh {
        let Some(old) = committed.get(name) else {
            out.push(format!("{name}: recorded, not committed"));
            continue;
        };
        let (mut old, mut new): (Value, Value) =
            match (serde_json::from_slice(old), serde_json::from_slice(body)) {
                (Ok(old), Ok(new)) => (old, new),
                _ => {
                    out.push(format!("{name}: not JSON"));
                    continue;
                }
            };
        steady(&mut old);
        steady(&mut new);
        if let Some(at) = first_difference(&old, &new, String::new()) {
            out.push(format!("{name}: {at}"));
        }
    }
    out
}

/// What the API server makes up anew on every run, blanked: uids (the review's and the
/// objects'), timestamps (creation, deletion, each managedFields entry's `time`) and
/// resourceVersions. The caller's `userInfo` is the test's own, so it is kept. The API
/// server orders managedFields entries by their `time`, so two writes that fall either
/// side of a second's edge swap places: the entries are compared as a set.
fn steady(v: &mut Value) {
    const VARY: [&str; 5] = [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "resourceVersion",
        "time",
    ];
    match v {
        Value::Object(m) => {
            for (key, value) in m.iter_mut() {
                if VARY.contains(&key.as_str()) && value.is_string() {
                    *value = json!("<varies>");
                } else if key != "userInfo" {
                    steady(value);
                }
                if let (true, Value::Array(entries)) = (key == "managedFields", value) {
                    entries.sort_by_cached_key(|e| e.to_string());
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(steady),
        _ => {}
    }
}

/// The first JSON path where `a` and `b` differ, with both values there.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (l, r) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                first_difference(l, r, format!("{at}.{k}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: committed {a}, now {b}")),
    }
}

#[test]
fn only_what_varies_per_run_is_blanked_and_any_other_difference_is_found() {
    let review = |uid: &str, address: &str, user: &str| {
        json!({"request": {"uid": uid, "userInfo": {"username": user, "uid": user},
               "object": {"metadata": {"uid": uid, "resourceVersion": uid,
                                       "managedFields": [{"manager": "m", "time": uid}]},
                          "spec": {"address": address}}}})
    };
    let set = |v: Value| BTreeMap::from([("a".to_string(), serde_json::to_vec(&v).unwrap())]);
    let committed = set(review("1", "10.0.0.1", "me"));
    assert!(compare(&committed, &set(review("2", "10.0.0.1", "me"))).is_empty());
    let two = |first: &str, second: &str| {
        let mut v = review("1", "10.0.0.1", "me");
        v["request"]["object"]["metadata"]["managedFields"] =
            json!([{"manager": first, "time": "1"}, {"manager": second, "time": "2"}]);
        set(v)
    };
    assert!(compare(&two("m", "n"), &two("n", "m")).is_empty());
    assert_eq!(compare(&two("m", "n"), &two("m", "o")).len(), 1);
    let moved = compare(&committed, &set(review("2", "10.0.0.2", "me")));
    assert_eq!(
        moved,
        [r#"a: .request.object.spec.address: committed "10.0.0.1", now "10.0.0.2""#]
    );
    assert_eq!(
        compare(&committed, &set(review("1", "10.0.0.1", "you"))).len(),
        1
    );
    assert_eq!(
        compare(&committed, &BTreeMap::new()),
        ["a: committed, no longer recorded"]
    );
}
