#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok: fake nodes and pod lifecycles for the scale tier) from the Go module proxy and
# caches it outside the work tree keyed by version, as build-control-plane.sh does. Prints the directory holding it.
set -euo pipefail

KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
OUT="$CACHE_ROOT/kwok/$KWOK_VERSION"

if [ -x "$OUT/kwok" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$OUT"
export GOFLAGS=-mod=mod CGO_ENABLED=0
GOBIN="$OUT" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
echo "$OUT"
