#!/usr/bin/env bash
# The macOS targets, checked from Linux (nothing here can run macOS code): clippy on the whole
# workspace, then the supervisor linked with zig, so that a missing libSystem symbol (kqueue,
# libproc) fails here, and read back by crates/binary-facts: the oldest macOS it asks for (11.0 on
# arm64, 10.15 on x64, set by MACOSX_DEPLOYMENT_TARGET as in scripts/build-targets.mjs), a code
# signature on arm64, and only system dylibs. Takes the targets to check (default: both darwin
# targets); `--addon` also links the addon (release, slow: LTO). Needs
# scripts/platforms/cross-setup.sh (zig, cargo-zigbuild, the rustup targets). Sizes are printed.
set -euo pipefail
cd "$(dirname "$0")/../.."

PATH="$PWD/target/platforms/bin:$PATH"
command -v cargo-zigbuild >/dev/null ||
  { echo "check-darwin: no cargo-zigbuild: run scripts/platforms/cross-setup.sh first" >&2; exit 1; }

addon=0
targets=()
for argument in "$@"; do
  case "$argument" in
    --addon) addon=1 ;;
    *-apple-darwin) targets+=("$argument") ;;
    *) echo "check-darwin: unknown argument $argument" >&2; exit 2 ;;
  esac
done
[ "${#targets[@]}" -gt 0 ] || targets=(aarch64-apple-darwin x86_64-apple-darwin)

cargo build --quiet -p binary-facts
facts=target/debug/binary-facts

for target in "${targets[@]}"; do
  case "$target" in
    aarch64-*) floor=darwin-arm64 MACOSX_DEPLOYMENT_TARGET=11.0 ;;
    *) floor=darwin-x64 MACOSX_DEPLOYMENT_TARGET=10.15 ;;
  esac
  export MACOSX_DEPLOYMENT_TARGET
  echo "== clippy $target"
  cargo-zigbuild clippy --workspace --all-targets --target "$target" -- -D warnings
  echo "== the supervisor linked for $target (MACOSX_DEPLOYMENT_TARGET=$MACOSX_DEPLOYMENT_TARGET)"
  cargo-zigbuild zigbuild --release -p phone-a-friend-supervisor --target "$target" \
    --target-dir target/supervisor
  wc -c "target/supervisor/$target/release/phone-a-friend-supervisor"
  "$facts" --floor "$floor" "target/supervisor/$target/release/phone-a-friend-supervisor"
  if [ "$addon" = 1 ]; then
    echo "== the addon linked for $target"
    cargo-zigbuild zigbuild --release -p phone-a-friend-relay --target "$target"
    wc -c "target/$target/release/libphone_a_friend_relay.dylib"
    "$facts" --floor "$floor" "target/$target/release/libphone_a_friend_relay.dylib"
  fi
done
