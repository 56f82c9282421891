#!/usr/bin/env bash
# Coverage-guided fuzzing of what an imported file goes through (libFuzzer, with AddressSanitizer):
#   scripts/fuzz.sh [SECONDS]      each target for SECONDS (default 600), one after the other
# The targets: FuzzFirefoxSession (a Firefox session: mozLz4 or JSON, read, built into a profile,
# written as a profile document that must read back) and FuzzProfileDocument (a profile document
# read, checked as a load rebuilds it, written again: the same). Each starts from its corpus in
# fuzz/corpus/<kind>; what it finds new goes to .build-fuzz/corpus/<kind> (not committed), a crash to
# .build-fuzz/artifacts/<kind>/ — minimize it (the target with -minimize_crash=1) and add it to
# fuzz/corpus/<kind>/ as a regression: the test suite replays that folder (HostileSessionTests).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
runtime=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/clang
fuzzer=$(find "$runtime" -name 'libclang_rt.fuzzer_no_main-x86_64.a' | head -n 1)
[ -n "$fuzzer" ] || { echo "libFuzzer (libclang_rt.fuzzer_no_main) is not in this Swift toolchain" >&2; exit 1; }
build=(swift build -c release --scratch-path .build-fuzz
  -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xswiftc -DFUZZING
  -Xlinker "$fuzzer" -Xlinker -lstdc++)
for target in FuzzFirefoxSession:firefox FuzzProfileDocument:profile-document; do
  name=${target%%:*}
  kind=${target##*:}
  "${build[@]}" --product "$name"
  mkdir -p ".build-fuzz/corpus/$kind" ".build-fuzz/artifacts/$kind"
  echo "== $name for $seconds s (corpus fuzz/corpus/$kind)"
  # Swift's own backtracer is off: libFuzzer reports the crash, and the input is what matters.
  SWIFT_BACKTRACE=enable=no ".build-fuzz/release/$name" ".build-fuzz/corpus/$kind" "fuzz/corpus/$kind" \
    -max_total_time="$seconds" -max_len=131072 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix=".build-fuzz/artifacts/$kind/" -print_final_stats=1
done
