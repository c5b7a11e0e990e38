#!/usr/bin/env bash
# Builds the OTLP receiver the tracing tests read their traces back from, from the Go module proxy, and caches it
# outside the work tree keyed by version (as build-kwok.sh does). Prints the directory holding:
#   jaeger  github.com/jaegertracing/jaeger/cmd/jaeger at JAEGER_VERSION: all-in-one with in-memory storage, an
#           OTLP/HTTP receiver and the query API (/api/traces/{id}) the tests read a trace back with
# `go install pkg@version` refuses a module with replace directives (Jaeger's go.mod has one), so it is built from a
# throwaway wrapper module that requires it and repeats that replace.
set -euo pipefail

JAEGER_VERSION="${JAEGER_VERSION:-v1.76.0}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
OUT="$CACHE_ROOT/trace-receiver/jaeger-$JAEGER_VERSION"

if [ -x "$OUT/jaeger" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$OUT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0
(
  cd "$WORK"
  go mod init mcpexec.test/trace-receiver >/dev/null 2>&1
  go mod edit -require="github.com/jaegertracing/jaeger@$JAEGER_VERSION" \
    -replace=github.com/Shopify/sarama=github.com/Shopify/sarama@v1.33.0
  go build -ldflags "-s -w" -o "$OUT/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
)
mv "$OUT/jaeger.tmp" "$OUT/jaeger"
echo "$OUT"
