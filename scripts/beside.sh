#!/usr/bin/env bash
# Runs one command beside another, so that the one beside costs no wall time of its own:
#   scripts/beside.sh LOG "COMMAND BESIDE" MAIN COMMAND...
# make test runs the test packages' install, the Python tools and the format check beside its build
# (they need little CPU: apt and pip wait on the network and the disk), and its last build (the
# embedded browserd) beside schemathesis, which runs for a fixed time whatever the machine's load (it
# only makes fewer cases) and checks no deadline. Timed suites never run beside a build.
# The command beside writes to LOG, printed when both have ended; the exit status is the main
# command's, or the one beside's when the main one passed.
set -uo pipefail
log=${1:?log file}
build=${2:?build command}
shift 2
bash -c "$build" >"$log" 2>&1 &
builder=$!
"$@"
tested=$?
wait "$builder"
built=$?
echo "-- beside it: $build (exit $built)"
grep -vE '^\[[0-9]+/[0-9]+\] (Compiling|Emitting|Write|Wrapping)' "$log" | tail -n 30
if [ "$tested" -ne 0 ]; then exit "$tested"; fi
exit "$built"
