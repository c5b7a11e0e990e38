#!/usr/bin/env bash
# Builds the Go tools the tests judge with, from the Go module proxy or a Go program of tests/support, and caches
# each set outside the work tree keyed by its versions and the hash of its sources (as build-control-plane.sh does).
# Prints, for each SET asked, the directory holding its tools; a tool already there is not built again.
#   tests/support/build-go-tools.sh SET...
# The sets:
#   gitops      gitops-check (tests/support/gitops-check: kstatus, Flux's CEL health evaluator, Argo CD's Lua health
#               runtime) and kubeconform (github.com/yannh/kubeconform) at KUBECONFORM_VERSION
#   kwok        kwok (sigs.k8s.io/kwok: the scale tier's fake nodes) at KWOK_VERSION
#   prometheus  promtool and prometheus (github.com/prometheus/prometheus, the server without its web UI's assets) at
#               PROMETHEUS_VERSION, and promql-names (tests/support/promql-names: the PromQL parser of that version)
#   trace       jaeger (github.com/jaegertracing/jaeger/cmd/jaeger at JAEGER_VERSION: all-in-one, in-memory storage, an
#               OTLP/HTTP receiver and the query API the tracing tests read a trace back with)
set -euo pipefail

KUBECONFORM_VERSION="${KUBECONFORM_VERSION:-v0.8.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
JAEGER_VERSION="${JAEGER_VERSION:-v1.76.0}"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export GOFLAGS=-mod=mod CGO_ENABLED=0

# The key of a Go program of tests/support: the hash of its module files and its source.
source_key() { cat "$HERE/$1/go.mod" "$HERE/$1/go.sum" "$HERE/$1/main.go" | sha256sum | cut -c1-12; }

# build DIR TOOL=SOURCE...: each tool missing from $CACHE_ROOT/DIR, from SOURCE, a command's package@version (the
# tool is named as its last path element) or a program's directory under tests/support; then prints the directory.
build() {
  local out="$CACHE_ROOT/$1" spec tool source lock
  shift
  mkdir -p "$out"
  exec {lock}>"$out/.lock" && flock "$lock"  # one build at a time: tests and helpers share the cache
  for spec in "$@"; do
    tool="${spec%%=*}" source="${spec#*=}"
    [ -x "$out/$tool" ] && continue
    if [[ "$source" == *" replace "* ]]; then  # MODULE@VERSION PACKAGE replace OLD=NEW: go install refuses a module
      wrapped "$out/.$tool.tmp" $source                # with replace directives, a throwaway one repeats them
      mv "$out/.$tool.tmp" "$out/$tool"
    elif [[ "$source" == *@* ]]; then  # built aside, then moved in: a tool in the cache is whole
      GOBIN="$out/.$tool.tmp" go install -ldflags "-s -w" "$source"
      mv "$out/.$tool.tmp/$tool" "$out/$tool" && rmdir "$out/.$tool.tmp"
    else
      (cd "$HERE/$source" && go build -ldflags "-s -w" -o "$out/.$tool.tmp" . && mv "$out/.$tool.tmp" "$out/$tool")
    fi
  done
  exec {lock}>&-
  echo "$out"
}

# wrapped OUT MODULE@VERSION PACKAGE replace OLD=NEW: PACKAGE built in a throwaway module requiring MODULE@VERSION
# with MODULE's replace directive repeated.
wrapped() {
  local work; work="$(mktemp -d)"
  (cd "$work" && go mod init mcpexec.test/wrapped >/dev/null 2>&1 && go mod edit -require="$2" -replace="$5" &&
    go build -ldflags "-s -w" -o "$1" "$3") || { rm -rf "$work"; return 1; }
  rm -rf "$work"
}

[ $# -gt 0 ] || { echo "usage: build-go-tools.sh SET... (gitops, kwok, prometheus, trace)" >&2; exit 2; }
for set in "$@"; do
  case "$set" in
    gitops)
      build "gitops-tools/check-$(source_key gitops-check)-kubeconform-$KUBECONFORM_VERSION" \
        gitops-check=gitops-check kubeconform="github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" ;;
    kwok)
      build "kwok/$KWOK_VERSION" kwok="sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" ;;
    prometheus)
      build "prometheus-tools/$PROMETHEUS_VERSION-names-$(source_key promql-names)" promql-names=promql-names \
        promtool="github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" \
        prometheus="github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" ;;
    trace)
      build "trace-receiver/jaeger-$JAEGER_VERSION" jaeger="github.com/jaegertracing/jaeger@$JAEGER_VERSION \
github.com/jaegertracing/jaeger/cmd/jaeger replace github.com/Shopify/sarama=github.com/Shopify/sarama@v1.33.0" ;;
    *) echo "build-go-tools.sh: no set $set (gitops, kwok, prometheus, trace)" >&2; exit 2 ;;
  esac
done
