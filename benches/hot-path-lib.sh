# Shared by benches/hot-path.sh and benches/hot-path-wrk.sh (sourced, not run): the two servers
# side by side, and the ratios of the medians of their runs.

# Starts `$GUARD serve --dev --state-from $OUT/state` on 51000 (probes 51001, metrics 51002) and
# the echo on 51010; sets GUARD_PID and ECHO_PID and kills both on exit.
start_servers() {
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
  # Both with the image's environment (benches/image-env.sh), in a subshell that execs, so $! is
  # the server.
  (. benches/image-env.sh && exec $GUARD serve --dev --shutdown-delay 0s --log-format "$LOG_FORMAT" --cert-dir "$OUT/certs" --state-from "$OUT/state" \
    --listen 127.0.0.1:51000 --probe-listen 127.0.0.1:51001 --metrics-listen 127.0.0.1:51002 \
    >"$OUT/guard.log" 2>&1) &
  GUARD_PID=$!
  PIDS+=("$GUARD_PID")
  until curl -sf http://127.0.0.1:51001/readyz >/dev/null; do
    kill -0 "$GUARD_PID" || { cat "$OUT/guard.log"; exit 1; }
    sleep 0.5
  done
  (. benches/image-env.sh && exec $ECHO --cert-dir "$OUT/certs" --listen 127.0.0.1:51010 >"$OUT/echo.log" 2>&1) &
  ECHO_PID=$!
  PIDS+=("$ECHO_PID")
  sleep 0.5
}

# Reads summary lines `guard|echo conns=N run=R ... reviews/s=X p50=X p99=X ... server_cpu_us=X`
# from $1 and prints, per connection count, guard / echo for the medians of each figure, and the
# median of the p50 ratios of the runs taken side by side (guard run R, then echo run R): a
# disturbance that falls on both runs of a pair cancels there, where it moves one median only.
median_ratios() {
  awk '
    $1 == "guard" || $1 == "echo" {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      key = $1 " " f["conns"]; i = ++cnt[key]
      rps[key, i] = f["reviews/s"]; p50[key, i] = f["p50"]; p99[key, i] = f["p99"]
      cpu[key, i] = f["server_cpu_us"]; run[key, i] = f["run"] }
    function median(arr, key, k,   v, j, m, t) {
      for (j = 1; j <= k; j++) v[j] = arr[key, j]
      for (j = 1; j <= k; j++) for (m = j + 1; m <= k; m++) if (v[m] < v[j]) { t = v[j]; v[j] = v[m]; v[m] = t }
      return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END {
      for (key in cnt) { split(key, kc, " "); if (kc[1] != "guard") continue
        e = "echo " kc[2]; k = cnt[key]
        # The pairs: each guard run with the echo run of the same number.
        n = 0
        for (j = 1; j <= cnt[e]; j++) echo_p50[run[e, j]] = p50[e, j]
        for (j = 1; j <= k; j++) if (run[key, j] in echo_p50 && echo_p50[run[key, j]] > 0) pair[key, ++n] = p50[key, j] / echo_p50[run[key, j]]
        delete echo_p50
        printf "conns=%s medians over %d runs: throughput %.2fx echo, p50 %.2fx echo, p99 %.2fx echo, server CPU per request %.2fx echo; p50 of the runs paired %.2fx echo\n", kc[2], k,
          median(rps, key, k) / median(rps, e, k), median(p50, key, k) / median(p50, e, k), median(p99, key, k) / median(p99, e, k),
          median(cpu, key, k) / median(cpu, e, k), median(pair, key, n)
      }
    }' "$1" | sort
}
