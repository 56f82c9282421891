#!/usr/bin/env bash
# Group commit on a disk whose flushes cost what real disks' do: every fsync/fdatasync of the
# processes below is delayed by SLOWSYNC_US (default 2000 µs) through an LD_PRELOAD shim
# (bench/slowsync.c), and the writer, the API and the one-transaction-per-insert baseline are
# measured under the same delay, side by side. A simulation: this VM's own disk flushes in ~0.1 ms.
# Usage: bench/slow_disk.sh BIN_DIR   (BIN_DIR holds release builds of browserd and PersistenceBench)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?release bin directory}
delay=${SLOWSYNC_US:-2000}
shim=$(mktemp -d)/slowsync.so
gcc -shared -fPIC -O2 -o "$shim" bench/slowsync.c -ldl
echo
echo "Slow disk (simulated): every fsync/fdatasync delayed by ${delay} µs, same run"
persistence=$(SLOWSYNC_US=$delay LD_PRELOAD=$shim "$bin/PersistenceBench" "${BENCH_DIR:-$PWD/bench/out}" | sed -n '3,5p')
echo "$persistence"
baseline=$(echo "$persistence" | awk '/one transaction per insert/ {for (i = 1; i <= NF; i++) if ($i == "inserts/s") {print $(i-1); exit}}')
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SLOWSYNC_US=$delay LD_PRELOAD=$shim "$bin/browserd" serve --port "$port" --data-dir "$data" --log-level error &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
profile=$(curl -fsS -X POST "http://127.0.0.1:$port/v1/profiles" -H 'Content-Type: application/json' -d '{"name":"bench"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
window=$(curl -fsS -X POST "http://127.0.0.1:$port/v1/browsers" -H 'Content-Type: application/json' -d "{\"profileId\":\"$profile\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
rate=$(WINDOWS=$window wrk -t2 -c64 -d"${BENCH_DURATION:-10s}" -s bench/spread_pairs.lua "http://127.0.0.1:$port" | awk '/Requests\/sec/ {print $2}')
ratio=$(python3 -c "print(f'{float(\"$rate\") / float(\"$baseline\"):.1f}')")
echo "  API, 64 clients, durable POST+DELETE tab pairs: ${rate} acknowledged mutations/s -> ${ratio}x the one-transaction-per-insert baseline"
