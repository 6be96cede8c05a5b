//! The shape in which the live view and `audit` receive objects from the API server.
//!
//! Why not `DynamicObject`: `managedFields` is often the largest part of an object and no rule
//! reads it; decoding `metadata` into a struct of the fields we use lets serde skip it without
//! allocating. The live view decodes lists one item at a time (`live::list`); `audit` still
//! collects whole lists, whose peak this bounds by the specs, not by the field-manager
//! bookkeeping.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::core::{ApiResource, DynamicResourceScope, Resource};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// An object as listed or watched: the metadata the rules read plus every other top-level field
/// (`spec`, `status`, …) as JSON.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchedObject {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    /// Top-level fields other than apiVersion, kind and metadata.
    pub rest: Map<String, Value>,
}

impl WatchedObject {
    /// Reads an object from JSON (tests, fixtures); `managedFields` is dropped as on the wire.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// The object as JSON, in the shape the model reads (`apiVersion`, `kind`, `metadata`, `spec`, …).
    /// `fallback` names the resource the object came from, for list items sent without type fields.
    #[cfg(test)]
    pub(crate) fn to_value(&self, fallback: &ApiResource) -> Value {
        self.clone().into_value(fallback)
    }

    /// As `to_value`, without copying the fields (the live view projects each object once).
    pub(crate) fn into_value(self, fallback: &ApiResource) -> Value {
        let mut obj = Map::with_capacity(self.rest.len() + 3);
        let api_version = self
            .api_version
            .unwrap_or_else(|| fallback.api_version.clone());
        let kind = self.kind.unwrap_or_else(|| fallback.kind.clone());
        obj.insert("apiVersion".into(), Value::String(api_version));
        obj.insert("kind".into(), Value::String(kind));
        obj.insert(
            "metadata".into(),
            serde_json::to_value(&self.metadata).unwrap_or(Value::Null),
        );
        obj.extend(self.rest);
        Value::Object(obj)
    }
}

impl Resource for WatchedObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The metadata fields kept. Anything else (managedFields first of all) is skipped by serde.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    name: Option<String>,
    generate_name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    finalizers: Option<Vec<String>>,
}

impl From<WireMeta> for ObjectMeta {
    fn from(m: WireMeta) -> Self {
        ObjectMeta {
            name: m.name,
            generate_name: m.generate_name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            generation: m.generation,
            creation_timestamp: m.creation_timestamp,
            deletion_timestamp: m.deletion_timestamp,
            labels: m.labels,
            annotations: m.annotations,
            finalizers: m.finalizers,
            ..ObjectMeta::default()
        }
    }
}

impl<'de> Deserialize<'de> for WatchedObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WatchedObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WatchedObject, A::Error> {
                let mut obj = WatchedObject::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "apiVersion" => obj.api_version = map.next_value()?,
                        "kind" => obj.kind = map.next_value()?,
                        "metadata" => {
                            let meta: Option<WireMeta> = map.next_value()?;
                            obj.metadata = meta.map(ObjectMeta::from).unwrap_or_default();
                        }
                        _ => {
                            let value: Value = map.next_value()?;
                            obj.rest.insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(obj)
            }
        }
        d.deserialize_map(V).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_fields_are_dropped_and_the_rest_kept() {
        let o = WatchedObject::from_value(json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1beta2",
            "kind": "IPAddress",
            "metadata": {
                "name": "a", "namespace": "ns", "resourceVersion": "7",
                "annotations": {"x": "y"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"address": "10.0.0.5"},
            "status": {}
        }))
        .unwrap();
        assert_eq!(o.metadata.name.as_deref(), Some("a"));
        assert_eq!(o.metadata.resource_version.as_deref(), Some("7"));
        assert!(o.metadata.managed_fields.is_none());
        let ar = ApiResource {
            group: "ipam.cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "ipam.cluster.x-k8s.io/v1beta2".into(),
            kind: "IPAddress".into(),
            plural: "ipaddresses".into(),
        };
        let v = o.to_value(&ar);
        assert_eq!(v["spec"]["address"], "10.0.0.5");
        assert_eq!(v["metadata"]["annotations"]["x"], "y");
        assert!(v["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn list_items_without_type_fields_take_the_resource() {
        let o = WatchedObject::from_value(json!({"metadata": {"name": "p"}, "spec": {}})).unwrap();
        let ar = ApiResource {
            group: "spiderpool.spidernet.io".into(),
            version: "v2beta1".into(),
            api_version: "spiderpool.spidernet.io/v2beta1".into(),
            kind: "SpiderIPPool".into(),
            plural: "spiderippools".into(),
        };
        let v = o.to_value(&ar);
        assert_eq!(v["apiVersion"], "spiderpool.spidernet.io/v2beta1");
        assert_eq!(v["kind"], "SpiderIPPool");
    }
}
