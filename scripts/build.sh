#!/usr/bin/env bash
# Configures and builds llmrepro: scripts/build.sh [BUILD_DIR] [extra CMake arguments...]
# LLMREPRO_TARGETS="a b" builds only those targets; LLMREPRO_JOBS sets the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# Configure on first use, and again whenever options are given (they may differ from the cache).
if [[ ! -f $dir/build.ninja || $# -gt 0 ]]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
fi
# shellcheck disable=SC2086 # target names are words
ninja -C "$dir" ${LLMREPRO_JOBS:+-j "$LLMREPRO_JOBS"} ${LLMREPRO_TARGETS:-}
