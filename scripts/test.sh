#!/usr/bin/env bash
# The README's second command and what CI runs: every test of the project.
#   1. the layering, document-link and style checks (every Markdown file named exists; every
#      source laid out as .clang-format says and at most 800 lines long);
#   2. an ASan+UBSan build running the unit and end-to-end tests (except the slow scenarios and
#      those that measure memory or replace operator new);
#   3. a TSan build running the threaded unit tests (scheduler, engine, database writer);
#   4. every libFuzzer target for a bounded time (LLMREPRO_FUZZ_SECONDS each, default 10);
#   5. the main build (warnings as errors, CUDA backend compiled when nvcc is present) running
#      what the sanitized builds could not: the slow scenarios (with upstream llama-server built
#      once per machine by scripts/build-llama-server.sh), those that measure memory, browser,
#      package (the Debian package and `cmake --install`), and gpu (skipped without a device).
#      Each test runs once: this build leaves out the unit-test binaries the ASan+UBSan build
#      already built and ran (LLMREPRO_UNIT_TESTS_IN_ALL=OFF) but the one the browser tests read.
# LLMREPRO_TEST_QUICK=1 runs only step 5, with every test. Every build keeps line tables only
# (-g1): sanitizer reports and backtraces still name file and line, and compiling takes about a
# quarter less time. The sanitized builds compile at -Og (ASan+UBSan) and -O1 (TSan), which
# compile two to three times faster than -O2 with the sanitizers' instrumentation and still find
# what they find at -O2. Every build here is a unity build (CMAKE_UNITY_BUILD: each target's
# sources compiled eight to a translation unit), which parses the shared headers and instantiates
# their templates once per eight files instead of once per file; a developer's build compiles file
# by file, so that a file that forgot an include still fails there.
# The tests run one CTest label at a time, so that each stage and label is timed on its own: the
# seconds of each are printed as it ends, and a table of them all when the script exits, passed
# or failed, so that CI's log shows where its time went. Its last line sums every CTest run
# ("tests: N passed, N failed, N skipped"), a scenario that skipped all it holds counted as
# skipped, never passed.
set -euo pipefail
cd "$(dirname "$0")/.."
export LLMREPRO_JOBS=${LLMREPRO_JOBS:-$(nproc)}

stages=()      # "name|seconds", in order
ran_passed=0 ran_failed=0 ran_skipped=0
ctest_log=$(mktemp)
stage_name=''
stage_start=0
end_stage() {
  [[ -n $stage_name ]] || return 0
  local seconds=$((SECONDS - stage_start)) # whole seconds, as bash counts them
  stages+=("$stage_name|$seconds")
  printf '== %s: %d s\n' "$stage_name" "$seconds"
  stage_name=''
}
step() {
  end_stage
  stage_name="$*"
  stage_start=$SECONDS
  printf '\n== %s (%s)\n' "$*" "$(date +%T)"
}
summary() {
  local status=$?
  end_stage
  local total=0 entry
  for entry in "${stages[@]}"; do total=$((total + ${entry##*|})); done
  printf '\n== time spent (%s)\n%-58s %8s %6s\n' "$( ((status == 0)) && echo passed ||
    echo "failed, exit $status")" stage seconds share
  for entry in "${stages[@]}"; do
    printf '%-58s %8d %5d%%\n' "${entry%|*}" "${entry##*|}" \
      $((total > 0 ? 100 * ${entry##*|} / total : 0))
  done
  printf '%-58s %8d\n' total "$total"
  rm -f "$ctest_log"
  printf '\ntests: %d passed, %d failed, %d skipped\n' "$ran_passed" "$ran_failed" "$ran_skipped"
}
trap summary EXIT

# tests DIR EXCLUDE LABEL...: one ctest run per label, each a stage of its own. A label is
# matched whole ("unit" is not "unit-tsan"); EXCLUDE, when not empty, is ctest's -LE, and
# LLMREPRO_CTEST_EXCLUDE, when set, ctest's -E (test names).
tests() {
  local dir=$1 exclude=$2 label
  shift 2
  for label; do
    step "tests: $label ($dir)"
    local status=0
    ctest --test-dir "$dir" --output-on-failure -j "$LLMREPRO_JOBS" -L "^($label)\$" \
      ${exclude:+-LE "$exclude"} ${LLMREPRO_CTEST_EXCLUDE:+-E "$LLMREPRO_CTEST_EXCLUDE"} | tee "$ctest_log" || status=$?
    count_tests "$ctest_log"
    ((status == 0)) || exit "$status"
  done
}

# count_tests LOG: adds one ctest run's closing counts to the totals. CTest counts a Skipped test
# as passed in "N% tests passed, F tests failed out of T"; its "did not run" list names them.
count_tests() {
  local line total failed skipped
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -n 1) ||
    return 0
  total=${line##* }
  failed=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
  skipped=$(grep -cE '^\s+[0-9]+ - .* \((Skipped|Disabled)\)$' "$1" || true)
  ran_passed=$((ran_passed + total - failed - skipped))
  ran_failed=$((ran_failed + failed))
  ran_skipped=$((ran_skipped + skipped))
}

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
  scripts/build.sh build-asan -DLLMREPRO_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DLLMREPRO_CUDA=OFF \
    -DLLMREPRO_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1" >/dev/null
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    tests build-asan 'slow|unsanitized' 'unit|unit-tsan' e2e

  step "TSan build and tests"
  LLMREPRO_TARGETS="test_probes test_engine test_store test_audit" scripts/build.sh build-tsan \
    -DLLMREPRO_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DLLMREPRO_CUDA=OFF -DLLMREPRO_SANITIZE=thread \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
  # The batch-invariance case drives the engine's thread pool as the other engine cases do, for
  # many more steps (182 s of this stage's 208 s on a CI runner): its subject is the bits, which
  # the ASan+UBSan build checks. TSan runs every other case of the modules where threads meet.
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
    LLMREPRO_CTEST_EXCLUDE='^engine[.]BatchEngine batch invariance$' tests build-tsan '' unit-tsan

  step "fuzzing"
  LLMREPRO_FUZZ_SECONDS=${LLMREPRO_FUZZ_SECONDS:-10} fuzz/run.sh
fi

step "build (warnings as errors)"
if [[ ${LLMREPRO_TEST_QUICK:-0} != 1 ]]; then
  main_labels=(gpu unit-unsanitized e2e-unsanitized package browser e2e-slow)
  LLMREPRO_TARGETS="all test_report" scripts/build.sh build -DLLMREPRO_WERROR=ON \
    -DCMAKE_UNITY_BUILD=ON -DLLMREPRO_UNIT_TESTS_IN_ALL=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
  every_test=build-asan
else
  main_labels=(gpu 'unit|unit-tsan|unit-unsanitized' e2e e2e-unsanitized package browser e2e-slow)
  scripts/build.sh build -DLLMREPRO_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DLLMREPRO_UNIT_TESTS_IN_ALL=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
  every_test=build
fi
# A test without one of those labels would otherwise be skipped without a word. Asked of a build
# that built every test binary: one left out of `all` is listed under a name of its own, unlabelled.
step "unlabelled tests ($every_test)"
unlabelled=$(ctest --test-dir "$every_test" -N -LE '.' | sed -nE 's/^ *Test +#[0-9]+: //p')
if [[ -n $unlabelled ]]; then
  echo "tests without a label, which no stage runs: $unlabelled"
  exit 1
fi
# The e2e-slow scenario against upstream llama-server: built once per machine, outside the
# clone (about 6 minutes on 2 idle cores the first time, nothing after); without the source
# tarball the scenario skips and says why.
step "llama.cpp server (cached)"
status=0
scripts/build-llama-server.sh >/dev/null || status=$?
[[ $status == 0 || $status == 3 ]] || exit "$status"
# The gpu label comes first: without a device its tests skip, and the log's last CTest run is one
# whose tests ran (e2e-slow, against the real llama-server).
tests build '' "${main_labels[@]}"
end_stage
