#!/usr/bin/env bash
# Builds what the GitOps tests judge our objects and manifests with, from the Go module proxy, and caches it
# outside the work tree keyed by version (as build-control-plane.sh does). Prints the directory holding:
#   gitops-check  kstatus (sigs.k8s.io/cli-utils and Flux's fork), Flux's CEL health evaluator and Argo CD's Lua
#                 health runtime (gopher-lua), from tests/support/gitops-check (keyed by the hash of its sources)
#   kubeconform   github.com/yannh/kubeconform at KUBECONFORM_VERSION
set -euo pipefail

KUBECONFORM_VERSION="${KUBECONFORM_VERSION:-v0.8.0}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
SRC="$(cd "$(dirname "$0")/gitops-check" && pwd)"
KEY="$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/gitops-tools/check-$KEY-kubeconform-$KUBECONFORM_VERSION"

if [ -x "$OUT/gitops-check" ] && [ -x "$OUT/kubeconform" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$OUT"
export GOFLAGS=-mod=mod CGO_ENABLED=0
if [ ! -x "$OUT/gitops-check" ]; then
  (cd "$SRC" && go build -ldflags "-s -w" -o "$OUT/gitops-check.tmp" . && mv "$OUT/gitops-check.tmp" "$OUT/gitops-check")
fi
if [ ! -x "$OUT/kubeconform" ]; then
  GOBIN="$OUT" go install -ldflags "-s -w" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
fi
echo "$OUT"
