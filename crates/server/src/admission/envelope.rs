//! The AdmissionReview envelope, decoded by serde into borrowed types in one pass over the body:
//! strings borrow from it (`Cow`: owned only where the JSON escapes a character), and only
//! `object` and `oldObject` are built as `serde_json::Value` trees (`object`: what the rules
//! read), in the same pass. Capturing them as `&RawValue` and decoding each afterwards reads
//! every object twice, more instructions than the whole of the envelope. The 400 messages for a
//! body that is not a review we can answer are checked in a fixed order (`check`).
//!
//! Every field is read as what it is (`Field`: a string, a boolean, null, or something else)
//! rather than as the type it should be: a wrong-typed field is then reported in our words
//! ("request.dryRun must be a boolean") after the whole body was read as JSON, so broken JSON
//! anywhere is always the first thing said. Duplicate keys keep the last, as a `Value` map (and
//! Go's encoding/json) does. Values nothing reads are skipped through `Skip`, which still
//! descends (serde_json's nesting limit applies, as it does to a tree); the parts of the request
//! no rule reads and whose size is the API server's (`request.resource`, `options`, ...) are
//! skipped unchecked (`IgnoredAny`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::object::ObjectSeed;
use super::parts::{Field, Gvk, GvkFields, Request, RequestFields, Top, TopFields, UserInfo};
use super::skip::{Key, Skip, SkipVisitor};
use crate::model::Operation;

/// The envelope fields ipam-guard reads, borrowed from the body.
#[derive(Debug)]
pub(super) struct Envelope<'b> {
    pub(super) api_version: &'static str,
    pub(super) uid: Cow<'b, str>,
    pub(super) group: Cow<'b, str>,
    pub(super) version: Cow<'b, str>,
    pub(super) kind: Cow<'b, str>,
    pub(super) namespace: Option<Cow<'b, str>>,
    /// `request.name`; empty on a create that names its object by `generateName`.
    pub(super) name: Cow<'b, str>,
    pub(super) operation: Operation,
    /// `null` already read as absent.
    pub(super) object: Option<Value>,
    pub(super) old_object: Option<Value>,
    pub(super) dry_run: bool,
    pub(super) user: Cow<'b, str>,
    pub(super) groups: Vec<Cow<'b, str>>,
}

impl Envelope<'_> {
    /// The same envelope holding its own strings: for a body that does not outlive the review
    /// (a copy with its overflowing numbers quoted).
    pub(super) fn into_owned(self) -> Envelope<'static> {
        let own = |s: Cow<'_, str>| Cow::Owned(s.into_owned());
        Envelope {
            api_version: self.api_version,
            uid: own(self.uid),
            group: own(self.group),
            version: own(self.version),
            kind: own(self.kind),
            namespace: self.namespace.map(own),
            name: own(self.name),
            operation: self.operation,
            object: self.object,
            old_object: self.old_object,
            dry_run: self.dry_run,
            user: own(self.user),
            groups: self.groups.into_iter().map(own).collect(),
        }
    }
}

/// Why a body is not a review we can answer: the 400's message, or a number past an f64 that
/// the caller may quote and read again, so that the field holding it is judged rather than the
/// whole review refused (docs/robustness.md, O5).
pub(super) enum Refused {
    Message(String),
    NumberOutOfRange(serde_json::Error),
}

impl Refused {
    pub(super) fn message(self) -> String {
        match self {
            Refused::Message(m) => m,
            Refused::NumberOutOfRange(e) => not_json(&e),
        }
    }
}

fn not_json(e: &serde_json::Error) -> String {
    format!("request body is not valid JSON: {e}")
}

/// serde_json has no error kind for this one; its text is stable (`ErrorCode::NumberOutOfRange`).
fn number_out_of_range(e: &serde_json::Error) -> bool {
    e.to_string().starts_with("number out of range")
}

/// Reads the envelope. Everything that keeps us from answering (not JSON, not a review, no uid)
/// is refused with a message that says what was wrong.
///
/// Read from bytes, serde_json checks every string it keeps as UTF-8 on its own. A body that is
/// UTF-8 as a whole is checked once and read as text, where strings are not checked again; any
/// other body is read from bytes, so it is refused (or passed, if the bad bytes sit in a part
/// nothing keeps) in serde_json's words.
pub(super) fn decode(body: &[u8]) -> Result<Envelope<'_>, Refused> {
    match std::str::from_utf8(body) {
        Ok(text) => read(serde_json::Deserializer::from_str(text)),
        Err(_) => read(serde_json::Deserializer::from_slice(body)),
    }
}

fn read<'b, R: serde_json::de::Read<'b>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<Envelope<'b>, Refused> {
    let top = Top::deserialize(&mut de)
        .and_then(|top| de.end().map(|()| top))
        .map_err(|e| {
            if number_out_of_range(&e) {
                Refused::NumberOutOfRange(e)
            } else {
                Refused::Message(not_json(&e))
            }
        })?;
    check(top).map_err(Refused::Message)
}

/// The checks, in the order a reader of the body meets the problems: the top level, then the
/// request, then its fields.
fn check<'b>(top: Top<'b>) -> Result<Envelope<'b>, String> {
    let Some(top) = top.0 else {
        return Err("request body is not an AdmissionReview: expected a JSON object".into());
    };
    let api_version = match top.api_version {
        Some(Field::Str(v)) => match &*v {
            "admission.k8s.io/v1" => "admission.k8s.io/v1",
            "admission.k8s.io/v1beta1" => "admission.k8s.io/v1beta1",
            other => {
                return Err(format!(
                    "unsupported AdmissionReview apiVersion {other:?}: expected admission.k8s.io/v1 or admission.k8s.io/v1beta1"
                ))
            }
        },
        _ => return Err("request body is not an AdmissionReview: apiVersion is missing".into()),
    };
    match top.kind {
        Some(Field::Str(k)) if k == "AdmissionReview" => {}
        Some(Field::Str(other)) => {
            return Err(format!(
                "request body is a {other:?}, not an AdmissionReview"
            ))
        }
        _ => return Err("request body is not an AdmissionReview: kind is missing".into()),
    }
    let Some(req) = top.request.and_then(|r| r.0) else {
        return Err("AdmissionReview has no request object".into());
    };
    let uid = match req.uid {
        Some(Field::Str(s)) if !s.is_empty() => s,
        _ => {
            return Err(
                "AdmissionReview request has no uid: an answer could not be matched to it".into(),
            )
        }
    };
    let Some(Gvk(Some(gvk))) = req.kind else {
        return Err(
            "AdmissionReview request.kind must be an object with group, version and kind".into(),
        );
    };
    let gvk_field = |f: Option<Field<'b>>, k: &str| {
        text(f).map_err(|()| format!("AdmissionReview request.kind.{k} must be a string"))
    };
    let group = gvk_field(gvk.group, "group")?;
    let version = gvk_field(gvk.version, "version")?;
    let kind = gvk_field(gvk.kind, "kind")?;
    if kind.is_empty() {
        return Err("AdmissionReview request.kind.kind is missing".into());
    }
    let str_field = |f: Option<Field<'b>>, k: &str| {
        text(f).map_err(|()| format!("AdmissionReview request.{k} must be a string"))
    };
    let operation = str_field(req.operation, "operation")?;
    let Some(operation) = Operation::parse(&operation) else {
        return Err(format!(
            "AdmissionReview request.operation {operation:?} is not one of CREATE, UPDATE, DELETE, CONNECT"
        ));
    };
    let namespace = Some(str_field(req.namespace, "namespace")?).filter(|s| !s.is_empty());
    let name = str_field(req.name, "name")?;
    let dry_run = match req.dry_run {
        None | Some(Field::Null) => false,
        Some(Field::Bool(b)) => b,
        Some(_) => return Err("AdmissionReview request.dryRun must be a boolean".into()),
    };
    let present = |v: Option<Value>| v.filter(|v| !v.is_null());
    // Only for logs: a userInfo of the wrong shape is not a reason to refuse the review.
    let UserInfo { user, groups } = req.user_info.unwrap_or_default();
    Ok(Envelope {
        api_version,
        uid,
        group,
        version,
        kind,
        namespace,
        name,
        operation,
        object: present(req.object),
        old_object: present(req.old_object),
        dry_run,
        user: user.unwrap_or_default(),
        groups,
    })
}

/// A string field: absent or null is empty, a string is itself, anything else is refused.
fn text(f: Option<Field<'_>>) -> Result<Cow<'_, str>, ()> {
    match f {
        None | Some(Field::Null) => Ok(Cow::Borrowed("")),
        Some(Field::Str(s)) => Ok(s),
        Some(_) => Err(()),
    }
}

impl<'de> Deserialize<'de> for Field<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Owned(v)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Field<'de>, E> {
        Ok(Field::Bool(v))
    }
    fn visit_unit<E>(self) -> Result<Field<'de>, E> {
        Ok(Field::Null)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field<'de>, A::Error> {
        SkipVisitor.visit_map(map).map(|_| Field::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field<'de>, A::Error> {
        SkipVisitor.visit_seq(seq).map(|_| Field::Other)
    }
}

/// A visitor for a value that should be a map: any other value is read through (`Skip`) and
/// gives `None`.
macro_rules! map_or_none {
    ($visitor:ident => $out:ty, $what:literal, |$map:ident| $read:block) => {
        impl<'de> Visitor<'de> for $visitor {
            type Value = Option<$out>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str($what)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                SkipVisitor.visit_seq(seq).map(|_| None)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut $map: A) -> Result<Self::Value, A::Error> {
                $read
            }
        }
    };
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TopVisitor).map(Top)
    }
}

struct TopVisitor;

map_or_none!(TopVisitor => TopFields<'de>, "an AdmissionReview", |map| {
    let mut out = TopFields::default();
    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
        match &*key {
            "apiVersion" => out.api_version = Some(map.next_value()?),
            "kind" => out.kind = Some(map.next_value()?),
            "request" => out.request = Some(map.next_value()?),
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(Some(out))
});

impl<'de> Deserialize<'de> for Request<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RequestVisitor).map(Request)
    }
}

struct RequestVisitor;

map_or_none!(RequestVisitor => RequestFields<'de>, "an AdmissionRequest", |map| {
    let mut out = RequestFields::default();
    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
        match &*key {
            "uid" => out.uid = Some(map.next_value()?),
            "kind" => out.kind = Some(map.next_value()?),
            "operation" => out.operation = Some(map.next_value()?),
            "namespace" => out.namespace = Some(map.next_value()?),
            "name" => out.name = Some(map.next_value()?),
            "dryRun" => out.dry_run = Some(map.next_value()?),
            "object" => out.object = Some(map.next_value_seed(ObjectSeed)?),
            "oldObject" => out.old_object = Some(map.next_value_seed(ObjectSeed)?),
            "userInfo" => out.user_info = map.next_value::<Lenient>()?.0,
            // Never read, and written by the API server itself: skipped unchecked.
            "resource" | "subResource" | "requestKind" | "requestResource"
            | "requestSubResource" | "options" => {
                map.next_value::<IgnoredAny>()?;
            }
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(Some(out))
});

impl<'de> Deserialize<'de> for Gvk<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(GvkVisitor).map(Gvk)
    }
}

struct GvkVisitor;

map_or_none!(GvkVisitor => GvkFields<'de>, "a group, version and kind", |map| {
    let mut out = GvkFields::default();
    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
        match &*key {
            "group" => out.group = Some(map.next_value()?),
            "version" => out.version = Some(map.next_value()?),
            "kind" => out.kind = Some(map.next_value()?),
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(Some(out))
});

struct Lenient<'b>(Option<UserInfo<'b>>);

impl<'de> Deserialize<'de> for Lenient<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UserInfoVisitor).map(Lenient)
    }
}

struct UserInfoVisitor;

map_or_none!(UserInfoVisitor => UserInfo<'de>, "a userInfo", |map| {
    let mut out = UserInfo::default();
    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
        match &*key {
            "username" => {
                out.user = match map.next_value()? {
                    Field::Str(s) => Some(s),
                    _ => None,
                }
            }
            "groups" => out.groups = map.next_value::<Groups>()?.0,
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(Some(out))
});

/// The strings of an array; anything else in it, or anything but an array, is passed over.
struct Groups<'b>(Vec<Cow<'b, str>>);

impl<'de> Deserialize<'de> for Groups<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(GroupsVisitor)
    }
}

struct GroupsVisitor;

impl<'de> Visitor<'de> for GroupsVisitor {
    type Value = Groups<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of groups")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Groups<'de>, E> {
        Ok(Groups(Vec::new()))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Groups<'de>, E> {
        Ok(Groups(Vec::new()))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Groups<'de>, E> {
        Ok(Groups(Vec::new()))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Groups<'de>, E> {
        Ok(Groups(Vec::new()))
    }
    fn visit_str<E>(self, _: &str) -> Result<Groups<'de>, E> {
        Ok(Groups(Vec::new()))
    }
    fn visit_unit<E>(self) -> Result<Groups<'de>, E> {
        Ok(Groups(Vec::new()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Groups<'de>, A::Error> {
        SkipVisitor.visit_map(map).map(|_| Groups(Vec::new()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Groups<'de>, A::Error> {
        let mut out = Vec::new();
        while let Some(f) = seq.next_element::<Field<'de>>()? {
            if let Field::Str(s) = f {
                out.push(s);
            }
        }
        Ok(Groups(out))
    }
}
