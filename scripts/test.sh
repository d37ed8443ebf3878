#!/usr/bin/env bash
# The README's second command and what CI runs: every test of the project.
#   1. the layering, document-link and style checks (every Markdown file named exists; every
#      source laid out as .clang-format says and at most 800 lines long);
#   2. an ASan+UBSan build running the unit and end-to-end tests (except the slow scenarios and
#      those that measure memory);
#   3. a TSan build running the threaded unit tests (scheduler, engine, database writer);
#   4. every libFuzzer target for a bounded time (LLMREPRO_FUZZ_SECONDS each, default 10);
#   5. the main build (warnings as errors, CUDA backend compiled when nvcc is present) running
#      every test: unit, e2e, browser, package (the Debian package and `cmake --install`), and gpu
#      (skipped without a device).
# LLMREPRO_TEST_QUICK=1 runs only step 5. Every build keeps line tables only (-g1): sanitizer
# reports and backtraces still name file and line, and compiling takes about a quarter less time.
set -euo pipefail
cd "$(dirname "$0")/.."
export LLMREPRO_JOBS=${LLMREPRO_JOBS:-$(nproc)}
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

step "dependencies"
scripts/install-deps.sh test

step "layering"
scripts/check-layering.sh

step "doc links"
scripts/check-doc-links.sh

step "style"
scripts/check-style.sh

if [[ ${LLMREPRO_TEST_QUICK:-0} != 1 ]]; then
  step "ASan+UBSan build and tests"
  scripts/build.sh build-asan -DLLMREPRO_WERROR=ON -DLLMREPRO_CUDA=OFF \
    -DLLMREPRO_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$LLMREPRO_JOBS" -L 'unit|e2e' -LE 'slow|unsanitized'

  step "TSan build and tests"
  LLMREPRO_TARGETS="test_probes test_engine test_store" scripts/build.sh build-tsan \
    -DLLMREPRO_WERROR=ON -DLLMREPRO_CUDA=OFF -DLLMREPRO_SANITIZE=thread \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j "$LLMREPRO_JOBS" -L tsan

  step "fuzzing"
  LLMREPRO_FUZZ_SECONDS=${LLMREPRO_FUZZ_SECONDS:-10} fuzz/run.sh
fi

step "build (warnings as errors) and every test"
scripts/build.sh build -DLLMREPRO_WERROR=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
ctest --test-dir build --output-on-failure -j "$LLMREPRO_JOBS"
