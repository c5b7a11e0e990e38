#!/usr/bin/env bash
# Builds what a real single-node cluster needs on top of tests/cluster/build-control-plane.sh, from the
# Go module proxy, and caches it outside the work tree keyed by version. Prints the binaries' directory:
#   kubelet, kube-proxy, kube-scheduler  k8s.io/kubernetes (a wrapper module, as build-control-plane.sh)
#   gvisor-containerd-shim-runsc-v1, runsc  gvisor.dev/gvisor (its `go` branch, a pseudo-version on the proxy)
#   containerd-shim-runsc-v1             tests/e2e/shim: starts gVisor's shim where it cannot start itself
#   coredns                              tests/e2e/coredns: github.com/coredns/coredns with the plugins needed
# containerd, runc and the CNI plugins come from Debian (installed by ensure_debian_packages in node_artifacts.py).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
GVISOR_VERSION="${GVISOR_VERSION:-v0.0.0-20260905035102-160fafc42237}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
OUT="$CACHE_ROOT/node/k8s-$K8S_VERSION-gvisor-$GVISOR_VERSION"
BINARIES=(kubelet kube-proxy kube-scheduler gvisor-containerd-shim-runsc-v1 containerd-shim-runsc-v1 runsc coredns)
here="$(cd "$(dirname "$0")" && pwd)"

have_all() {
  for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || return 1; done
  [ ! "$here/shim/main.go" -nt "$OUT/containerd-shim-runsc-v1" ] || return 1
  [ ! "$here/coredns/main.go" -nt "$OUT/coredns" ] && [ "$(cat "$OUT/coredns.version" 2>/dev/null)" = "$COREDNS_VERSION" ]
}
if have_all; then echo "$OUT"; exit 0; fi
log() { printf '[build-node] %s\n' "$*" >&2; }

mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

# --- kube-scheduler: already built with the control plane.
if [ ! -x "$OUT/kube-scheduler" ]; then
  cp_dir="$(K8S_VERSION="$K8S_VERSION" bash "$here/../cluster/build-control-plane.sh" | tail -n1)"
  cp "$cp_dir/kube-scheduler" "$OUT/kube-scheduler"
fi

# --- kubelet and kube-proxy (see tests/support/build-k8s-commands.sh).
if [ ! -x "$OUT/kubelet" ] || [ ! -x "$OUT/kube-proxy" ]; then
  log "kubelet, kube-proxy $K8S_VERSION"
  bash "$here/../support/build-k8s-commands.sh" "$K8S_VERSION" "$OUT" kubelet kube-proxy
fi

# --- gVisor: the containerd shim and a runsc of the same version (Debian's 2022 runsc predates the
# shim's flags and knows no systrap platform).
if [ ! -x "$OUT/gvisor-containerd-shim-runsc-v1" ] || [ ! -x "$OUT/runsc" ]; then
  log "gVisor $GVISOR_VERSION (runsc, containerd-shim-runsc-v1)"
  mkdir -p "$work/gvisor" && cd "$work/gvisor"
  go mod init mcpexec.local/gvisorbuild >/dev/null 2>&1
  go get "gvisor.dev/gvisor@$GVISOR_VERSION" >/dev/null
  go build -ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=$GVISOR_VERSION" -o "$OUT/runsc.tmp" gvisor.dev/gvisor/runsc
  go build -ldflags "-s -w" -o "$OUT/gvisor-containerd-shim-runsc-v1.tmp" gvisor.dev/gvisor/shim
  mv "$OUT/runsc.tmp" "$OUT/runsc"
  mv "$OUT/gvisor-containerd-shim-runsc-v1.tmp" "$OUT/gvisor-containerd-shim-runsc-v1"
fi

# --- The shim containerd runs: our `start` (see tests/e2e/shim/main.go), gVisor's shim for the rest.
if [ ! -x "$OUT/containerd-shim-runsc-v1" ] || [ "$here/shim/main.go" -nt "$OUT/containerd-shim-runsc-v1" ]; then
  (cd "$here/shim" && go build -ldflags "-s -w" -o "$OUT/containerd-shim-runsc-v1.tmp" .)
  mv "$OUT/containerd-shim-runsc-v1.tmp" "$OUT/containerd-shim-runsc-v1"
fi

# --- CoreDNS (the cluster DNS pod): our main with only the plugins it needs.
if [ ! -x "$OUT/coredns" ] || [ "$here/coredns/main.go" -nt "$OUT/coredns" ] || [ "$(cat "$OUT/coredns.version" 2>/dev/null)" != "$COREDNS_VERSION" ]; then
  log "CoreDNS $COREDNS_VERSION"
  mkdir -p "$work/coredns" && cd "$work/coredns"
  cp "$here/coredns/main.go" .
  go mod init mcpexec.local/corednsbuild >/dev/null 2>&1
  go get "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null
  go mod tidy >/dev/null
  go build -ldflags "-s -w" -o "$OUT/coredns.tmp" .
  mv "$OUT/coredns.tmp" "$OUT/coredns"
  echo "$COREDNS_VERSION" > "$OUT/coredns.version"
fi
have_all
echo "$OUT"
