#!/usr/bin/env bash
# A build that uses only CPU time nothing else wants: make test starts the embedded build this way
# before the suites, so it advances in their idle moments (the cluster's and the renderer's suites
# mostly wait) without taking CPU from them, and schemathesis waits for what is left of it.
# SCHED_IDLE (chrt --idle): the kernel runs it only when no other task wants the CPU; where that
# cannot be set, nice 19.
#   scripts/idle-build.sh start LOG "BUILD COMMAND"   (returns at once)
#   scripts/idle-build.sh wait LOG                    (waits; prints the log's end; the build's status)
set -uo pipefail
action=${1:?start or wait}
log=${2:?log file}
case "$action" in
  start)
    build=${3:?build command}
    rm -f "$log.status"
    if chrt --idle 0 true 2>/dev/null; then lower=(chrt --idle 0); else lower=(nice -n 19); fi
    # setsid: make's own process group ends without it; the status file says it finished.
    rm -f "$log.pid"
    setsid "${lower[@]}" bash -c "echo \$\$ > '$log.pid'; ( $build ); echo \$? > '$log.status'" >"$log" 2>&1 < /dev/null &
    echo "started beside what follows, on idle CPU only (${lower[*]}): $build"
    ;;
  wait)
    while [ ! -s "$log.status" ]; do
      if [ -s "$log.pid" ] && ! kill -0 "$(cat "$log.pid")" 2>/dev/null; then
        sleep 1
        [ -s "$log.status" ] || { echo "the build beside ended without saying how (killed?)"; tail -n 30 "$log"; exit 1; }
      fi
      sleep 1
    done
    built=$(cat "$log.status")
    echo "-- the build (exit $built):"
    grep -vE '^\[[0-9]+/[0-9]+\] (Compiling|Emitting|Write|Wrapping)' "$log" | tail -n 30
    exit "$built"
    ;;
  *)
    echo "usage: scripts/idle-build.sh start LOG COMMAND | wait LOG" >&2
    exit 2
    ;;
esac
