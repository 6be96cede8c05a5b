#!/bin/sh
# A short fuzz run for CI: every target for FUZZ_SECONDS (default 20) through fuzz/run.sh, so a
# target that stopped building, or that fails on its seeds or soon after, fails the step. Built
# without AddressSanitizer (the crate forbids `unsafe`; the build and the runs are several times
# faster). Skips, saying why, where nightly or cargo-fuzz is missing.
# Usage: fuzz/smoke.sh [target...]
set -eu
cd "$(dirname "$0")/.."
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz smoke skipped: no nightly toolchain (rustup toolchain install nightly)"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz smoke skipped: cargo-fuzz is not installed (cargo install cargo-fuzz)"
  exit 0
fi
start="$(date +%s)"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}" FUZZ_FLAGS="${FUZZ_FLAGS:---sanitizer none}" fuzz/run.sh "$@"
echo "fuzz smoke passed in $(($(date +%s) - start)) s"
