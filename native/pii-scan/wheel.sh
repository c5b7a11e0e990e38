#!/usr/bin/env bash
# Prints the path of the PII scanner's wheel (mcpexec-pii-scan, abi3 for CPython 3.11+), built first if this source
# and this Rust toolchain have none cached: $CACHE_ROOT/wheels/<hash of native/pii-scan, Cargo.lock included, and
# `rustc -V`>/. Needs cargo and rustc; maturin is pip-installed into a build venv of its own (cached).
set -euo pipefail
cd "$(dirname "$0")"
CACHE_ROOT="${MCPEXEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpexec}"
MATURIN_VERSION=1.16.0
log() { printf '[install] %s\n' "$*" >&2; }

PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"  # where rustup installs them
for tool in cargo rustc; do
  if ! command -v "$tool" >/dev/null; then
    log "$tool not found: the PII scanner (native/pii-scan) is built from Rust; install a Rust toolchain, 1.88 or newer (rustup; Debian bookworm's is older), and run again"
    exit 1
  fi
done

hash="$({ rustc -V; find . -path ./target -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)"
wheels="$CACHE_ROOT/wheels/$hash"
if ! compgen -G "$wheels/*.whl" >/dev/null; then
  log "PII scanner wheel (native/pii-scan: cargo, maturin $MATURIN_VERSION) into $wheels"
  maturin_venv="$CACHE_ROOT/maturin-$MATURIN_VERSION"
  if [ ! -x "$maturin_venv/bin/maturin" ]; then
    python3 -m venv "$maturin_venv"
    "$maturin_venv/bin/pip" install -q "maturin==$MATURIN_VERSION"
  fi
  rm -rf "$wheels.tmp"
  build_log="$(mktemp)"
  if ! CARGO_TARGET_DIR="$CACHE_ROOT/cargo-target/pii-scan" \
    "$maturin_venv/bin/maturin" build --release --locked --out "$wheels.tmp" >"$build_log" 2>&1; then
    cat "$build_log" >&2
    rm -f "$build_log"
    exit 1
  fi
  rm -f "$build_log"
  mv "$wheels.tmp" "$wheels"
fi
echo "$wheels"/*.whl
