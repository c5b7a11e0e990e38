#!/usr/bin/env bash
# Builds the three images WITHOUT Docker and without a registry (none is reachable here), from Debian
# packages and PyPI only:
#   1. debootstrap a bookworm rootfs with python3 and pip (cached; only used to build);
#   2. copy out of it the files of python3's package closure (images/slim_rootfs.py; cached): no shell,
#      no apt, no pip; stdlib precompiled;
#   3. per image, add the runtime package (runtime) or the project installed with its dependencies by the
#      image's own python3 (controller, gateway; the gateway's also with the PII scanner's wheel, native/pii-scan,
#      built on this host: its manylinux tag must fit bookworm's glibc 2.36, which that pip checks; the operator
#      never imports it), check that the entry module imports as uid 65534,
#      and commit with buildah to a docker-archive that `ctr -n k8s.io images import` or `podman load` take.
#   4. redis (the chart's bundled PII vault where redis:7.2-alpine cannot be pulled): Debian's redis-server
#      package closure, uid 999, entrypoint redis-server.
#   images/build-rootfs.sh [runtime|controller|gateway|redis ...]      (default: all four)
# Output: $MCPEXEC_CACHE/images/<name>-<version>.tar, tagged mcpexec/<name>:<version>, written atomically,
# with <name>-<version>.tar.inputs: the hash of what went in. An image whose inputs did not change is not
# rebuilt, so callers (the e2e tests) run this every time and always get images of the current sources.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)"
SUITE=bookworm
BASE="$CACHE_ROOT/rootfs/$SUITE-python3-pip"
STAGE="$BASE/tmp/mcpexec-build"  # what the build root's pip installs, as /tmp/mcpexec-build
# Derived from BASE by images/slim_rootfs.py: keyed by that script, so a change to it rebuilds.
SLIM="$CACHE_ROOT/rootfs/$SUITE-python3-slim-$(sha256sum images/slim_rootfs.py | cut -c1-12)"
OUT="$CACHE_ROOT/images"
log() { printf '[images] %s\n' "$*" >&2; }

targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(runtime controller gateway redis)
for target in "${targets[@]}"; do
  case "$target" in runtime|controller|gateway|redis) ;; *) echo "unknown image: $target (runtime|controller|gateway|redis)" >&2; exit 2 ;; esac
done

missing=()
for tool in debootstrap buildah; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$BASE/usr/bin/python3" ]; then
  log "debootstrap $SUITE (minbase + python3, pip) into $BASE"
  rm -rf "$BASE.tmp" && mkdir -p "$BASE.tmp"
  debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates "$SUITE" "$BASE.tmp" >/dev/null
  rm -rf "$BASE.tmp"/var/cache/apt/archives/*.deb "$BASE.tmp"/var/lib/apt/lists/*
  mv "$BASE.tmp" "$BASE"
fi

# debootstrap a base with `packages`, then keep only their closure (slim_rootfs.py): slim_root BASE SLIM PACKAGE...
slim_root() {
  local base="$1" slim="$2"; shift 2
  if [ ! -d "$base/var/lib/dpkg" ]; then
    log "debootstrap $SUITE (minbase + $*) into $base"
    rm -rf "$base.tmp" && mkdir -p "$base.tmp"
    debootstrap --variant=minbase --include="$(IFS=,; echo "$*")" "$SUITE" "$base.tmp" >/dev/null
    rm -rf "$base.tmp"/var/cache/apt/archives/*.deb "$base.tmp"/var/lib/apt/lists/*
    mv "$base.tmp" "$base"
  fi
  if [ ! -d "$slim/usr" ]; then
    log "the package closure of $* from $base into $slim"
    rm -rf "$slim.tmp"
    local packages; packages="$(python3 images/slim_rootfs.py "$base" "$slim.tmp" "$@" base-files)"
    log "packages: $packages"
    mv "$slim.tmp" "$slim"
  fi
}
REDIS_BASE="$CACHE_ROOT/rootfs/$SUITE-redis-server"
REDIS_SLIM="$CACHE_ROOT/rootfs/$SUITE-redis-slim-$(sha256sum images/slim_rootfs.py | cut -c1-12)"

if [ ! -x "$SLIM/usr/bin/python3" ]; then
  log "python3's package closure from $BASE into $SLIM"
  rm -rf "$SLIM.tmp"
  packages="$(python3 images/slim_rootfs.py "$BASE" "$SLIM.tmp")"
  log "packages: $packages"
  # Read-only root filesystems: bytecode compiled now, or on every start.
  chroot "$SLIM.tmp" /usr/bin/python3 -m compileall -q /usr/lib/python3.11 >/dev/null
  mv "$SLIM.tmp" "$SLIM"
fi

work="$(mktemp -d)"
ctr=""
cleanup() {
  [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work" "$STAGE"
}
trap cleanup EXIT

# The build root's pip installs (pip install -q --no-compile ARGS...; paths in the root), reaching the package index
# with this machine's DNS and CA bundle, from the stage (stage_open, stage_close). A clean environment: the host's CA
# variables (REQUESTS_CA_BUNDLE...) name files of the host, not of the root.
stage_open() {
  rm -rf "$STAGE" && mkdir -p "$STAGE/wheels"
  cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$STAGE/ca.crt"
  cp /etc/resolv.conf "$BASE/etc/resolv.conf"
}
stage_close() {
  rm -f "$BASE/etc/resolv.conf"
  rm -rf "$STAGE"
}
root_pip() {
  local passed=() var
  for var in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_DEFAULT_TIMEOUT http_proxy https_proxy no_proxy; do
    [ -z "${!var:-}" ] || passed+=("$var=${!var}")
  done
  env -i PATH=/usr/bin HOME=/root PIP_CERT=/tmp/mcpexec-build/ca.crt PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "${passed[@]}" \
    "$(command -v chroot)" "$BASE" python3 -m pip install -q --no-compile "$@"
}

# The project and its dependencies from the index (images/index_requirements.py: all but the PII scanner's
# extension), installed once per run by the image's own python3 and pip, so that environment markers resolve for the
# image's Python (redis needs async-timeout below 3.11.3: bookworm has 3.11.2).
app_site() {
  [ ! -d "$work/site" ] || return 0
  log "the project and its dependencies (pip in $SUITE's python3)"
  mkdir -p "$work/src"
  cp -r pyproject.toml README.md mcpexec controller gateway runtime "$work/src/"
  find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
  stage_open
  .venv/bin/pip wheel -q --no-deps -w "$STAGE/wheels" "$work/src" >/dev/null
  .venv/bin/python images/index_requirements.py >"$STAGE/requirements.txt"
  local wheel; wheel="$(cd "$STAGE/wheels" && echo mcpexec-*.whl)"
  root_pip --target /tmp/mcpexec-build/site -r /tmp/mcpexec-build/requirements.txt
  # Console scripts with a shebang for the build root (the images use python3 -m), removed before the project's wheel
  # too: pip --target leaves a folder that exists as it is, with a warning.
  rm -rf "$STAGE/site/bin"
  root_pip --target /tmp/mcpexec-build/site --no-deps "/tmp/mcpexec-build/wheels/$wheel"
  rm -rf "$STAGE/site/bin"
  mv "$STAGE/site" "$work/site"
  stage_close
}

# The PII scanner's extension, for the gateway's image: on no index, its wheel is built here (cached by source).
pii_site() {
  [ ! -d "$work/pii-site" ] || return 0
  local native; native="$(bash native/pii-scan/wheel.sh)"
  stage_open
  cp "$native" "$STAGE/wheels/"
  root_pip --target /tmp/mcpexec-build/pii-site --no-deps "/tmp/mcpexec-build/wheels/$(basename "$native")"
  mv "$STAGE/pii-site" "$work/pii-site"
  stage_close
}

# The hash of an image's inputs: this script, the base's recipe, and the sources it copies.
inputs_hash() {
  local sources=(images/build-rootfs.sh images/slim_rootfs.py)
  case "$1" in
    redis) ;;
    runtime) sources+=(runtime) ;;
    *) sources+=(runtime pyproject.toml README.md mcpexec controller gateway images/index_requirements.py) ;;
  esac
  [ "$1" != gateway ] || sources+=(native/pii-scan)
  find "${sources[@]}" -type f ! -path '*/__pycache__/*' ! -path 'native/pii-scan/target/*' -print0 | LC_ALL=C sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-16
}

build() {
  local name="$1" started=$SECONDS
  local tar="$OUT/$name-$VERSION.tar" inputs
  inputs="$(inputs_hash "$name")"
  if [ -f "$tar" ] && [ "$(cat "$tar.inputs" 2>/dev/null)" = "$inputs" ]; then
    log "$name: up to date ($tar, inputs $inputs)"
    return 0
  fi
  log "$name -> $tar (inputs $inputs)"
  if [ "$name" = redis ]; then build_redis "$tar"; else build_python "$name" "$tar"; fi
  mv "$tar.tmp" "$tar"
  echo "$inputs" >"$tar.inputs"
  log "$name: $(du -h "$tar" | cut -f1) in $((SECONDS - started)) s"
}

build_redis() {
  local tar="$1"
  slim_root "$REDIS_BASE" "$REDIS_SLIM" redis-server
  ctr="$(buildah from scratch)"
  local mnt; mnt="$(buildah mount "$ctr")"
  cp -a "$REDIS_SLIM/." "$mnt/"
  mkdir -p "$mnt/data" && chown 999:999 "$mnt/data"
  # It must start as the user the chart runs it as (999, as the official image).
  env -i PATH=/usr/bin "$(command -v chroot)" --userspec=999:999 "$mnt" /usr/bin/redis-server --version >/dev/null
  buildah umount "$ctr" >/dev/null
  buildah config --user 999:999 --workingdir /data --env PATH=/usr/bin --entrypoint '["redis-server"]' \
    --label org.opencontainers.image.version="$VERSION" "$ctr"
  rm -f "$tar.tmp"
  buildah commit -q --rm "$ctr" "docker-archive:$tar.tmp:mcpexec/redis:$VERSION" >/dev/null
  ctr=""
}

build_python() {
  local name="$1" tar="$2"
  ctr="$(buildah from scratch)"
  local mnt; mnt="$(buildah mount "$ctr")"
  cp -a "$SLIM/." "$mnt/"
  mkdir -p "$mnt/opt/mcpexec" "$mnt/workspace" "$mnt/skills"
  if [ "$name" = runtime ]; then
    # Standard library only (docs/contracts.md): the sandbox gets python3 and this package, nothing else.
    cp -r runtime "$mnt/opt/mcpexec/runtime"
    find "$mnt/opt/mcpexec" -name __pycache__ -prune -exec rm -rf {} +
  else
    app_site
    cp -a "$work/site/." "$mnt/opt/mcpexec/"
    if [ "$name" = gateway ]; then
      pii_site
      cp -a "$work/pii-site/." "$mnt/opt/mcpexec/"
    fi
  fi
  chroot "$mnt" /usr/bin/python3 -m compileall -q /opt/mcpexec >/dev/null
  chown 65534:65534 "$mnt/workspace" "$mnt/skills"
  # The image must start as the user it runs as: import the entry module as nobody (the gateway's loads the PII
  # scanner's extension: a wheel that does not load on the image's glibc fails here).
  env -i PATH=/usr/bin PYTHONPATH=/opt/mcpexec "$(command -v chroot)" --userspec=65534:65534 "$mnt" /usr/bin/python3 -c "import $name.__main__"
  buildah umount "$ctr" >/dev/null
  buildah config --user 65534:65534 --workingdir /workspace \
    --env PATH=/usr/bin --env PYTHONPATH=/opt/mcpexec --env PYTHONDONTWRITEBYTECODE=1 --env PYTHONUNBUFFERED=1 \
    --entrypoint "[\"python3\", \"-m\", \"$name\"]" \
    --label org.opencontainers.image.version="$VERSION" "$ctr"
  rm -f "$tar.tmp"
  buildah commit -q --rm "$ctr" "docker-archive:$tar.tmp:mcpexec/$name:$VERSION" >/dev/null
  ctr=""
}

mkdir -p "$OUT"
for target in "${targets[@]}"; do build "$target"; done
