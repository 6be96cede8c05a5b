//! A review's parts as read, before `envelope::check` judges them: what both readers produce,
//! serde_json's visitors (`envelope`, `object`) and our own (`scan`).

use std::borrow::Cow;

use serde_json::Value;

use crate::model::object::ReviewObject;
use crate::model::UNREAD_METADATA;

/// A JSON value read as what it is.
pub(super) enum Field<'b> {
    Null,
    Str(Cow<'b, str>),
    Bool(bool),
    Other,
}

/// The review's top level; `None` when the body is JSON but not an object.
pub(super) struct Top<'b>(pub(super) Option<TopFields<'b>>);

#[derive(Default)]
pub(super) struct TopFields<'b> {
    pub(super) api_version: Option<Field<'b>>,
    pub(super) kind: Option<Field<'b>>,
    pub(super) request: Option<Request<'b>>,
}

/// `request`; `None` inside when it is not an object.
pub(super) struct Request<'b>(pub(super) Option<RequestFields<'b>>);

#[derive(Default)]
pub(super) struct RequestFields<'b> {
    pub(super) uid: Option<Field<'b>>,
    pub(super) kind: Option<Gvk<'b>>,
    pub(super) operation: Option<Field<'b>>,
    pub(super) namespace: Option<Field<'b>>,
    pub(super) name: Option<Field<'b>>,
    pub(super) dry_run: Option<Field<'b>>,
    pub(super) object: Option<ReviewObject<'b>>,
    pub(super) old_object: Option<Value>,
    /// `oldObject` was read as the object's text but for labels no rule reads (`scan`), and
    /// no tree was built for it.
    pub(super) old_like_object: bool,
    pub(super) user_info: Option<UserInfo<'b>>,
}

/// `request.kind`; `None` inside when it is not an object.
pub(super) struct Gvk<'b>(pub(super) Option<GvkFields<'b>>);

#[derive(Default)]
pub(super) struct GvkFields<'b> {
    pub(super) group: Option<Field<'b>>,
    pub(super) version: Option<Field<'b>>,
    pub(super) kind: Option<Field<'b>>,
}

/// `request.userInfo`, read leniently: a wrong shape is empty, never an error of the review.
#[derive(Default)]
pub(super) struct UserInfo<'b> {
    pub(super) user: Option<Cow<'b, str>>,
    pub(super) groups: Vec<Cow<'b, str>>,
}

/// Where in the object a map sits, which says what to skip in it.
#[derive(Clone, Copy)]
pub(super) enum Level {
    Object,
    Metadata,
}

/// What is done with the value of a key.
pub(super) enum Take {
    /// Not checked beyond being JSON (`IgnoredAny`): nothing reads it.
    Ignore,
    /// Read through as the tree would read it, and not kept.
    Skip,
    Plain,
    Into(Level),
}

impl Level {
    pub(super) fn take(self, key: &str) -> Take {
        match (self, key) {
            (Level::Object, "metadata") => Take::Into(Level::Metadata),
            (Level::Metadata, "managedFields") => Take::Ignore,
            (Level::Metadata, k) if UNREAD_METADATA.contains(&k) => Take::Skip,
            _ => Take::Plain,
        }
    }
}
