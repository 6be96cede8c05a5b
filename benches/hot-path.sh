#!/bin/bash
# `ipam-guard serve --dev --state-from` (10k pools, 100k claims, 100k IPAddresses) and the
# do-nothing webhook `examples/echo.rs` (bare hyper + rustls, same TLS settings), both external
# processes on loopback, driven by the same load generator, alternating guard / echo, RUNS times
# at 1 and at 16 connections. Prints one line per run and the ratios of the medians
# (docs/performance.md, "Hot path").
#
#   benches/hot-path.sh                                   # builds, 3 runs each
#   RUNS=5 CONNS="16" GUARD=/tmp/old/ipam-guard benches/hot-path.sh
#   GLIBC_TUNABLES= benches/hot-path.sh                  # glibc's defaults, not the image's
#
# The machine is shared: each line records the 1-minute load average before it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ipam-guard-hot}
RUNS=${RUNS:-3}
CONNS=${CONNS:-1 16}
GUARD=${GUARD:-target/release/ipam-guard}
LG=target/release/examples/loadgen
ECHO=${ECHO:-target/release/examples/echo}
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin ipam-guard --example loadgen --example echo
mkdir -p "$OUT"
[ -d "$OUT/state" ] || $LG --write-state "$OUT/state" 2>&1 | tail -1

. benches/hot-path-lib.sh
start_servers

requests() { if [ "$1" = 1 ]; then echo 20000; else echo 100000; fi; }

: >"$OUT/summary.txt"
for conns in $CONNS; do
  for run in $(seq 1 "$RUNS"); do
    for target in guard echo; do
      if [ $target = guard ]; then
        flags=(--url https://localhost:51000 --server-pid "$GUARD_PID")
      else
        flags=(--baseline --url https://localhost:51010 --server-pid "$ECHO_PID")
      fi
      load=$(cut -d' ' -f1 /proc/loadavg)
      f="$OUT/lg-$target-$conns-$run.txt"
      $LG "${flags[@]}" --cacert "$OUT/certs/ca.crt" --connections "$conns" \
        --requests "$(requests "$conns")" >"$f" 2>&1
      # Server CPU per request = the server's cores over the run / its throughput.
      awk -v t=$target -v c="$conns" -v r="$run" -v l="$load" '
        /^throughput/ { rps = $2; err = $NF }
        /^all / { p50 = $4; p99 = $6 }
        /^CPU during/ {
          for (i = 1; i <= NF; i++) if ($i == "pid") { s = $(i + 1); sub(",", "", s) }
          others = $NF }
        END { printf "%s conns=%s run=%s load=%s reviews/s=%s p50=%s p99=%s errors=%s others=%s server_cpu_us=%.1f\n",
              t, c, r, l, rps, p50, p99, err, others, s / rps * 1e6 }' "$f" | tee -a "$OUT/summary.txt"
    done
  done
done

# Ratios of the medians over the runs: guard / echo.
median_ratios "$OUT/summary.txt" | tee -a "$OUT/summary.txt"
