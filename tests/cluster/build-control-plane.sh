#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler and etcd from the Go module proxy and
# caches them outside the work tree, keyed by version. Prints the directory holding the binaries.
# Honours KUBEBUILDER_ASSETS: if it already holds the binaries, nothing is built.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.5.35}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
OUT="${KUBEBUILDER_ASSETS:-$CACHE_ROOT/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION}"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler etcd)

have_all() { for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || return 1; done; }
if have_all; then echo "$OUT"; exit 0; fi

mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

# --- Kubernetes (see tests/support/build-k8s-commands.sh).
bash "$(dirname "$0")/../support/build-k8s-commands.sh" "$K8S_VERSION" "$OUT" kube-apiserver kube-controller-manager kube-scheduler

# --- etcd: a wrapper main around etcdmain.Main.
if [ ! -x "$OUT/etcd" ]; then
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init mcpexec.local/etcdbuild >/dev/null 2>&1
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
  go mod tidy >/dev/null
  go build -ldflags "-s -w" -o "$OUT/etcd.tmp" . && mv "$OUT/etcd.tmp" "$OUT/etcd"
fi
have_all
echo "$OUT"
