#!/usr/bin/env bash
# Runs a command beside another, so that it costs no wall time of its own: make test's Swift packages'
# resolution beside the build's C headers' install, and its test build and the format check beside the
# test packages' install. Timed suites never run beside a build (scripts/idle-build.sh runs one on idle
# CPU only).
#   scripts/beside.sh LOG "BUILD COMMAND" TEST COMMAND...
# The build's output goes to LOG and is printed when both have ended; the exit status is the test's,
# or the build's when the test passed.
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
echo "-- the build beside it (exit $built):"
grep -vE '^\[[0-9]+/[0-9]+\] (Compiling|Emitting|Write|Wrapping)' "$log" | tail -n 30
if [ "$tested" -ne 0 ]; then exit "$tested"; fi
exit "$built"
