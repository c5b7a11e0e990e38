#!/usr/bin/env bash
# Builds what the chart's alerts and dashboard are checked with, from the Go module proxy, and caches it outside the
# work tree keyed by version (as build-kwok.sh does). Prints the directory holding:
#   promtool      github.com/prometheus/prometheus/cmd/promtool at PROMETHEUS_VERSION (check rules, test rules)
#   promql-names  tests/support/promql-names: the PromQL parser of the same version, listing each query's selectors
#                 (keyed by the hash of its sources)
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
SRC="$(cd "$(dirname "$0")/promql-names" && pwd)"
KEY="$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/prometheus-tools/$PROMETHEUS_VERSION-names-$KEY"

if [ -x "$OUT/promtool" ] && [ -x "$OUT/promql-names" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$OUT"
export GOFLAGS=-mod=mod CGO_ENABLED=0
if [ ! -x "$OUT/promql-names" ]; then
  (cd "$SRC" && go build -ldflags "-s -w" -o "$OUT/promql-names.tmp" . && mv "$OUT/promql-names.tmp" "$OUT/promql-names")
fi
if [ ! -x "$OUT/promtool" ]; then
  GOBIN="$OUT" go install -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
fi
echo "$OUT"
