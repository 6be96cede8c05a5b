#!/bin/sh
# Runs fuzz targets one after another, each for FUZZ_SECONDS (default 600), nice'd, with the seed
# corpora from tests/fixtures, examples and fuzz/seeds. Usage: fuzz/run.sh [target...] (default:
# all five). Extra cargo-fuzz flags (e.g. `--sanitizer none`) go in FUZZ_FLAGS, extra libFuzzer
# flags (e.g. `-runs=10000000`) in FUZZ_ARGS. Each target's whole output is in fuzz/<target>.log.
# Exits 1 when a target did not end cleanly (a finding, or a build failure), after the others ran.
set -eu
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${FUZZ_SECONDS:-600}"
TOOLCHAIN="${TOOLCHAIN:-+nightly}"
FLAGS="${FUZZ_FLAGS:-}"
ARGS="${FUZZ_ARGS:-}"
targets="${*:-address review load forward watch}"
failed=""
for t in $targets; do
  dict=""
  case "$t" in
    address) seeds="fuzz/seeds/address"; dict="fuzz/dicts/address.dict" ;;
    review) seeds="tests/fixtures/reviews/v1.36 tests/fixtures/reviews/v1.36/mutating tests/fixtures/reviews/v1.20 tests/fixtures/reviews/v1.20/mutating examples/reviews"; dict="fuzz/dicts/review.dict" ;;
    load) seeds="tests/fixtures/check tests/fixtures/check/bad tests/fixtures/check/mixed examples/broken examples/manifests"; dict="fuzz/dicts/review.dict" ;;
    forward) seeds="fuzz/seeds/forward"; dict="fuzz/dicts/forward.dict" ;;
    # Its bytes are carved into steps over a fixed universe: no text to seed, no tokens to suggest.
    watch) seeds="" ;;
    *) echo "unknown target $t" >&2; exit 2 ;;
  esac
  mkdir -p "fuzz/corpus/$t"
  status="fuzz/$t.status"
  rm -f "$status"
  # The pipe's status is grep's: a file written only when cargo succeeded carries cargo's.
  # shellcheck disable=SC2086 # word splitting of the seed list and flags is intended
  {
    nice cargo $TOOLCHAIN fuzz run $FLAGS "$t" "fuzz/corpus/$t" $seeds -- \
      -max_total_time="$SECONDS_PER_TARGET" ${dict:+-dict="$dict"} -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 $ARGS && echo ok >"$status"
  } 2>&1 | tee "fuzz/$t.log" | grep -E "^#[0-9]+.*(DONE|pulse)|stat::|ERROR|SUMMARY|panicked|Test unit written|^error" || true
  [ -f "$status" ] || failed="$failed $t"
  rm -f "$status"
done
if [ -n "$failed" ]; then
  echo "fuzz: failed:$failed (see fuzz/<target>.log; inputs in fuzz/artifacts/<target>/)" >&2
  exit 1
fi
