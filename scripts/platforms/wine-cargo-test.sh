#!/usr/bin/env bash
# cargo test -p relay-core built for x86_64-pc-windows-gnu, each test executable run by wine
# (docs/DEVELOPMENT.md, "Windows"), in the WINEPREFIX that wine-setup.sh prepares (idempotent:
# about a second once done). Extra arguments go to cargo test (e.g. `-- subprocess::`).
set -euo pipefail
cd "$(dirname "$0")/../.."

scripts/platforms/wine-setup.sh >/dev/null
prefix=$(node -p 'require("./target/platforms/wine/setup.json").prefix')
export WINEPREFIX=$prefix WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml='
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
cargo test -p relay-core --target x86_64-pc-windows-gnu "$@"
# wine leaves its server running a few seconds after the last program; wait so that nothing
# started here outlives the run.
wineserver --wait
