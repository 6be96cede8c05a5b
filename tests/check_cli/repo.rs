//! `check` as a gate on a real repository: schema errors with the field named, kind
//! typos with a hint, templates excluded, `--strict`, SARIF and JUnit, `--crd-dir`, provider
//! kinds skipped and counted.

use super::*;

pub const REPO: &str = "tests/fixtures/check/repo";

#[test]
fn schema_a_folder_kubectl_would_reject_fails_with_the_field_named() {
    let o = check(&[&format!("{REPO}/typos/fields.yaml")]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let f = format!("{REPO}/typos/fields.yaml");
    assert_eq!(
        lines(&o),
        vec![
            format!(
                r#"{f}:11: InClusterIPPool mgmt/mgmt-nodes-2: spec.exludedAddresses: unknown field "spec.exludedAddresses" [SCHEMA]"#
            ),
            format!(
                r#"{f}:10: InClusterIPPool mgmt/mgmt-nodes-2: spec.gatway: unknown field "spec.gatway" [SCHEMA]"#
            ),
            format!(
                r#"{f}:16: IPAddressClaim mgmt/Claim_1: metadata.name: Invalid value: "Claim_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') [SCHEMA]"#
            ),
            format!(
                r#"{f}:20: IPAddressClaim mgmt/Claim_1: spec.extra: unknown field "spec.extra" [SCHEMA]"#
            ),
        ]
    );
    // Where each finding is, for editors and code scanning: its document, and its field's line.
    let o = check(&["-o", "json", &f]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let v = &v["findings"];
    assert_eq!((&v[0]["document"], &v[0]["line"]), (&json!(1), &json!(11)));
    assert_eq!((&v[3]["document"], &v[3]["line"]), (&json!(2), &json!(20)));
}

#[test]
fn schema_a_kind_typo_is_an_error_with_a_hint_in_every_format() {
    let f = format!("{REPO}/typos/kind.yaml");
    let o = check(&[&f]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!(
        r#"error: {f}: document 1: no matches for kind "InClusterIpPool" in version "ipam.cluster.x-k8s.io/v1alpha2" (did you mean "InClusterIPPool"?)"#
    )), "{}", stderr(&o));
    let o = check(&["-o", "json", &f]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(
        v["findings"],
        json!([{
            "file": f, "group": null, "kind": null, "namespace": null, "name": null, "field": "",
            "message": "no matches for kind \"InClusterIpPool\" in version \"ipam.cluster.x-k8s.io/v1alpha2\" (did you mean \"InClusterIPPool\"?)",
            "rule": null, "severity": "error", "document": 1, "line": 1
        }])
    );
}

#[test]
fn a_real_repository_checks_cleanly_with_its_templates_excluded() {
    let o = check(&[REPO, "--exclude", "typos", "--exclude", "**/templates/**"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{}{err}", stdout(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        err.contains("read 1 object from 3 files: 1 InClusterIPPool"),
        "{err}"
    );
    assert!(
        err.contains("1 object skipped: not IPAM: 1 ConfigMap"),
        "{err}"
    );
    // values.yaml and renovate.json; the README is not a manifest file at all.
    assert!(
        err.contains("skipped 2 documents that are not Kubernetes objects"),
        "{err}"
    );
    assert!(err.contains("excluded 2 paths"), "{err}");

    // Unrendered Helm templates are not manifests: without the exclude they are an error.
    let o = check(&[REPO, "--exclude", "typos"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("templates/pool.yaml"), "{}", stderr(&o));
}

#[test]
fn strict_turns_skipped_kinds_into_errors_but_not_kubernetes_own() {
    // A ConfigMap is not IPAM: --strict has nothing to say about it.
    let dir = format!("{REPO}/clusters");
    let o = check(&["--strict", &dir]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 object skipped: not IPAM: 1 ConfigMap"),
        "{}",
        stderr(&o)
    );

    // A provider's kind ipam-guard does not judge, with no CRD at hand, is what it fails on.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("machines.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: racks\n---\n\
         apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\n\
         metadata:\n  name: rack-workers\n  namespace: racks\nspec:\n  template:\n    spec: {}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let o = check(&["--strict", f]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "error: {f}: document 2: Metal3MachineTemplate.infrastructure.cluster.x-k8s.io is not a kind ipam-guard judges (--strict)"
        )),
        "{}",
        stderr(&o)
    );
    let o = check(&[f]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "1 object skipped: kinds ipam-guard does not judge, no CRD at hand: 1 Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sarif_and_junit_carry_rule_file_and_line() {
    let f = format!("{REPO}/typos/fields.yaml");
    let k = format!("{REPO}/typos/kind.yaml");
    let o = check(&["-o", "sarif", &f, &k]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("SARIF is JSON");
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "ipam-guard");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{results:#?}");
    assert_eq!(results[0]["ruleId"], "SCHEMA");
    assert_eq!(results[0]["level"], "error");
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], f.as_str());
    // The field's line, not its document's.
    assert_eq!(loc["region"]["startLine"], 11);
    assert_eq!(results[4]["ruleId"], "LOAD");
    let ids: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["LOAD", "SCHEMA"]);

    let o = check(&["-o", "junit", &f, &format!("{REPO}/clusters")]);
    assert_eq!(code(&o), 1);
    let xml = stdout(&o);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ipam-guard\" tests=\"3\" failures=\"2\" errors=\"0\">"), "{xml}");
    assert!(xml.contains(r#"<testcase classname="tests/fixtures/check/repo/clusters/mgmt/pools.yaml" name="InClusterIPPool mgmt/mgmt-nodes" file="tests/fixtures/check/repo/clusters/mgmt/pools.yaml" line="1"/>"#), "{xml}");
    assert!(xml.contains(r#"<failure type="SCHEMA" message="spec.exludedAddresses: unknown field &quot;spec.exludedAddresses&quot; [SCHEMA]">"#), "{xml}");
    assert_eq!(xml.matches("<testcase").count(), 3);
    assert_eq!(xml.matches("</testcase>").count(), 2);
}

#[test]
fn crd_dir_validates_against_ones_own_crds() {
    let dir = tempfile::tempdir().unwrap();
    // Another release of the in-cluster provider, where the field is spelt `gatway`: the pool's
    // CRD as a user might keep it, cut down to the fields this test writes.
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: inclusterippools.ipam.cluster.x-k8s.io}
spec:
  group: ipam.cluster.x-k8s.io
  names: {kind: InClusterIPPool, plural: inclusterippools}
  scope: Namespaced
  versions:
  - name: v1alpha2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [addresses, prefix]
            properties:
              addresses: {type: array, items: {type: string}}
              prefix: {type: integer, minimum: 0, maximum: 128}
              gatway: {type: string}
"#;
    std::fs::write(dir.path().join("pools.yaml"), crd).unwrap();
    let crd_dir = dir.path().to_str().unwrap();
    let f = format!("{REPO}/typos/fields.yaml");
    let o = check(&["--crd-dir", crd_dir, &f]);
    let out = stdout(&o);
    assert!(
        out.contains("spec.exludedAddresses: unknown field"),
        "{out}"
    );
    assert!(!out.contains("spec.gatway"), "{out}");
    // The claim's CRD is not in that directory: nothing to validate it against.
    assert!(!out.contains("Claim_1"), "{out}");

    let empty = tempfile::tempdir().unwrap();
    let o = check(&["--crd-dir", empty.path().to_str().unwrap(), &f]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no CustomResourceDefinition found"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_unreachable_api_server_is_named_with_the_likely_cause() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\n\
         users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    )
    .unwrap();
    let kc = kubeconfig.to_str().unwrap();
    for args in [
        vec!["audit", "--kubeconfig", kc],
        vec!["check", "--kubeconfig", kc, "examples/manifests"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("API server https://127.0.0.1:1/"),
            "{args:?}: {err}"
        );
        assert!(err.contains("nothing answered"), "{args:?}: {err}");
    }
}

/// The built-in description and the providers' real CRDs (`--crd-dir`) give the same findings,
/// byte for byte, on every fixture, example and captured manifest.
#[test]
fn the_builtin_description_judges_as_the_providers_crds_do() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/fixtures");
    if !shared.join("crds").is_dir() {
        eprintln!("skipped: ../shared/fixtures/crds is absent; the built-in description is not compared with the providers' CRDs");
        return;
    }
    // Only the kinds ipam-guard judges: a CRD of another kind would change which kinds are
    // known (and so the "did you mean" hints), not the schemas compared.
    let crds = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(shared.join("crds")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let crd: Value = serde_yaml_ng::from_str(&text).unwrap();
        let judged = ipam_guard::kinds::KINDS
            .iter()
            .any(|k| k.group == crd["spec"]["group"] && k.name == crd["spec"]["names"]["kind"]);
        if judged {
            std::fs::write(crds.path().join(path.file_name().unwrap()), text).unwrap();
        }
    }
    let crd_dir = crds.path().to_str().unwrap();
    let manifests = shared.join("manifests");
    let manifests = manifests.to_str().unwrap();
    for input in [FIXTURES, "examples", manifests] {
        let builtin = check(&["-o", "json", input]);
        let real = check(&["-o", "json", "--crd-dir", crd_dir, input]);
        assert_eq!(stdout(&builtin), stdout(&real), "{input}");
        assert_eq!(code(&builtin), code(&real), "{input}");
        assert!(!stdout(&builtin).is_empty(), "{input}: nothing judged");
    }
    // And the comparison has something to compare: the fixtures hold schema findings.
    assert!(stdout(&check(&["-o", "json", FIXTURES])).contains("\"SCHEMA\""));
}

/// Files shaped like the providers' own examples and cluster templates (written here): every kind
/// ipam-guard does not judge is skipped and counted, never taken for a typo of one it serves.
pub const PROVIDER_TEMPLATES: &str = r#"apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: rack-a, namespace: metal}
spec:
  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: Metal3Cluster, name: rack-a}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Cluster
metadata: {name: rack-a, namespace: metal}
spec:
  controlPlaneEndpoint: {host: 192.0.2.10, port: 6443}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3MachineTemplate
metadata: {name: rack-a-cp, namespace: metal}
spec:
  template:
    spec:
      dataTemplate: {name: rack-a-cp}
      image: {url: http://192.0.2.1/img.qcow2, checksum: http://192.0.2.1/img.qcow2.sum}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3DataTemplate
metadata: {name: rack-a-cp, namespace: metal}
spec:
  clusterName: rack-a
  networkData:
    networks:
      ipv4:
      - id: provisioning
        link: enp1s0
        ipAddressFromIPPool: provisioning-pool
---
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning-pool, namespace: metal}
spec:
  clusterName: rack-a
  namePrefix: rack-a-prov
  pools:
  - {start: 192.0.2.100, end: 192.0.2.120}
  prefix: 24
  gateway: 192.0.2.1
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: VSphereCluster
metadata: {name: vs-a, namespace: metal}
spec:
  server: vcenter.example.com
---
apiVersion: ipam.cluster.x-k8s.io/v1beta1
kind: InfobloxIPPool
metadata: {name: ib, namespace: metal}
spec:
  instance: {name: ib-prod}
  networkView: default
  subnets: [{cidr: 198.51.100.0/24, gateway: 198.51.100.1}]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: pods-subnet}
spec:
  subnet: 172.30.0.0/16
  ips: [172.30.0.10-172.30.0.200]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata: {name: macvlan-eth1, namespace: kube-system}
spec:
  cniType: macvlan
  macvlan: {master: [eth1]}
---
apiVersion: v1
kind: Namespace
metadata: {name: metal}
"#;

#[test]
fn x4_provider_kinds_are_skipped_and_counted_never_typos() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cluster-template.yaml");
    std::fs::write(&file, PROVIDER_TEMPLATES).unwrap();
    let f = file.to_str().unwrap();
    let o = check(&[f]);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{}{err}", stdout(&o));
    assert!(!err.contains("did you mean"), "{err}");
    assert!(
        err.contains(
            "read 6 objects from 1 file: 1 IPPool.ipam.metal3.io, 1 Cluster, \
             1 Metal3DataTemplate.infrastructure.cluster.x-k8s.io, \
             1 VSphereCluster.infrastructure.cluster.x-k8s.io, \
             1 Metal3Cluster.infrastructure.cluster.x-k8s.io, \
             1 SpiderSubnet.spiderpool.spidernet.io"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "3 objects skipped: kinds ipam-guard does not judge, no CRD at hand: \
             1 InfobloxIPPool.ipam.cluster.x-k8s.io, \
             1 Metal3MachineTemplate.infrastructure.cluster.x-k8s.io, \
             1 SpiderMultusConfig.spiderpool.spidernet.io"
        ),
        "{err}"
    );
    assert!(
        err.contains("1 object skipped: not IPAM: 1 Namespace"),
        "{err}"
    );

    // A near miss of a served kind that no provider publishes is still a typo.
    std::fs::write(
        &file,
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAdressClaim\nmetadata: {name: c}\n",
    )
    .unwrap();
    let o = check(&[f]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(did you mean \"IPAddressClaim\"?)"),
        "{}",
        stderr(&o)
    );
}

/// With its CRD at hand, a kind ipam-guard does not judge is checked against that schema, and
/// nothing else.
#[test]
fn schema_a_kind_not_judged_is_checked_against_its_crd_when_given() {
    let tmp = tempfile::tempdir().unwrap();
    let crds = tmp.path().join("crds");
    std::fs::create_dir(&crds).unwrap();
    // A CRD written for this test: a machine template with two known fields.
    std::fs::write(
        crds.join("machinetemplates.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: metal3machinetemplates.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: Metal3MachineTemplate, plural: metal3machinetemplates}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [clusterName]
            properties:
              clusterName: {type: string}
              templateReference: {type: string}
"#,
    )
    .unwrap();
    let file = tmp.path().join("templates.yaml");
    std::fs::write(
        &file,
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\n\
         metadata: {name: dt, namespace: metal}\nspec:\n  clusterName: rack-a\n  clusterNmae: rack-b\n",
    )
    .unwrap();
    let (d, f) = (crds.to_str().unwrap(), file.to_str().unwrap());
    let o = check(&["--crd-dir", d, f]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "{f}:6: Metal3MachineTemplate.infrastructure.cluster.x-k8s.io metal/dt: spec.clusterNmae: unknown field \"spec.clusterNmae\" [SCHEMA]\n"
        )
    );
    assert!(
        stderr(&o).contains(
            "1 object checked against their CRD's schema only: 1 Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"
        ),
        "{}",
        stderr(&o)
    );
    // --strict has nothing to say about a kind checked against its CRD.
    let o = check(&["--strict", "--crd-dir", d, f]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

/// The API server runs mutating admission before it checks the schema: a v1beta2 claim that names
/// an in-cluster pool kind without `poolRef.apiGroup` is completed by M1 and then holds. `check`
/// agrees: M1's patch is reported, the schema does not call the group missing.
#[test]
fn m1_fills_the_group_before_the_schema_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("claim.yaml");
    std::fs::write(
        &file,
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\n\
         metadata: {name: web-0, namespace: apps}\n\
         spec:\n  poolRef: {kind: InClusterIPPool, name: nodes}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let o = check(&[f]);
    let out = stdout(&o);
    assert!(!out.contains("[SCHEMA]"), "{out}");
    assert!(
        out.contains("spec.poolRef.apiGroup: not set; the mutating webhook sets it to \"ipam.cluster.x-k8s.io\" [M1]"),
        "{out}"
    );
}
