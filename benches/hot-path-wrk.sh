#!/bin/bash
# The hot path as the install meets it: `wrk` (C client, Debian package) POSTing one real IPAddress
# CREATE review that ipam-guard admits, against `ipam-guard serve --dev --state-from` (10k pools,
# 100k claims, 100k IPAddresses) and against the do-nothing webhook `examples/echo.rs` (bare hyper +
# rustls, same TLS settings), alternating guard / echo, RUNS times at 1 and at 16 connections.
# Prints one line per run, the ratios of the medians and the median p50 ratio of the runs paired
# (docs/performance.md, "Hot path"). Nine short runs, not three long ones: with three, one
# disturbed run decides the median, and four invocations on one binary read the one-connection
# p50 ratio at 1.09x to 1.28x; four with nine runs of 5 s read 1.13x to 1.19x.
#
#   benches/hot-path-wrk.sh                       # builds, 9 runs of 5 s each
#   RUNS=5 DURATION=20s CASE=pool_create NO_BUILD=1 benches/hot-path-wrk.sh
#   GUARD=/tmp/t/release/ipam-guard ECHO=/tmp/t/release/examples/echo NO_BUILD=1 benches/hot-path-wrk.sh   # another build of both
#   GLIBC_TUNABLES= benches/hot-path-wrk.sh       # glibc's defaults, not the image's (image-env.sh)
#   CPU_LIMIT=deployment benches/hot-path-wrk.sh  # both under the Deployment's CPU quota (root)
#
# CASE is any loadgen case that is admitted (address_create, claim_create, pool_create, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ipam-guard-hot}
RUNS=${RUNS:-9}
CONNS=${CONNS:-1 16}
DURATION=${DURATION:-5s}
CASE=${CASE:-address_create}
GUARD=${GUARD:-target/release/ipam-guard}
LG=target/release/examples/loadgen
ECHO=${ECHO:-target/release/examples/echo}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin ipam-guard --example loadgen --example echo
mkdir -p "$OUT"
[ -d "$OUT/state" ] || $LG --write-state "$OUT/state" 2>&1 | tail -1
[ -f "$OUT/bodies/$CASE.json" ] || $LG --write-bodies "$OUT/bodies" 2>&1 | tail -1
export BODY="$OUT/bodies/$CASE.json"

. benches/hot-path-lib.sh
start_servers
echo "rss_after_load_kib=$(awk '/VmRSS/ {print $2}' /proc/$GUARD_PID/status)"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

: >"$OUT/wrk-summary.txt"
for conns in $CONNS; do
  threads=$((conns < 2 ? conns : 2))
  for run in $(seq 1 "$RUNS"); do
    for target in guard echo; do
      if [ $target = guard ]; then port=51000; pid=$GUARD_PID; else port=51010; pid=$ECHO_PID; fi
      load=$(cut -d' ' -f1 /proc/loadavg)
      before=$(ticks "$pid")
      line=$(wrk -t"$threads" -c"$conns" -d"$DURATION" -s benches/wrk-review.lua \
        "https://localhost:$port/validate" | grep '^RESULT')
      after=$(ticks "$pid")
      echo "$line" | awk -v t=$target -v c="$conns" -v r="$run" -v l="$load" \
        -v cpu="$((after - before))" -v hz="$hz" '
        { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          printf "%s conns=%s run=%s load=%s reviews/s=%s p50=%s p99=%s not_allowed=%s errors=%s server_cpu_us=%.1f\n",
            t, c, r, l, v["rps"], v["p50"], v["p99"], v["not_allowed"], v["errors"],
            cpu / hz / v["requests"] * 1e6 }' | tee -a "$OUT/wrk-summary.txt"
    done
  done
done
echo "rss_after_traffic_kib=$(awk '/VmRSS/ {print $2}' /proc/$GUARD_PID/status)"

median_ratios "$OUT/wrk-summary.txt" | tee -a "$OUT/wrk-summary.txt"
