#!/usr/bin/env bash
# Runs schemathesis (PyPI) against a live browserd with openapi.yaml: no 5xx, every answer conforms
# to the contract (status, content type, headers, schema), schema-invalid input is refused and
# undeclared methods get 405. Two checks are left out: `positive_data_acceptance`, because
# valid-looking ids and If-Match tags that name nothing are rightly refused (404/412/422), which no
# schema can express; and `ensure_resource_availability`, because a retried Idempotency-Key rightly
# replays a stored 201 whose resource may have been deleted since.
# The two event-stream operations are left out too: their 200 answer never ends, which schemathesis
# cannot read; tests/sse_client_test.py and the Swift stream tests check them against the contract.
# Usage: scripts/schemathesis.sh PATH_TO_BROWSERD [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?path to the browserd binary}
seconds=${2:-${SCHEMATHESIS_SECONDS:-60}}
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
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
st run openapi.yaml --url "http://127.0.0.1:$port" --header "Authorization: Bearer $token" --checks all --exclude-checks positive_data_acceptance,ensure_resource_availability \
  --exclude-path-regex '/events$' \
  --max-time "$seconds" --workers 1 --seed 20261121 --no-color > "$data/st.log" 2>&1 || status=$?
tail -n 25 "$data/st.log"; cp "$data/st.log" /tmp/st-last.log 2>/dev/null || true
if ! kill -0 "$server" 2>/dev/null; then
  echo "browserd died during the schemathesis run:"; cat "$data/server.log"; exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "schemathesis found failures (full log above was cut to the summary):"
  grep -E "^- ST|Reproduce|curl " "$data/st.log" | head -60
fi
exit "$status"
