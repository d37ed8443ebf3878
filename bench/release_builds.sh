# shellcheck shell=bash
# Release builds for the benchmarks that measure this checkout against a baseline commit in one
# run, sourced (bash) by bench/storage.sh, bench/report_memory.sh, bench/driver.sh and
# bench/lib.sh, with `jobs` set (release_build only):
#   release_build SRC BUILD [CMAKE_ARGS...]  llmrepro at -O2 from the sources in SRC into BUILD
#   baseline_source DIR COMMIT               a detached git worktree of COMMIT at DIR/src (made,
#                                            or moved to COMMIT), whose path it prints
release_build() {
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # -O2 as the tested builds use (GCC 12 at -O3 raises false -Wrestrict warnings in report/).
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DLLMREPRO_CUDA=OFF -DLLMREPRO_TESTS=OFF "${launcher[@]}" "${@:3}" >/dev/null
  # shellcheck disable=SC2154 # jobs: set by the script that sources this
  ninja -C "$2" -j "$jobs" llmrepro >/dev/null
}

baseline_source() {
  local src=$1/src
  # Only a worktree of its own is moved. `git -C` in a folder without its own .git (an exported
  # tree, a worktree whose record was pruned) would move this checkout instead.
  if [[ -e $src/.git ]] && git -C "$src" checkout -q --detach "$2" 2>/dev/null; then
    echo "$src"
    return
  fi
  rm -rf "$src"
  git worktree prune
  mkdir -p "$1"
  git worktree add -q --detach "$src" "$2" >&2
  echo "$src"
}
