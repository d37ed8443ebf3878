#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) in build-fuzz and runs each for a bounded
# time from the seeds in fuzz/corpus/. Fails on the first crash, leak or timeout; the input that
# caused it is left in build-fuzz/artifacts/ to become a regression test in tests/unit/probes/.
#   LLMREPRO_FUZZ_SECONDS  seconds per target (default 20)
#   LLMREPRO_FUZZ_BUILD    build folder (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${LLMREPRO_FUZZ_SECONDS:-20}
build=${LLMREPRO_FUZZ_BUILD:-build-fuzz}
jobs=${LLMREPRO_JOBS:-$(nproc)}

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLLMREPRO_FUZZ=ON -DLLMREPRO_CUDA=OFF -DLLMREPRO_TESTS=OFF \
  -DLLMREPRO_SANITIZE=address,undefined -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
ninja -C "$build" -j "$jobs" fuzz_all >/dev/null

mkdir -p "$build/artifacts"
status=0
for corpus in fuzz/corpus/*/; do
  target=$(basename "$corpus")
  work="$build/corpus/$target"
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  # New inputs go to the first folder (the build's), so the seeds in the repository stay as
  # they are; -max_len covers the largest seed.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/fuzz/$target" "$work" "$corpus" -max_total_time="$seconds" -max_len=65536 \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$target-" >"$build/$target.log" 2>&1; then
    echo "fuzz: $target FAILED; see $build/$target.log and $build/artifacts/" >&2
    grep -E 'ERROR|runtime error|SUMMARY' "$build/$target.log" | head -5 >&2 || true
    status=1
  else
    grep -E '^stat::number_of_executed_units' "$build/$target.log" | sed "s/^/fuzz:   /" || true
  fi
done
exit $status
