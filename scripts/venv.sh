#!/usr/bin/env bash
# Makes ./.venv (a virtual environment inside the checkout, ignored by git) with the exact Python
# tools of tests/requirements.txt, and brings it up to date when that file changes. Never installs
# into the system Python (Debian 12 and Ubuntu 24.04 refuse that: PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
requirements=tests/requirements.txt
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
if [ ! -x "$venv/bin/python" ]; then
  echo "making $venv (python3 -m venv)"
  python3 -m venv "$venv" || { echo "python3 -m venv failed: install Debian's python3-venv (scripts/install-deps.sh test does)" >&2; exit 1; }
fi
echo "installing the pinned test tools into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$requirements"
echo "$want" > "$stamp"
