#!/usr/bin/env bash
# make test's preparation, beside the test packages' install (scripts/beside.sh in the Makefile): the one
# test build (the PostgreSQL build with every test target, the Swift client's and browserd-renderer's
# included) with the code's format check beside it. The format
# check failing fails make test; the build failing does not stop it here: test-steps builds again and
# shows why in full.
#   scripts/prepare-tests.sh SWIFT "TEST BUILD FLAGS" "LINT COMMAND"
set -uo pipefail
swift=${1:?swift}
flags=${2:?test build flags}
lint=${3:?lint command}
cd "$(dirname "$0")/.."
echo "== $(date +%T) beside it: the test build (the Swift packages resolved before), with the format check beside it"
# .build-test/prepared says the test build is made and nothing changed since (test-steps takes it and
# skips its own build, which would cost a planning of every manifest: its environment differs).
rm -f .build-test/prepared
scripts/beside.sh .build-test/build.log \
  "if BROWSERD_CLIENT_TESTS=1 $swift build --build-tests $flags --traits PostgreSQL; then touch .build-test/prepared; else echo 'the test build failed: test-steps builds again and shows why'; fi" \
  bash -c "$lint"
