//! Reads one field of an IPAddress object the way the rules do, N times in a loop, so callgrind
//! can count what one reading costs:
//!
//! ```text
//! cargo build --release --example read_cost --example loadgen
//! target/release/examples/loadgen --write-bodies /tmp/bodies
//! valgrind --tool=callgrind target/release/examples/read_cost /tmp/bodies/address_create.json read_address 10000
//! ```
//!
//! Divide callgrind's total by N, less the `none` mode's (the loop and the body's one decode).
//! Modes: `none`, `read_address` (`model::capi::read_address`), `address_fields`
//! (`AddressFields::read`), `get` (`FieldPath::get` of `spec.address`), `parse_v4`, `parse_v6`.

use std::hint::black_box;

use anyhow::{bail, Context};
use ipam_guard::address::parse_ip;
use ipam_guard::model::capi::{read_address, ADDRESS_PATHS};
use ipam_guard::model::paths::address::ADDRESS;
use ipam_guard::model::written::AddressFields;
use serde_json::Value;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, body, mode, n] = &args[..] else {
        bail!("usage: read_cost <AdmissionReview body> <mode> <iterations>");
    };
    let review: Value = serde_json::from_slice(&std::fs::read(body).context("reading the body")?)?;
    let obj = &review["request"]["object"];
    let n: usize = n.parse()?;
    let mut seen = 0usize;
    for _ in 0..n {
        seen += match mode.as_str() {
            "none" => 0,
            "read_address" => {
                usize::from(read_address(black_box(obj)).spec.prefix_len().unwrap_or(0))
            }
            "address_fields" => {
                let r = AddressFields::read(black_box(obj), ADDRESS_PATHS);
                usize::from(r.prefix_len().unwrap_or(0))
            }
            "get" => usize::from(ADDRESS.get(black_box(obj)).is_some()),
            "parse_v4" => usize::from(parse_ip(black_box("10.123.45.67")).is_ok()),
            "parse_v6" => {
                usize::from(parse_ip(black_box("2001:db8:0:11:ffff:ffff:ffff:ffff")).is_ok())
            }
            other => bail!("unknown mode {other:?}"),
        };
    }
    println!("{seen}");
    Ok(())
}
