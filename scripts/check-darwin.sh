#!/usr/bin/env bash
# The macOS targets, checked from Linux (nothing here can run macOS code): clippy on the whole
# workspace for both darwin targets, then the supervisor linked for both with zig, so that a
# missing libSystem symbol (kqueue, libproc) fails here. `--addon` also links the addon
# (release, slow: LTO). Sizes are printed.
set -euo pipefail
cd "$(dirname "$0")/.."

PATH="$(bash scripts/install-darwin-tools.sh):$PATH"
export PATH

for target in aarch64-apple-darwin x86_64-apple-darwin; do
  echo "== clippy $target"
  cargo-zigbuild clippy --workspace --all-targets --target "$target" -- -D warnings
done

for target in aarch64-apple-darwin x86_64-apple-darwin; do
  echo "== the supervisor linked for $target"
  cargo-zigbuild zigbuild --release -p phone-a-friend-supervisor --target "$target" \
    --target-dir target/supervisor
  wc -c "target/supervisor/$target/release/phone-a-friend-supervisor"
done

if [ "${1:-}" = "--addon" ]; then
  for target in aarch64-apple-darwin x86_64-apple-darwin; do
    echo "== the addon linked for $target"
    cargo-zigbuild zigbuild --release -p phone-a-friend-relay --target "$target"
    wc -c "target/$target/release/libphone_a_friend_relay.dylib"
  done
fi
