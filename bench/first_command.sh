#!/usr/bin/env bash
# The README's first command from a fresh clone, against a baseline commit in the same run:
#   bench/first_command.sh
# clones the baseline and the checkout's HEAD into a temporary folder and runs each one's
# `scripts/audit-demo.sh` there with the compiler cache off (CCACHE_DISABLE=1), one after the other,
# then prints wall seconds, CPU seconds (user+sys of the whole script: dependency check, build and
# audit) and the ratios. The dependencies are installed once before the first clone is timed, so
# both measure the same thing; on a machine without them the first command also spends what
# `scripts/install-deps.sh build` takes (printed once, above the table).
#   LLMREPRO_BENCH_BASELINE_REF  the baseline (default: the parent of the commit that made the
#                                demo's build a unity build)
#   LLMREPRO_BENCH_KEEP=1        keeps the clones (their out/ holds each audit's reports)
# Both clones audit the same suite with the same flags, so a ratio is the build's and the
# script's.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf 'first_command: %s\n' "$*" >&2; }

ref=${LLMREPRO_BENCH_BASELINE_REF:-}
if [[ -z $ref ]]; then
  introduced=$(git log --format=%H -S 'DCMAKE_UNITY_BUILD=ON' -- scripts/audit-demo.sh | tail -1)
  [[ -n $introduced ]] || { log "no commit made the demo a unity build: give LLMREPRO_BENCH_BASELINE_REF"; exit 2; }
  ref=$introduced^
fi
baseline=$(git rev-parse --verify "$ref^{commit}")
head=$(git rev-parse HEAD)
git diff --quiet HEAD -- . || log "uncommitted changes are not measured: the clone is of HEAD"

work=$(mktemp -d)
[[ ${LLMREPRO_BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

command -v bc >/dev/null && [[ -x /usr/bin/time ]] || scripts/install-deps.sh bench >/dev/null
start=$(date +%s.%N)
installed=$(scripts/install-deps.sh build 2>&1)
log "build dependencies: $(echo "$(date +%s.%N) - $start" | bc | xargs printf '%.1f') s" \
  "($([[ $installed == *installing* ]] && echo installed || echo "already installed: a check only"))"

# measure NAME COMMIT: writes "wall cpu" of the first command in a fresh clone of COMMIT to
# $work/NAME.result.
measure() {
  local dir=$work/$1
  git clone -q --no-local "$PWD" "$dir"
  git -C "$dir" checkout -q --detach "$2"
  local times=$work/$1.times
  (cd "$dir" && CCACHE_DISABLE=1 /usr/bin/time -f '%e %U %S' -o "$times" \
    scripts/audit-demo.sh >"$work/$1.log" 2>&1) ||
    { log "$1: scripts/audit-demo.sh failed (exit $?):"; tail -n 20 "$work/$1.log" >&2; exit 1; }
  local wall user sys
  read -r wall user sys <"$times"
  echo "$wall $(echo "$user + $sys" | bc)" >"$work/$1.result"
}

log "baseline $(git rev-parse --short "$baseline"), fresh clone"
measure baseline "$baseline"
read -r base_wall base_cpu <"$work/baseline.result"
log "HEAD $(git rev-parse --short "$head"), fresh clone"
measure head "$head"
read -r head_wall head_cpu <"$work/head.result"

printf '%-28s %10s %10s\n' "first command (fresh clone)" "wall s" "cpu s"
printf '%-28s %10.1f %10.1f\n' "baseline $(git rev-parse --short "$baseline")" "$base_wall" "$base_cpu"
printf '%-28s %10.1f %10.1f\n' "HEAD $(git rev-parse --short "$head")" "$head_wall" "$head_cpu"
printf '%-28s %10.2f %10.2f\n' "HEAD / baseline" "$(echo "$head_wall / $base_wall" | bc -l)" \
  "$(echo "$head_cpu / $base_cpu" | bc -l)"
printf 'verdict lines: baseline "%s", HEAD "%s"\n' \
  "$(grep -m1 -E '^(PASS|FAIL|NO STABILITY GATE)' "$work/baseline.log" || true)" \
  "$(grep -m1 -E '^(PASS|FAIL|NO STABILITY GATE)' "$work/head.log" || true)"
