//! The schema step: what the API server refuses before any webhook runs, judged against the
//! CRDs' structural schemas, and where those schemas come from (`--crd-dir`, or a cluster's
//! installed CRDs as their list streams in).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Finding, Severity, Subject};
use crate::kube_version::KubeVersion;
use crate::schema::{Lookup, Schemas};

/// What the API server itself would refuse before any webhook runs: the object against its CRD
/// schema (rule id `SCHEMA`), or an `apiVersion` whose version the CRD does not serve.
pub(super) fn schema_findings(
    group: &str,
    kind: &str,
    version: &str,
    object: &Value,
    subject: &Subject,
    schemas: &Schemas,
    target: KubeVersion,
) -> Vec<Finding> {
    match schemas.lookup(group, kind, version) {
        Lookup::Found(_) => schemas
            .validate_as(target, group, kind, version, object)
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let severity = if e.warning {
                    Severity::Warn
                } else {
                    Severity::Deny
                };
                Finding::new(subject, e.path, e.message, crate::catalogue::SCHEMA, severity)
            })
            .collect(),
        Lookup::UnservedVersion { served } => vec![Finding::new(
            subject,
            "apiVersion",
            format!(
                "Unsupported value: \"{group}/{version}\": no matches for kind \"{kind}\" in version \"{group}/{version}\"; served versions: {}",
                served.join(", "),
            ),
            crate::catalogue::SCHEMA,
            Severity::Deny,
        )],
        // A --crd-dir without this kind: nothing to validate against, as on a cluster without
        // the CRD (where the write would fail for other reasons).
        Lookup::UnknownKind { .. } | Lookup::UnknownGroup => Vec::new(),
    }
}

/// The schemas of the CRDs a cluster has installed, built as their list streams in (a CRD is
/// large; a cluster may have hundreds).
#[derive(Default)]
pub(super) struct CrdSchemas {
    pub(super) schemas: Schemas,
    pub(super) error: Option<String>,
}

impl crate::cluster::live::list::Items for CrdSchemas {
    fn item(&mut self, crd: crate::cluster::WatchedObject) {
        if self.error.is_some() {
            return;
        }
        let name = crd.metadata.name.clone().unwrap_or_default();
        // A list's items carry no kind; what `add_crd` reads is the spec.
        let mut value = Value::Object(crd.rest);
        value["kind"] = "CustomResourceDefinition".into();
        if let Err(e) = self.schemas.add_crd(&value) {
            self.error = Some(format!(
                "CustomResourceDefinition {name} in the cluster: {e}"
            ));
        }
    }
}

/// Every CustomResourceDefinition in the YAML/JSON files of `dir` (other documents are ignored).
pub fn read_crds(dir: &Path) -> Result<Schemas, String> {
    let mut schemas = Schemas::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("--crd-dir {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("--crd-dir {}: {e}", file.display()))?;
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let doc: Value = serde::Deserialize::deserialize(doc)
                .map_err(|e| format!("--crd-dir {}: {e}", file.display()))?;
            if doc.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
                schemas
                    .add_crd(&doc)
                    .map_err(|e| format!("--crd-dir {}: {e}", file.display()))?;
            }
        }
    }
    if schemas.is_empty() {
        return Err(format!(
            "--crd-dir {}: no CustomResourceDefinition found",
            dir.display()
        ));
    }
    Ok(schemas)
}
