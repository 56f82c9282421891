#!/usr/bin/env bash
# Runs schemathesis (from ./.venv) against a live browserd with openapi.yaml, in two runs on one
# server: the coverage and fuzzing phases, then the stateful phase (which follows the contract's
# links: profile -> windows -> tabs -> groups, tokens, recently closed). Every check runs (no 5xx,
# status codes, content types, headers, response schemas, schema-invalid input refused, undeclared
# methods 405, the event streams' first events valid against their per-event schemas, resources
# reachable after creation, ...) except two that cannot hold for this stateful API:
#   - positive_data_acceptance: well-formed ids and If-Match tags that name nothing, and an
#     Idempotency-Key reused with another body, are rightly refused (404/412/422); no schema can
#     say which ids exist.
#   - ensure_resource_availability: a request retried with the same Idempotency-Key and body gets
#     the stored 201 again (Idempotent-Replayed: true), also when that resource has been deleted
#     since; schemathesis reuses generated keys, and then reads the deleted resource's 404 as a bug.
# Every check runs by default; the two exclusions, and the settings for the streams, the stateful phase and
# the DevTools directory's 503s, are in schemathesis.toml (the command line's --checks would override
# its per-operation settings).
# Usage: scripts/schemathesis.sh PATH_TO_BROWSERD [SECONDS_PER_RUN]  (SCHEMATHESIS_SEED changes the seed)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?path to the browserd binary}
seconds=${2:-${SCHEMATHESIS_SECONDS:-40}}
venv=.venv/bin
data=$(mktemp -d)
port=$("$venv/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
token="schemathesis-admin-token-$RANDOM$RANDOM"
BROWSERD_ADMIN_TOKEN="$token" "$bin" serve --port "$port" --data-dir "$data/data" --log-level warning > "$data/server.log" 2>&1 &
server=$!
cleanup() { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
status=0
for phases in coverage,fuzzing stateful; do
  echo "schemathesis: phases $phases, ${seconds} s"
  run=0
  "$venv/st" run openapi.yaml --url "http://127.0.0.1:$port" --header "Authorization: Bearer $token" \
    --phases "$phases" --max-time "$seconds" --workers 1 --seed "${SCHEMATHESIS_SEED:-20261121}" --no-color ${ST_EXTRA:-} > "$data/st.log" 2>&1 || run=$?
  sed -n '/SUMMARY/,$p' "$data/st.log" | grep -vE '^\s*$'
  cp "$data/st.log" "/tmp/st-last-${phases%%,*}.log" 2>/dev/null || true
  if [ "$run" -ne 0 ]; then
    status=$run
    echo "schemathesis found failures in phases $phases:"
    sed -n '/FAILURES/,/SUMMARY/p' "$data/st.log" | head -120
  fi
done
if ! kill -0 "$server" 2>/dev/null; then
  echo "browserd died during the schemathesis run:"; cat "$data/server.log"; exit 1
fi
exit "$status"
