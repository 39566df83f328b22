#!/usr/bin/env bash
# The macOS targets, checked from Linux (nothing here can run macOS code): clippy on the whole
# workspace, then the supervisor linked with zig, so that a missing libSystem symbol (kqueue,
# libproc) fails here. Takes the targets to check (default: both darwin targets); `--addon` also
# links the addon (release, slow: LTO). Needs scripts/platforms/cross-setup.sh (zig,
# cargo-zigbuild, the rustup targets). Sizes are printed.
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

for target in "${targets[@]}"; do
  echo "== clippy $target"
  cargo-zigbuild clippy --workspace --all-targets --target "$target" -- -D warnings
  echo "== the supervisor linked for $target"
  cargo-zigbuild zigbuild --release -p phone-a-friend-supervisor --target "$target" \
    --target-dir target/supervisor
  wc -c "target/supervisor/$target/release/phone-a-friend-supervisor"
  if [ "$addon" = 1 ]; then
    echo "== the addon linked for $target"
    cargo-zigbuild zigbuild --release -p phone-a-friend-relay --target "$target"
    wc -c "target/$target/release/libphone_a_friend_relay.dylib"
  fi
done
