#!/usr/bin/env bash
# Builds the e2e node's own images without Docker or a registry, as docker-archive tarballs that
# `ctr -n k8s.io images import` takes, cached by content. Prints the directory holding:
#   pause.tar    localhost/mcpexec-e2e/pause:1     the pod sandbox (containerd's sandbox_image), pause.c
#   busybox.tar  localhost/mcpexec-e2e/busybox:1   Debian's busybox-static, every applet linked in /bin
#   coredns.tar  localhost/mcpexec-e2e/coredns:1   the cluster DNS, $1/coredns (from tests/e2e/build-node.sh)
#   tests/e2e/images/build.sh NODE_BINARIES_DIR
set -euo pipefail
bins="${1:?usage: build.sh NODE_BINARIES_DIR (the output of tests/e2e/build-node.sh)}"
[ -x "$bins/coredns" ] || { echo "no coredns in $bins" >&2; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
for pkg in buildah busybox-static; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null; }
done
key="$( (cat "$0" "$here/pause.c" "$bins/coredns"; dpkg-query -W -f '${Version}' busybox-static) | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/e2e-images/$key"
if [ -s "$OUT/pause.tar" ] && [ -s "$OUT/busybox.tar" ] && [ -s "$OUT/coredns.tar" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$OUT"
work="$(mktemp -d)"
# buildah keeps its own storage here, apart from anyone else's.
store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() { buildah "${store[@]}" rm --all >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

image() {  # name rootfs-dir entrypoint-json
  local ctr
  ctr="$(buildah "${store[@]}" from scratch)"
  buildah "${store[@]}" copy "$ctr" "$2" / >/dev/null
  buildah "${store[@]}" config --entrypoint "$3" --cmd '' "$ctr"
  buildah "${store[@]}" commit -q "$ctr" "docker-archive:$OUT/$1.tar.tmp:localhost/mcpexec-e2e/$1:1" >/dev/null
  mv "$OUT/$1.tar.tmp" "$OUT/$1.tar"
}

mkdir -p "$work/pause"
gcc -static -Os -s -o "$work/pause/pause" "$here/pause.c"
image pause "$work/pause" '["/pause"]'

mkdir -p "$work/busybox/bin" "$work/busybox/tmp" "$work/busybox/etc"
cp /usr/bin/busybox "$work/busybox/bin/busybox"
for applet in $(/usr/bin/busybox --list); do
  [ "$applet" = busybox ] || ln -s busybox "$work/busybox/bin/$applet"
done
chmod 1777 "$work/busybox/tmp"
echo 'root:x:0:0:root:/:/bin/sh' > "$work/busybox/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >> "$work/busybox/etc/passwd"
image busybox "$work/busybox" '["/bin/sh", "-c"]'

mkdir -p "$work/coredns/etc"
cp "$bins/coredns" "$work/coredns/coredns"
image coredns "$work/coredns" '["/coredns"]'
echo "$OUT"
