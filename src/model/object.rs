//! A review's object (`request.object`, `request.oldObject`) as the rules get it: its `Value`
//! tree, or, for a kind whose fields were read straight from the body's text on the way in
//! (`TextObject`: a CAPI `IPAddress` not said to be an UPDATE), that text and those fields, with
//! the tree built from the text only if something asks for it. A tree costs more than the rest of
//! the review's decoding: its maps and strings, built and taken apart again.
//! Whoever reads the tree gets the tree the review would have had, so nothing but the
//! kind's typed reader need know which one it holds.

use std::cell::OnceCell;

use serde_json::Value;

use super::capi::AddressText;

/// An object as decoded, owned by the review. Not boxed: a review's envelope lives on its
/// thread's stack for the one review, and a box would be an allocation per review.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum ReviewObject<'b> {
    Tree(Value),
    Text(TextObject<'b>),
}

impl<'b> ReviewObject<'b> {
    /// The object as the rules take it.
    pub fn as_obj(&self) -> Obj<'_> {
        match self {
            ReviewObject::Tree(v) => Obj::Tree(v),
            ReviewObject::Text(t) => Obj::Text(t),
        }
    }

    /// The tree, when one was built: a review gives its trees' strings back to its reader
    /// (`admission::scan::recycle`), and building one only to give it back would be waste.
    pub fn into_tree(self) -> Option<Value> {
        match self {
            ReviewObject::Tree(v) => Some(v),
            ReviewObject::Text(t) => t.tree.into_inner(),
        }
    }

    /// The tree, built if it was not.
    pub fn into_value(self) -> Value {
        match self {
            ReviewObject::Tree(v) => v,
            ReviewObject::Text(t) => t.tree.into_inner().unwrap_or_else(|| (t.build)(t.text)),
        }
    }

    /// The same object holding no borrowed text: its tree.
    pub fn into_owned(self) -> ReviewObject<'static> {
        ReviewObject::Tree(self.into_value())
    }
}

/// An object kept as the body's text, with what its kind's reader took from it.
pub struct TextObject<'b> {
    text: &'b str,
    address: AddressText<'b>,
    tree: OnceCell<Value>,
    /// The reader that builds the tree the review would have had: the admission layer's.
    build: fn(&str) -> Value,
}

impl std::fmt::Debug for TextObject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextObject")
            .field("text", &self.text)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl<'b> TextObject<'b> {
    /// `text` is an object's JSON text, checked as JSON by the reader that read `address` from
    /// it; `build` makes its tree.
    pub fn address(text: &'b str, address: AddressText<'b>, build: fn(&str) -> Value) -> Self {
        TextObject {
            text,
            address,
            tree: OnceCell::new(),
            build,
        }
    }

    pub fn text(&self) -> &'b str {
        self.text
    }

    fn tree(&self) -> &Value {
        self.tree.get_or_init(|| (self.build)(self.text))
    }
}

/// An object as the rules read it: `value` gives the tree (built on the first ask for an
/// object kept as text).
#[derive(Debug, Clone, Copy)]
pub enum Obj<'a> {
    Tree(&'a Value),
    Text(&'a TextObject<'a>),
}

impl<'a> Obj<'a> {
    /// The tree, for as long as the object lives.
    pub fn value(self) -> &'a Value {
        match self {
            Obj::Tree(v) => v,
            Obj::Text(t) => t.tree(),
        }
    }

    /// Whether it is a JSON object (a text object always is), without building a tree.
    pub fn is_object(self) -> bool {
        match self {
            Obj::Tree(v) => v.is_object(),
            Obj::Text(_) => true,
        }
    }

    /// `metadata.name`, when it is a string.
    pub fn name(self) -> Option<&'a str> {
        match self {
            Obj::Tree(v) => v.pointer("/metadata/name").and_then(Value::as_str),
            Obj::Text(t) => t.address.name,
        }
    }

    /// A CAPI `IPAddress`'s fields as read from its text, when it was kept as text.
    pub fn address_text(self) -> Option<&'a AddressText<'a>> {
        match self {
            Obj::Tree(_) => None,
            Obj::Text(t) => Some(&t.address),
        }
    }
}

impl<'a> From<&'a Value> for Obj<'a> {
    fn from(v: &'a Value) -> Self {
        Obj::Tree(v)
    }
}
