#!/usr/bin/env bash
# Builds commands of k8s.io/kubernetes (cmd/<name>) from the Go module proxy into OUT, skipping those present:
#   tests/support/build-k8s-commands.sh VERSION OUT NAME...
# k8s.io/kubernetes cannot be built as a plain dependency (its go.mod replaces the staging modules with
# ./staging paths): a wrapper module requires it and pins every staging module to the matching v0.Y.Z release.
set -euo pipefail
version="$1" out="$2"; shift 2
missing=(); for b in "$@"; do [ -x "$out/$b" ] || missing+=("$b"); done
[ ${#missing[@]} -gt 0 ] || exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0
minor="${version#v1.}"; staging_version="v0.${minor}"
cd "$work"
go mod init mcpexec.local/k8sbuild >/dev/null 2>&1
k8s_mod="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
{
  echo "require k8s.io/kubernetes $version"
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$k8s_mod" | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
} >> go.mod
{
  printf '//go:build tools\n\npackage tools\n\nimport (\n'
  for b in "${missing[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$b"; done
  printf ')\n'
} > tools.go
go mod tidy -e >/dev/null 2>&1 || true
go get "k8s.io/kubernetes@$version" >/dev/null
ldflags="-s -w"
for kv in gitVersion="$version" gitMajor=1 gitMinor="${minor%%.*}"; do
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.$kv"
  done
done
mkdir -p "$out"
for b in "${missing[@]}"; do
  go build -tags tools -ldflags "$ldflags" -o "$out/$b.tmp" "k8s.io/kubernetes/cmd/$b"
  mv "$out/$b.tmp" "$out/$b"
done
