#!/bin/bash
# The live view's first sync against a real kube-apiserver, side by side with a raw
# `resourceVersion=0` LIST of the same objects in the same run (docs/performance.md, "Live
# view"). Needs KUBEBUILDER_ASSETS (kube-apiserver + etcd, e.g. "$(../shared/k8s/assets.sh)") and curl.
#
#   benches/live-sync.sh                               # 10,000 pools + 100,000 IPAddresses, 2 rounds
#   POOLS=1000 ADDRESSES=10000 ROUNDS=1 benches/live-sync.sh
#
# The machine may be shared: each row records the load average before it.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS to the folder holding kube-apiserver and etcd}"
cargo build --release --bin ipam-guard
cargo bench --bench live_sync -- \
  --pools "${POOLS:-10000}" --addresses "${ADDRESSES:-100000}" --rounds "${ROUNDS:-2}"
