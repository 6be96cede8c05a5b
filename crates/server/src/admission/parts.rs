//! A review's parts as serde's visitors (`envelope`, `object`) read them, before
//! `envelope::check` judges them.

use std::borrow::Cow;

use serde_json::Value;

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
    pub(super) object: Option<Value>,
    pub(super) old_object: Option<Value>,
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
