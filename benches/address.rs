//! Address grammar: the parse every pool entry, address and gateway goes through.
//! `cargo bench --bench address`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ipam_guard::address::{parse_cidr, parse_entry, parse_ip, Forms};

fn ips(c: &mut Criterion) {
    let mut g = c.benchmark_group("address/ip");
    for (name, text) in [
        ("v4", "10.123.45.67"),
        ("v6_canonical", "2001:db8:12:34::5"),
        // Accepted with a warning that spells the canonical form: the slow path.
        (
            "v6_not_canonical",
            "2001:0DB8:0012:0034:0000:0000:0000:0005",
        ),
        // Leading zeros: a denial, so the error path is priced too.
        ("v4_invalid", "010.123.45.67"),
    ] {
        g.bench_function(name, |b| b.iter(|| parse_ip(black_box(text))));
    }
    g.finish();
}

fn entries(c: &mut Criterion) {
    let mut g = c.benchmark_group("address/entry");
    for (name, text) in [
        ("v4_range", "10.10.0.10-10.10.0.200"),
        ("v6_range", "2001:db8::10-2001:db8::ffff"),
        ("v4_cidr", "10.10.0.0/24"),
        ("v4_cidr_host_bits", "10.10.0.1/24"),
        ("v6_cidr_48", "2001:db8:1234::/48"),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| parse_entry(black_box(text), black_box(Forms::ALL)))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("address/cidr");
    for (name, text) in [("v4", "10.0.0.0/8"), ("v6", "2001:db8:1234::/48")] {
        g.bench_function(name, |b| b.iter(|| parse_cidr(black_box(text))));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    // Parses take tens of nanoseconds: short runs give stable figures and keep `cargo bench` short.
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    targets = ips, entries
}
criterion_main!(benches);
