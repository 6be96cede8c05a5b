//! The CEL backstop and the webhooks' matchConditions on real API servers: every server found
//! (`KUBEBUILDER_ASSETS`, `/usr/local/kubebuilder/*/bin`) that has ValidatingAdmissionPolicy v1
//! and matchConditions (1.30+); older ones are skipped with a line saying so.
//!
//! - Policies and webhook agree: every catalogue example is written (dry-run) once with only
//!   ipam-guard's validating webhook registered and once with only the policies installed
//!   (`kubectl apply -k` of `manifests/components/cel-backstop`). The policies never refuse what
//!   the webhook allows, refuse at the fields the webhook names, and refuse every example of a rule
//!   they say in full. An address corpus checks CEL's `isIP` against ipam-guard's grammar.
//! - Called only when it can matter: with the generated matchConditions, every example still
//!   reaches ipam-guard (`controller_runtime_webhook_requests_total` moves), writes no rule reads
//!   do not, and the API server's CEL agrees with `rules::conditions::matters` on each.

mod e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use e2e::api::{
    self, call, create, create_namespace, create_path, get, install_crds, merge_patch, Resp,
};
use e2e::{eventually, ControlPlane};
use http::Method;
use ipam_guard::catalogue::{Effect, Rule, RuleId, Setting, RULES};
use ipam_guard::cli::dev_webhooks::{configurations, TRIAL_LABEL};
use ipam_guard::cli::DevWebhooksArgs;
use ipam_guard::kinds::Kind;
use ipam_guard::model::Operation;
use ipam_guard::rules::backstop::{self, Coverage};
use ipam_guard::rules::conditions::matters;
use serde_json::{json, Value};

const NEEDS: u32 = 30;

fn report(line: &str) {
    println!("{line}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-report.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        use std::io::Write;
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// The control planes of the servers new enough for `test` (the harness finds them all, see
/// crates/e2e/tests/e2e/mod.rs); the others are reported skipped.
async fn planes(test: &str) -> Vec<(ControlPlane, String)> {
    let found = match (e2e::servers(), e2e::crds()) {
        (Ok(found), Ok(_)) => found,
        (Err(why), _) | (_, Err(why)) => {
            report(&format!("skipped: {test}: {why}"));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for server in found {
        if !server.version.at_least(NEEDS) {
            report(&format!(
                "skipped: {test} against {}: ValidatingAdmissionPolicy v1 and matchConditions need Kubernetes 1.{NEEDS}+",
                server.label()
            ));
            continue;
        }
        let cp = ControlPlane::start(server).await;
        let client = cp.client().await;
        let v = call(&client, Method::GET, "/version", None, "application/json").await;
        let version = v.body["gitVersion"].as_str().unwrap_or("?").to_string();
        report(&format!("ran: {test} against {}", server.label()));
        out.push((cp, version));
    }
    out
}

// === examples through the API server ===

fn docs(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value = serde::Deserialize::deserialize(doc).unwrap();
        if !v.is_null() {
            out.push(v);
        }
    }
    out
}

fn kind_of(obj: &Value) -> Option<(Kind, String)> {
    Kind::from_api_version(obj["apiVersion"].as_str()?, obj["kind"].as_str()?)
}

/// The example's objects, moved into namespace `ns` (cluster-scoped names get `suffix`), so
/// examples never meet each other's objects.
struct Prepared {
    object: Value,
    old: Option<Value>,
    cluster: Vec<Value>,
}

fn prepare(rule: &Rule, ns: &str, suffix: &str) -> Prepared {
    let fix = |text: &str| -> Vec<Value> {
        docs(&text.replace("team-a", ns))
            .into_iter()
            .map(|mut o| {
                // Pools, Clusters and holders of addresses outside pools of one example share
                // an address space of their own: examples must not overlap each other's pools
                // (P10), addresses (A9), control-plane endpoints (CP1) or reserved and static
                // addresses (RI3, SA3).
                if kind_of(&o)
                    .is_some_and(|(k, _)| k.is_pool() || k == Kind::Cluster || k.holds_addresses())
                {
                    o["metadata"]["annotations"]["ipam-guard.io/address-space"] = json!(ns);
                }
                if kind_of(&o).is_some_and(|(k, _)| !k.namespaced()) {
                    let name = format!("{}-{suffix}", o["metadata"]["name"].as_str().unwrap());
                    o["metadata"]["name"] = json!(name);
                    // `dev-webhooks` sends a cluster-scoped object to the trial only when it opts
                    // in with this label.
                    o["metadata"]["labels"][TRIAL_LABEL] = json!("true");
                }
                o
            })
            .collect()
    };
    let e = &rule.example;
    Prepared {
        object: fix(e.object).remove(0),
        old: e.old.map(|o| fix(o).remove(0)),
        cluster: if e.cluster.is_empty() {
            Vec::new()
        } else {
            fix(e.cluster)
        },
    }
}

/// The examples an API server can be sent: served versions, real objects, writes.
fn sendable(rule: &Rule) -> bool {
    let e = &rule.example;
    !matches!(rule.effect(), Effect::CheckOnly | Effect::AuditOnly)
        && e.setting != Setting::WithoutObject
        // R1 needs a delete the view saw before the write and time passing within a grace.
        && e.setting != Setting::AfterRelease
        && docs(e.object)
            .first()
            .and_then(kind_of)
            .is_some_and(|(k, v)| k.serves_version(&v))
}

async fn namespace(client: &kube::Client, ns: &str) {
    create_namespace(client, ns).await;
}

/// Writes the example's final request (dry-run) after creating what it needs for real.
async fn send(client: &kube::Client, rule: &Rule, p: &Prepared) -> Resp {
    for o in &p.cluster {
        let r = create(client, o, false).await;
        assert!(
            r.status == 201 || r.status == 409,
            "{}: setting up {}: {r:#?}",
            rule.id,
            o["metadata"]["name"]
        );
    }
    match rule.example.operation {
        "CREATE" => create(client, &p.object, true).await,
        "UPDATE" => {
            let old = p.old.as_ref().unwrap();
            let r = create(client, old, false).await;
            assert!(r.status == 201 || r.status == 409, "{}: {r:#?}", rule.id);
            let stored = get(client, old).await;
            let mut new = p.object.clone();
            new["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
            call(
                client,
                Method::PUT,
                &format!("{}?dryRun=All", api::item_path(&new)),
                Some(&new),
                "application/json",
            )
            .await
        }
        "DELETE" => {
            let r = create(client, &p.object, false).await;
            assert!(r.status == 201 || r.status == 409, "{}: {r:#?}", rule.id);
            call(
                client,
                Method::DELETE,
                &format!("{}?dryRun=All", api::item_path(&p.object)),
                None,
                "application/json",
            )
            .await
        }
        other => panic!("{}: {other}", rule.id),
    }
}

/// The fields a refusal names: its causes' (the webhook, a CRD schema), or for a policy's cause
/// the one its message starts with (`ValidatingAdmissionPolicy '…' with binding '…' denied
/// request: spec.x: Required value [ipam-guard C1]`).
fn fields(r: &Resp) -> Vec<String> {
    let mut f: Vec<String> = r
        .causes()
        .iter()
        .filter_map(|c| match c["field"].as_str() {
            Some(field) => Some(field.to_string()),
            None => {
                let m = c["message"].as_str()?;
                let rest = m.strip_prefix("ValidatingAdmissionPolicy ")?;
                let (_, rest) = rest.split_once("denied request: ")?;
                Some(rest.split_once(": ")?.0.to_string())
            }
        })
        .collect();
    f.sort();
    f.dedup();
    f
}

fn denied(r: &Resp) -> bool {
    r.status >= 400
}

fn kubectl(cp: &ControlPlane, args: &[&str]) -> std::process::Output {
    let kubectl = std::env::var_os("KUBECTL").unwrap_or_else(|| "kubectl".into());
    Command::new(kubectl)
        .arg(format!("--kubeconfig={}", cp.kubeconfig.display()))
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// Waits until a write the webhook refuses (MC2: a Metal3 claim naming a pool in another
/// namespace) is refused by it: a new configuration takes a moment to reach the admission chain.
async fn wait_for_ipam_guard(client: &kube::Client, ns: &str) {
    let probe = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
        "metadata": {"name": "probe", "namespace": ns},
        "spec": {"pool": {"name": "provisioning", "namespace": "elsewhere"}}});
    let mut last = String::new();
    for _ in 0..150 {
        let r = create(client, &probe, true).await;
        last = r.body.to_string();
        if last.contains("[ipam-guard MC2]") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the webhook did not answer within 30 s; the API server's last answer: {last}");
}

/// `to` as seen from `from` (kustomize refuses absolute paths to components).
fn relative(from: &Path, to: &Path) -> String {
    let up = from.components().count() - 1;
    format!(
        "{}{}",
        "../".repeat(up),
        to.display().to_string().trim_start_matches('/')
    )
}

fn dev_args(url: String, namespaces: Vec<String>, version: &str) -> DevWebhooksArgs {
    DevWebhooksArgs {
        url,
        namespace: namespaces,
        cert_dir: PathBuf::new(),
        kube_version: Some(version.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_and_webhook_agree_on_every_example() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    for (cp, version) in planes("e2e_backstop::policies_and_webhook_agree_on_every_example").await {
        let client = cp.client().await;
        install_crds(&client).await;
        let rules: Vec<&Rule> = RULES.iter().filter(|r| sendable(r)).collect();

        // 1. ipam-guard's validating webhook alone (the policies judge the object as written,
        // unmutated, as /validate does with the mutating webhook failing open).
        let (guard, ca) = api::start_ipam_guard(&cp).await;
        let spaces: Vec<String> = (0..rules.len()).map(|i| format!("w-{i}")).collect();
        let [validating, _] = configurations(
            &dev_args(format!("https://{}", guard.addr), spaces.clone(), &version),
            &ca,
        );
        create_path(
            &client,
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            &validating,
        )
        .await
        .expect(201);
        let mut webhook = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            namespace(&client, &spaces[i]).await;
            let p = prepare(rule, &spaces[i], &format!("w{i}"));
            if i == 0 {
                wait_for_ipam_guard(&client, &spaces[0]).await;
            }
            webhook.push(send(&client, rule, &p).await);
        }
        drop(guard);
        let r = call(
            &client,
            Method::DELETE,
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/ipam-guard-dev",
            None,
            "application/json",
        )
        .await;
        assert_eq!(r.status, 200, "{r:#?}");

        // 2. The policies alone, installed as a user would.
        let overlay = tempfile::tempdir().unwrap();
        let component = e2e::repo_root().join("manifests/components/cel-backstop");
        std::fs::write(
            overlay.path().join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents:\n  - {}\n",
                relative(overlay.path(), &component)
            ),
        )
        .unwrap();
        let out = kubectl(&cp, &["apply", "-k", &overlay.path().display().to_string()]);
        assert!(
            out.status.success(),
            "kubectl apply -k: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let applied = String::from_utf8_lossy(&out.stdout).to_string();
        for p in backstop::policies() {
            assert!(applied.contains(&p.name()), "{applied}");
        }
        // Policies take effect once the API server's informers have them: wait for one to deny.
        let mc1 = RULES.iter().find(|r| r.id == RuleId::MC1).unwrap();
        namespace(&client, "probe").await;
        let probe = prepare(mc1, "probe", "p").object;
        eventually(
            "the policies to take effect",
            Duration::from_secs(60),
            || {
                let (client, probe) = (client.clone(), probe.clone());
                async move { create(&client, &probe, true).await.status == 422 }
            },
        )
        .await;

        let mut lines = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let ns = format!("p-{i}");
            namespace(&client, &ns).await;
            let p = prepare(rule, &ns, &format!("p{i}"));
            let policy = send(&client, rule, &p).await;
            let hook = &webhook[i];
            lines.push(format!(
                "{}: webhook {} {:?}, policies {} {:?}",
                rule.id,
                hook.status,
                fields(hook),
                policy.status,
                fields(&policy)
            ));
            // Never refuse what the webhook allows, and only where the webhook points.
            if denied(&policy) {
                assert!(
                    denied(hook),
                    "{}: the policies refuse what the webhook allows:\n{policy:#?}",
                    rule.id
                );
                for f in fields(&policy) {
                    assert!(
                        fields(hook).contains(&f),
                        "{}: the policies refuse at {f}, the webhook at {:?}:\n{policy:#?}\n{hook:#?}",
                        rule.id,
                        fields(hook)
                    );
                }
            }
            // A rule said in full is refused by its policy as by the webhook, at the same fields.
            if let Coverage::Policy { partial: None, .. } = backstop::coverage(rule.id) {
                if denied(hook) {
                    assert_eq!(
                        policy.status, hook.status,
                        "{}: {policy:#?}\n{hook:#?}",
                        rule.id
                    );
                    let text = policy.body.to_string();
                    let schema_first = !hook.body.to_string().contains("[ipam-guard");
                    // The webhook may add causes of other rules; the rule's own sit where the
                    // policy's do.
                    let signed = format!("[ipam-guard {}]", rule.id);
                    let mut own: Vec<String> = hook
                        .causes()
                        .iter()
                        .filter(|c| {
                            schema_first
                                || c["message"].as_str().is_some_and(|m| m.ends_with(&signed))
                        })
                        .filter_map(|c| c["field"].as_str().map(str::to_string))
                        .collect();
                    own.sort();
                    own.dedup();
                    assert_eq!(fields(&policy), own, "{}: {policy:#?}\n{hook:#?}", rule.id);
                    assert!(
                        schema_first || text.contains(&format!("[ipam-guard {}]", rule.id)),
                        "{}: {text}",
                        rule.id
                    );
                }
            }
        }
        println!("{version}:\n{}", lines.join("\n"));

        // 3. CEL's isIP against the strict grammar: the A1 policy refuses only what it refuses.
        let corpus = [
            "10.0.0.1",
            "010.0.0.1",
            "10.0.0.256",
            "1.2.3",
            "1.2.3.4.",
            "+1.2.3.4",
            "0x1.2.3.4",
            "::1",
            "::",
            "::ffff:10.0.0.1",
            "::FFFF:10.0.0.1",
            "fe80::1%eth0",
            "2001:DB8::1",
            "2001:0db8::1",
            "2001:db8:0:0:0:0:0:1",
            "::10.0.0.1",
            "::010.0.0.1",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            "00001::",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7::",
            "::1:2:3:4:5:6:7",
            " 10.0.0.1",
            "10.0.0.1 ",
            "10.0.0.1/24",
            "\u{ff11}.2.3.4",
            "0.0.0.0",
            "255.255.255.255",
            "[::1]",
            "::ffff:0:10.0.0.1",
            "64:ff9b::10.0.0.1",
        ];
        let (mut agree, mut gaps) = (0, Vec::new());
        for (i, text) in corpus.iter().enumerate() {
            let obj = json!({
                "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
                "metadata": {"name": format!("corpus-{i}"), "namespace": "probe"},
                "spec": {"address": text, "prefix": 24, "claimRef": {"name": "c"},
                         "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}}
            });
            let r = create(&client, &obj, true).await;
            let ours = ipam_guard::address::parse_ip(text).is_ok();
            let refused_by_a1 = r.status == 422 && r.body.to_string().contains("[ipam-guard A1]");
            assert!(
                !(refused_by_a1 && ours),
                "{text:?}: the A1 policy refuses an address ipam-guard accepts: {r:#?}"
            );
            if refused_by_a1 != ours {
                agree += 1;
            } else {
                gaps.push(*text);
            }
        }
        println!(
            "{version}: isIP and ipam-guard agree on {agree} of {} addresses; the webhook alone refuses {gaps:?}",
            corpus.len()
        );
    }
}

// === matchConditions ===

/// `controller_runtime_webhook_requests_total` summed over its series, read once no admission
/// request is in flight. The API server calls the webhooks before it answers a write, and
/// ipam-guard counts a request before it sends its answer; so once a write has returned and
/// nothing is in flight, every call that write caused is counted: a write the API server did
/// not send leaves the counter where it was, without a wait to prove it.
async fn counter(metrics: std::net::SocketAddr) -> f64 {
    let start = std::time::Instant::now();
    loop {
        let text = scrape(metrics).await;
        let sum = |family: &str| -> f64 {
            text.lines()
                .filter(|l| l.starts_with(family))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let in_flight = sum("controller_runtime_webhook_requests_in_flight{");
        if in_flight == 0.0 {
            return sum("controller_runtime_webhook_requests_total{");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{in_flight} admission requests still in flight after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn scrape(metrics: std::net::SocketAddr) -> String {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(metrics).unwrap();
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {metrics}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
    .await
    .unwrap()
}

/// Whether the write just returned reached ipam-guard: the settled counter moved past `before`.
async fn reached(metrics: std::net::SocketAddr, before: f64) -> bool {
    counter(metrics).await > before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_are_called_only_when_a_rule_can_matter() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    for (cp, version) in
        planes("e2e_backstop::webhooks_are_called_only_when_a_rule_can_matter").await
    {
        let client = cp.client().await;
        install_crds(&client).await;
        let (guard, ca) = api::start_ipam_guard(&cp).await;
        let rules: Vec<&Rule> = RULES
            .iter()
            .filter(|r| sendable(r) && r.effect() != Effect::Allow)
            .collect();
        let mut spaces: Vec<String> = (0..rules.len()).map(|i| format!("m-{i}")).collect();
        spaces.push("quiet".into());
        let confs = configurations(
            &dev_args(format!("https://{}", guard.addr), spaces.clone(), &version),
            &ca,
        );
        assert!(confs[0]["webhooks"][0]["matchConditions"].is_array());
        for (conf, plural) in confs.iter().zip([
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
        ]) {
            create_path(
                &client,
                &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
                conf,
            )
            .await
            .expect(201);
        }
        namespace(&client, "quiet").await;
        wait_for_ipam_guard(&client, "quiet").await;

        // Every example reaches ipam-guard.
        for (i, rule) in rules.iter().enumerate() {
            namespace(&client, &spaces[i]).await;
            let p = prepare(rule, &spaces[i], &format!("m{i}"));
            let (resp, moved) = send_counted(&client, rule, &p, guard.metrics).await;
            let pre_admission =
                resp.status == 422 && !resp.body.to_string().contains("[ipam-guard");
            assert!(
                moved || pre_admission,
                "{}: its example did not reach ipam-guard: {resp:#?}",
                rule.id
            );
            if pre_admission {
                println!(
                    "{version}: {}: the API server refused the example on its CRD schema first",
                    rule.id
                );
            }
        }

        // Writes no rule reads are not sent; those some rule reads are. Each is also asked of
        // the Rust table, which must agree with the API server's CEL.
        let ns = "quiet";
        let mut claim = api::claim(ns, "web-0", "nodes");
        claim["spec"]["clusterName"] = json!("prod");
        claim["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "prod"});
        let mut bare_claim = api::claim(ns, "web-1", "nodes");
        bare_claim["spec"]["clusterName"] = json!("prod");
        // Addresses of their own: the examples above hold 10.0.0.0/24 in the default address space.
        let pool = api::in_cluster_pool(ns, "nodes", "10.99.0.10-10.99.0.50", "10.99.0.1");
        let address = api::ip_address(ns, "web-0", "web-0", "10.99.0.11", "nodes");
        let m3_claim = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
            "metadata": {"name": "host-0", "namespace": ns}, "spec": {"pool": {"name": "provisioning"}}});
        for o in [&pool, &claim, &address, &m3_claim] {
            create(&client, o, false).await.expect(201);
        }
        // bare_claim: the mutating webhook adds its label on create; remove it below.
        create(&client, &bare_claim, false).await.expect(201);

        let cases: Vec<(&str, &Value, Value)> = vec![
            (
                "a label on a claim",
                &claim,
                json!({"metadata": {"labels": {"example.com/team": "blue"}}}),
            ),
            (
                "a finalizer on an address",
                &address,
                json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            ),
            (
                "an annotation on a pool",
                &pool,
                json!({"metadata": {"annotations": {"example.com/note": "x"}}}),
            ),
            (
                "a label on a Metal3 claim",
                &m3_claim,
                json!({"metadata": {"labels": {"a": "b"}}}),
            ),
            (
                "the address space of a pool",
                &pool,
                json!({"metadata": {"annotations": {"ipam-guard.io/address-space": "blue"}}}),
            ),
            (
                "the ipAddress annotation of a Metal3 claim",
                &m3_claim,
                json!({"metadata": {"annotations": {"ipAddress": "10.0.0.5"}}}),
            ),
            (
                "the cluster-name label of a claim",
                &claim,
                json!({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "staging"}}}),
            ),
            (
                "a claim losing its cluster-name label (M2 puts it back)",
                &bare_claim,
                json!({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": null}}}),
            ),
            (
                "a pool's spec",
                &pool,
                json!({"spec": {"addresses": ["10.99.0.10-10.99.0.60"]}}),
            ),
        ];
        let (mut skipped, mut sent) = (0, 0);
        for (what, obj, patch) in cases {
            let old = get(&client, obj).await.body;
            let before = counter(guard.metrics).await;
            let mut new = old.clone();
            json_patch::merge(&mut new, &patch);
            let r = merge_patch(&client, obj, patch).await;
            // The C5 case is refused by ipam-guard: that too is a call.
            assert!(
                r.status < 300 || r.body.to_string().contains("[ipam-guard"),
                "{what}: {r:#?}"
            );
            let moved = reached(guard.metrics, before).await;
            let (kind, _) = kind_of(obj).unwrap();
            let expected = matters(kind, Operation::Update, &new, &old);
            assert_eq!(
                moved,
                expected,
                "{what}: the API server {} ipam-guard; the rule table says it {}",
                if moved { "called" } else { "did not call" },
                if expected {
                    "matters"
                } else {
                    "does not matter"
                }
            );
            if moved {
                sent += 1
            } else {
                skipped += 1
            }
        }
        assert!(skipped >= 4 && sent >= 4, "skipped {skipped}, sent {sent}");

        // DELETE: a pool carrying a skip annotation is let go without asking.
        let mut gone = api::in_cluster_pool(ns, "gone", "10.98.0.10-10.98.0.50", "10.98.0.1");
        gone["metadata"]["annotations"] =
            json!({"ipam.cluster.x-k8s.io/skip-validate-delete-webhook": ""});
        create(&client, &gone, false).await.expect(201);
        let before = counter(guard.metrics).await;
        let r = api::delete(&client, &gone).await;
        assert_eq!(r.status, 200, "{r:#?}");
        assert!(
            !reached(guard.metrics, before).await,
            "a skipped delete reached ipam-guard"
        );
        let before = counter(guard.metrics).await;
        let r = api::delete(&client, &pool).await;
        assert!(r.status < 300 || r.status == 403, "{r:#?}");
        assert!(
            reached(guard.metrics, before).await,
            "a pool delete did not reach ipam-guard"
        );
    }
}

/// The example's final request (dry-run), and whether it moved ipam-guard's request counter. What
/// it needs is created first, outside the count (those writes reach ipam-guard too).
async fn send_counted(
    client: &kube::Client,
    rule: &Rule,
    p: &Prepared,
    metrics: std::net::SocketAddr,
) -> (Resp, bool) {
    let stored = match rule.example.operation {
        "UPDATE" => p.old.as_ref(),
        "DELETE" => Some(&p.object),
        _ => None,
    };
    for o in p.cluster.iter().chain(stored) {
        let r = create(client, o, false).await;
        assert!(r.status == 201 || r.status == 409, "{}: {r:#?}", rule.id);
    }
    // The set-up's calls are counted by now (`counter` reads once none is in flight).
    let before = counter(metrics).await;
    let r = send_final(client, rule, p).await;
    let moved = reached(metrics, before).await;
    (r, moved)
}

async fn send_final(client: &kube::Client, rule: &Rule, p: &Prepared) -> Resp {
    match rule.example.operation {
        "CREATE" => create(client, &p.object, true).await,
        "UPDATE" => {
            let stored = get(client, p.old.as_ref().unwrap()).await;
            let mut new = p.object.clone();
            new["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
            call(
                client,
                Method::PUT,
                &format!("{}?dryRun=All", api::item_path(&new)),
                Some(&new),
                "application/json",
            )
            .await
        }
        _ => {
            call(
                client,
                Method::DELETE,
                &format!("{}?dryRun=All", api::item_path(&p.object)),
                None,
                "application/json",
            )
            .await
        }
    }
}
