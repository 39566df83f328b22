#!/usr/bin/env bash
# `scripts/platforms/wine-run.sh <program.exe> [args...]`: runs a Windows program in the WINEPREFIX
# that wine-setup.sh made (Windows 10, the bcryptprimitives shim that Rust-built programs need),
# without wine's debug output. Also cargo's runner for Windows builds:
#   CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=scripts/platforms/wine-run.sh \
#     cargo test --target x86_64-pc-windows-gnu -p <crate>
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -f "$root/target/platforms/wine/setup.json" ]; then
  echo "wine-run: no target/platforms/wine/setup.json: run scripts/platforms/wine-setup.sh first" >&2
  exit 1
fi
export WINEPREFIX="$root/target/platforms/wine/prefix"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES='mscoree,mshtml='
exec wine "$@"
