#!/bin/bash
# Create latency of InClusterIPPool and IPAddress through a real kube-apiserver with ipam-guard
# registered, beside the same creates through a do-nothing webhook (examples/echo.rs), in one
# interleaved run (docs/performance.md, "Through a real API server"). Needs KUBEBUILDER_ASSETS
# (kube-apiserver + etcd, e.g. "$(../shared/k8s/assets.sh)").
#
#   benches/apiserver-latency.sh                 # 40 rounds of 25 creates per kind and webhook
#   ROUNDS=10 BATCH=10 benches/apiserver-latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS to the folder holding kube-apiserver and etcd}"
cargo build --release --bin ipam-guard --example echo
cargo bench --bench apiserver_latency -- --rounds "${ROUNDS:-40}" --batch "${BATCH:-25}"
