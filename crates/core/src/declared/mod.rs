//! Kinds as data: pool kinds ipam-guard was not compiled with, declared in an `AddressKinds` file
//! (`--kinds FILE`, docs/kinds.md). Each entry names a kind (group, kind, versions) and a CEL
//! expression over the object that yields its addresses; the expressions are compiled once, when
//! the file is read, and evaluated under bounds of our own (`expr`), because the CEL evaluator has
//! no cost limit.
//!
//! `load` reads and checks a file into [`Declaration`]s; `registry` numbers the declarations of
//! every file; `expr` compiles and evaluates one expression into an [`Addresses`] (the project's
//! address grammar, `crate::address`).

mod expr;
mod load;
mod registry;

pub use expr::{Addresses, CelObject, EvalError, Expr, Limits, ObjectStats, LIMITS};
pub use load::{default_plural, parse, DeclError, Declaration, Role};
pub use registry::{declaration, Registry};

#[cfg(test)]
mod tests;
