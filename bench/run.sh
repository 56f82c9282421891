#!/usr/bin/env bash
# Runs every benchmark: the model, persistence, HTTP throughput against nginx, 10,000 idle streams,
# flat cost of a mutation as the state grows, restore time and memory of 100,000 and 1,000,000 tabs,
# then event-stream delivery (1,000 watchers at 100 mutations/s, 10,000 at 2/s; then with a native
# client: 1,000 x 100/s, 10,000 x 10/s, 10,000 idle, on one window and on windows of 100), and 1-3 instances
# on one PostgreSQL beside one SQLite instance, and hostile tenants flooding every pool.
# Numbers print side by side with their baseline measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
# The checkout's virtual environment (scripts/venv.sh); the bench scripts need only the standard library.
PY=${PY:-.venv/bin/python}
swift build -c release --product browserd >/dev/null
# browserd with the PostgreSQL trait (scale_out runs it on PostgreSQL), in a build folder of its own.
swift build -c release --traits PostgreSQL --scratch-path .build-postgres --product browserd >/dev/null
swift build -c release --product StreamBench >/dev/null
swift build -c release --product ModelBench >/dev/null
swift build -c release --product PersistenceBench >/dev/null
swift build -c release --product JSONBench >/dev/null
bin=$(swift build -c release --show-bin-path)
pgbin=$(swift build -c release --traits PostgreSQL --scratch-path .build-postgres --show-bin-path)
mkdir -p bench/out
"$bin/ModelBench"
"$bin/JSONBench"
"$bin/PersistenceBench" "${BENCH_DIR:-$PWD/bench/out}"
"$PY" bench/http_bench.py --browserd "$bin/browserd" "$@"
"$PY" bench/streams.py --server "$bin/StreamBench" --streams "${BENCH_STREAMS:-10000}"
"$PY" bench/flat_cost.py --browserd "$bin/browserd" --duration "${BENCH_DURATION:-6s}"
"$PY" bench/big_session.py --browserd "$bin/browserd" --seeder "$bin/PersistenceBench" --profiles "${BENCH_BIG_PROFILES:-10,100}"
"$PY" bench/sse.py --browserd "$bin/browserd" --scenarios "${BENCH_SSE:-1000x100,10000x2,200x300}"
# The same streams with a native client (bench/sse_swarm.c) beside a fixed tick and the C floor.
"$PY" bench/sse_swarm.py --browserd "$bin/browserd" --scenarios "${BENCH_SWARM:-1000x100,10000x10,10000x0}"
# Several instances on one PostgreSQL (a private cluster for the run) beside one SQLite instance.
# Its forwarding floors are checked last, so the benches after it still run.
floors=0
scripts/with-postgres.sh "$PY" bench/scale_out.py --browserd "$pgbin/browserd" --duration "${BENCH_DURATION:-6s}" || floors=1
# One tenant floods each pool while another works (its p99 beside its quiet p99, and RSS).
"$PY" bench/hostile.py --browserd "$bin/browserd"
bash bench/slow_disk.sh "$bin"
# browserd-renderer with a real Chromium: its commit to a watcher's event, CPU and memory per page.
"$PY" bench/renderer.py
# The renderer's fence: a page's loads and fetches through it beside none, in the same run.
"$PY" bench/fence.py
# Automation clients through the renderer's gateway: attach, a round trip, a goto's commit to a watcher.
"$PY" bench/automation.py
if [ "$floors" != 0 ]; then echo "bench: scale_out missed a forwarding floor (see above)"; exit 1; fi
