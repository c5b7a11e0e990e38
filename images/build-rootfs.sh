#!/usr/bin/env bash
# Builds the three images WITHOUT Docker and without a registry (none is reachable here): a Debian
# bookworm rootfs with python3 from debootstrap (cached outside the work tree), the project added on
# top, committed with buildah to docker-archive tarballs that `ctr images import` or `podman load` take.
#   images/build-rootfs.sh [runtime|controller|gateway ...]      (default: all three)
# Output: $MCPEXEC_CACHE/images/<name>-<version>.tar
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)"
BASE="$CACHE_ROOT/rootfs/bookworm-python3-pip"
OUT="$CACHE_ROOT/images"
log() { printf '[images] %s\n' "$*" >&2; }

for tool in debootstrap buildah; do
  command -v "$tool" >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq "$tool" >/dev/null; }
done

if [ ! -x "$BASE/usr/bin/python3" ]; then
  log "debootstrap bookworm (minbase + python3, pip) into $BASE"
  rm -rf "$BASE.tmp" && mkdir -p "$BASE.tmp"
  debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates bookworm "$BASE.tmp" >/dev/null
  rm -rf "$BASE.tmp"/var/cache/apt/archives/*.deb "$BASE.tmp"/var/lib/apt/lists/*
  mv "$BASE.tmp" "$BASE"
fi

mkdir -p "$OUT"
build() {
  local name="$1" entry="$2" with_deps="$3"
  local ctr tar="$OUT/$name-$VERSION.tar"
  log "$name -> $tar"
  ctr="$(buildah from scratch)"
  local mnt; mnt="$(buildah mount "$ctr")"
  cp -a "$BASE/." "$mnt/"
  mkdir -p "$mnt/opt/mcpexec" "$mnt/workspace" "$mnt/skills"
  if [ "$with_deps" = yes ]; then
    # The project and its dependencies installed by the image's own python3 and pip, so environment
    # markers (redis needs async-timeout below 3.11.3: Debian has 3.11.2) resolve for the image.
    mkdir -p "$mnt/tmp/wheels"
    .venv/bin/pip wheel -q --no-deps -w "$mnt/tmp/wheels" . >/dev/null
    # The build trusts what this machine trusts (its CA bundle) to reach the package index.
    cp /etc/resolv.conf "$mnt/etc/resolv.conf"
    cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$mnt/tmp/host-ca.crt"
    env -u PIP_FIND_LINKS PIP_CERT=/tmp/host-ca.crt SSL_CERT_FILE=/tmp/host-ca.crt \
      REQUESTS_CA_BUNDLE=/tmp/host-ca.crt PIP_BREAK_SYSTEM_PACKAGES=1 chroot "$mnt" sh -c \
      'python3 -m pip install -q --no-compile --no-cache-dir --target /opt/mcpexec /tmp/wheels/*.whl' >/dev/null
    rm -rf "$mnt/tmp/wheels" "$mnt/tmp/host-ca.crt" "$mnt/etc/resolv.conf"
  else
    cp -a runtime "$mnt/opt/mcpexec/runtime"
  fi
  # No installer left in any image.
  rm -rf "$mnt"/usr/lib/python3/dist-packages/pip "$mnt"/usr/bin/pip*
  chown 65534:65534 "$mnt/workspace" "$mnt/skills"
  buildah umount "$ctr" >/dev/null
  buildah config --user 65534:65534 --workingdir /workspace --env PYTHONPATH=/opt/mcpexec \
    --env PYTHONDONTWRITEBYTECODE=1 --entrypoint "[\"python3\", \"-m\", \"$entry\"]" "$ctr"
  rm -f "$tar"
  buildah commit -q "$ctr" "docker-archive:$tar:mcpexec/$name:$VERSION" >/dev/null
  buildah rm "$ctr" >/dev/null
}

targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(runtime controller gateway)
for target in "${targets[@]}"; do
  case "$target" in
    runtime) build runtime runtime no ;;
    controller) build controller controller yes ;;
    gateway) build gateway gateway yes ;;
    *) echo "unknown image $target" >&2; exit 2 ;;
  esac
done
ls -la "$OUT"
