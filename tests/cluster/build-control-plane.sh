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

# --- Kubernetes: a wrapper module pinning every staging module to the matching v0.Y.Z release.
minor="${K8S_VERSION#v1.}"; staging_version="v0.${minor}"
mkdir -p "$work/k8s" && cd "$work/k8s"
go mod init mcpexec.local/k8sbuild >/dev/null 2>&1
k8s_mod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
{
  echo "require k8s.io/kubernetes $K8S_VERSION"
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$k8s_mod" | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
} >> go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
go mod tidy -e >/dev/null 2>&1 || true
go get "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
ldflags="-s -w"
for kv in gitVersion="$K8S_VERSION" gitMajor=1 gitMinor="${minor%%.*}"; do
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.$kv"
  done
done
for b in kube-apiserver kube-controller-manager kube-scheduler; do
  [ -x "$OUT/$b" ] || go build -tags tools -ldflags "$ldflags" -o "$OUT/$b.tmp" "k8s.io/kubernetes/cmd/$b" && mv "$OUT/$b.tmp" "$OUT/$b"
done

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
