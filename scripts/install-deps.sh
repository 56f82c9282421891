#!/usr/bin/env bash
# Installs what building, running and testing browserd needs on Debian/Ubuntu, only when missing:
# the C libraries (libmicrohttpd, libsqlite3) with pkg-config, and the Python checkers of the
# contract. Pass "bench" to add the benchmark tools (wrk, nginx-light, gcc for the slow-disk shim).
set -euo pipefail
packages=(libmicrohttpd-dev libsqlite3-dev pkg-config python3 python3-pip curl)
if [ "${1:-}" = "bench" ]; then packages+=(wrk nginx-light procps gcc libc6-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts nginx as a service on install; the benchmark runs its own instance.
  if printf '%s\n' "${missing[@]}" | grep -q nginx; then $sudo service nginx stop >/dev/null 2>&1 || true; fi
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "swift is not on PATH: install a Swift 6 toolchain (https://www.swift.org/install/linux/)" >&2
  exit 1
fi

python3 - <<'PY' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check "openapi-spec-validator>=0.7" "PyYAML>=6"
import openapi_spec_validator, yaml
PY
command -v st >/dev/null 2>&1 || python3 -m pip install -q --disable-pip-version-check "schemathesis>=4,<5"
# The end-to-end event-stream test's real SSE client, and the schema check of its events.
python3 - <<'PY' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check "httpx>=0.27" "httpx-sse>=0.4" "jsonschema>=4"
import httpx, httpx_sse, jsonschema
PY
command -v st >/dev/null 2>&1 || { echo "schemathesis installed but 'st' is not on PATH" >&2; exit 1; }
