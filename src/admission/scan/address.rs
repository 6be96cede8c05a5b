//! A CAPI `IPAddress` read straight from a review's text into its typed fields
//! (`model::capi::AddressText`), without a tree: on an address CREATE the tree was a fifth of
//! what the guard spent beyond the echo webhook. The object is checked
//! as JSON exactly as the tree's reader checks it (every value it does not keep is `skip`ped);
//! where a field the rules read is of another type than its schema's, written with escapes, null
//! or repeated, this reader gives up and the tree is built as before, so such a field keeps its
//! cause in the same words.

use std::borrow::Cow;

use crate::model::capi::{AddressText, RefText};

use super::Scan;

impl<'b> Scan<'b> {
    /// The object at the cursor as an `IPAddress`'s fields; None to read it as a tree instead
    /// (the cursor is then of no use).
    pub(super) fn address_text(&mut self) -> Option<AddressText<'b>> {
        let mut out = AddressText::default();
        let (mut metadata, mut spec) = (false, false);
        self.object(|s, key| match &*key {
            "metadata" => {
                once(&mut metadata)?;
                s.object(|s, key| match &*key {
                    "name" => s.text_once(&mut out.name),
                    "namespace" => s.text_once(&mut out.namespace),
                    _ => s.skip(),
                })
            }
            "spec" => {
                once(&mut spec)?;
                s.object(|s, key| match &*key {
                    "address" => s.text_once(&mut out.address),
                    "gateway" => s.text_once(&mut out.gateway),
                    "prefix" if out.prefix.is_none() && matches!(s.peek()?, b'-' | b'0'..=b'9') => {
                        out.prefix = Some(s.integer()?);
                        Some(())
                    }
                    "prefix" => None,
                    "claimRef" => s.reference_once(&mut out.claim_ref),
                    "poolRef" => s.reference_once(&mut out.pool_ref),
                    _ => s.skip(),
                })
            }
            _ => s.skip(),
        })?;
        Some(out)
    }

    /// A string without escapes, into a field not read yet.
    fn text_once(&mut self, field: &mut Option<&'b str>) -> Option<()> {
        if field.is_some() || self.peek()? != b'"' {
            return None;
        }
        match self.string()? {
            Cow::Borrowed(text) => *field = Some(text),
            Cow::Owned(_) => return None,
        }
        Some(())
    }

    /// A reference's keys the rules read, into a field not read yet.
    fn reference_once(&mut self, field: &mut Option<RefText<'b>>) -> Option<()> {
        if field.is_some() || self.peek()? != b'{' {
            return None;
        }
        let mut out = RefText::default();
        self.object(|s, key| match &*key {
            "apiGroup" => s.text_once(&mut out.api_group),
            "kind" => s.text_once(&mut out.kind),
            "name" => s.text_once(&mut out.name),
            "namespace" => {
                once(&mut out.has_namespace)?;
                s.skip()
            }
            _ => s.skip(),
        })?;
        *field = Some(out);
        Some(())
    }
}

/// Marks a key seen; None when it was (a repeated key is left to the tree, which keeps the last).
fn once(seen: &mut bool) -> Option<()> {
    (!std::mem::replace(seen, true)).then_some(())
}
