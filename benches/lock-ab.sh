#!/bin/bash
# The decision lock's effect: two ipam-guard builds side by side, a 50% mix of
# conflicting pool creates (`pool_create`: admitted, recorded under the lock; `pool_create_overlap`:
# denied by P10 against the view) at 16 connections, runs alternating between the builds.
#
#   BEFORE=/path/to/ipam-guard-with-the-old-lock benches/lock-ab.sh
#
# BEFORE is a release build of this tree with `validate_here` judging inside `decide_as` (now `reserve_as`) (the code
# before e12e4cd); AFTER defaults to target/release/ipam-guard.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ipam-guard-lock-ab}
RUNS=${RUNS:-3}
REQUESTS=${REQUESTS:-100000}
AFTER=${AFTER:-target/release/ipam-guard}
: "${BEFORE:?set BEFORE to the ipam-guard binary with the whole validation under the lock}"
LG=target/release/examples/loadgen
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin ipam-guard --example loadgen
mkdir -p "$OUT"
[ -d "$OUT/state" ] || $LG --write-state "$OUT/state" 2>&1 | tail -1

PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
start() { # name binary port
  "$2" serve --dev --shutdown-delay 0s --cert-dir "$OUT/certs" --state-from "$OUT/state" \
    --listen "127.0.0.1:$3" --probe-listen "127.0.0.1:$(($3 + 1))" --metrics-listen "127.0.0.1:$(($3 + 2))" \
    >"$OUT/$1.log" 2>&1 &
  PIDS+=("$!")
  until curl -sf "http://127.0.0.1:$(($3 + 1))/readyz" >/dev/null; do sleep 0.5; done
}
start before "$BEFORE" 51100
BEFORE_PID=${PIDS[0]}
start after "$AFTER" 51200
AFTER_PID=${PIDS[1]}

: >"$OUT/summary.txt"
for run in $(seq 1 "$RUNS"); do
  for build in before after; do
    if [ $build = before ]; then port=51100 pid=$BEFORE_PID; else port=51200 pid=$AFTER_PID; fi
    f="$OUT/lg-$build-$run.txt"
    load=$(cut -d' ' -f1 /proc/loadavg)
    $LG --url "https://localhost:$port" --server-pid "$pid" --cacert "$OUT/certs/ca.crt" \
      --only pool_create,pool_create_overlap --connections 16 --requests "$REQUESTS" >"$f" 2>&1
    awk -v b=$build -v r="$run" -v l="$load" '
      /^throughput/ { rps = $2; err = $NF }
      /^all / { p50 = $4; p99 = $6 }
      END { printf "%s run=%s load=%s reviews/s=%s p50=%s p99=%s errors=%s\n", b, r, l, rps, p50, p99, err }' \
      "$f" | tee -a "$OUT/summary.txt"
  done
done
