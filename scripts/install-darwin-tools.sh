#!/usr/bin/env bash
# What checking and linking the macOS targets from Linux needs: the two darwin Rust targets, and
# zig with cargo-zigbuild (both from PyPI) as the linker and as the C compiler of ring's C code.
# Idempotent: quick when everything is there. Prints the folder cargo-zigbuild is in.
set -euo pipefail

ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1

installed_targets=$(rustup target list --installed)
for target in aarch64-apple-darwin x86_64-apple-darwin; do
  if ! grep -qx "$target" <<<"$installed_targets"; then
    rustup target add "$target" >&2
  fi
done

# importlib.metadata rather than `pip show`, which takes seconds.
if ! python3 - "$ZIGLANG_VERSION" "$CARGO_ZIGBUILD_VERSION" <<'PY' 2>/dev/null; then
import importlib.metadata as meta, sys
sys.exit(meta.version("ziglang") != sys.argv[1] or meta.version("cargo-zigbuild") != sys.argv[2])
PY
  python3 -m pip install --quiet "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" >&2
fi
python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'
