#!/bin/sh
# Runs fuzz targets one after another, each for FUZZ_SECONDS (default 600), nice'd, with the seed
# corpora from tests/fixtures and examples. Usage: fuzz/run.sh [target...] (default: all three).
# Extra cargo-fuzz flags (e.g. `--sanitizer none` on stable) go in FUZZ_FLAGS.
set -eu
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${FUZZ_SECONDS:-600}"
TOOLCHAIN="${TOOLCHAIN:-+nightly}"
FLAGS="${FUZZ_FLAGS:-}"
targets="${*:-address review load}"
for t in $targets; do
  case "$t" in
    address) seeds="fuzz/seeds/address"; dict="fuzz/dicts/address.dict" ;;
    review) seeds="tests/fixtures/captures tests/fixtures/captures/mutating tests/fixtures/eco tests/fixtures/admission tests/fixtures/rules examples/reviews"; dict="fuzz/dicts/review.dict" ;;
    load) seeds="tests/fixtures/check tests/fixtures/check/bad tests/fixtures/check/mixed examples/broken examples/manifests"; dict="fuzz/dicts/review.dict" ;;
    *) echo "unknown target $t" >&2; exit 2 ;;
  esac
  mkdir -p "fuzz/corpus/$t"
  # shellcheck disable=SC2086 # word splitting of the seed list is intended
  nice cargo $TOOLCHAIN fuzz run $FLAGS "$t" "fuzz/corpus/$t" $seeds -- \
    -max_total_time="$SECONDS_PER_TARGET" -dict="$dict" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 2>&1 | tee "fuzz/$t.log" | grep -E "^#[0-9]+.*(DONE|pulse)|stat::|ERROR|SUMMARY|panicked|Test unit written" || true
done
