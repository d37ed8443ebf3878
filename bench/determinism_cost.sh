#!/usr/bin/env bash
# What a deterministic serving mode costs, on the embedded reference engine:
#   bench/determinism_cost.sh
# audits the engine demo suite with the default engine (A) and with --engine-batch-invariant (B),
# the same plan for both (--runs 5 --concurrency 1,8,16, the engine's 16 sequences a step), in
# alternating rounds A B A B ... on the same machine, then `llmrepro diff A B` of each round: the
# throughput (generated tokens per second of each level's wall time) and the latency (mean and
# 95th percentile) of each level side by side, and B/A. The table printed last holds, per level,
# the median over the rounds of each figure and ratio; each round's own diff is kept under the
# work folder when LLMREPRO_BENCH_KEEP=1.
#   LLMREPRO_BENCH_BINARY  an llmrepro to measure (default: an optimised build in build-bench)
#   LLMREPRO_BENCH_ROUNDS  rounds of A then B (default 3)
# Nothing else should run beside it: wall time is what is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
log() { printf 'determinism_cost: %s\n' "$*" >&2; }
rounds=${LLMREPRO_BENCH_ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmrepro-determinism-cost.XXXXXX")
[[ ${LLMREPRO_BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

if [[ -n ${LLMREPRO_BENCH_BINARY:-} ]]; then
  llmrepro=$(realpath "$LLMREPRO_BENCH_BINARY")
else
  build=build-bench
  log "building (Release) in $build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DLLMREPRO_CUDA=OFF -DLLMREPRO_TESTS=OFF >/dev/null
  ninja -C "$build" -j "${LLMREPRO_JOBS:-$(nproc)}" llmrepro >/dev/null
  llmrepro=$root/$build/cli/llmrepro
fi

audit() { # audit DB [engine flags...]
  local db=$1
  shift
  "$llmrepro" audit --suite examples/suites/engine-demo.jsonl --runs 5 --concurrency 1,8,16 \
    --db "$db" --overwrite --quiet --no-preflight "$@" >/dev/null || [[ $? == 1 ]]
}

for ((round = 1; round <= rounds; round++)); do
  log "round $round of $rounds: default engine (A), then --engine-batch-invariant (B)"
  audit "$work/a$round.db"
  audit "$work/b$round.db" --engine-batch-invariant
  "$llmrepro" diff "$work/a$round.db" "$work/b$round.db" --json "$work/diff$round.json" \
    --quiet >/dev/null || true
done

python3 - "$work" "$rounds" <<'PYTHON'
import json
import statistics
import sys

work, rounds = sys.argv[1], int(sys.argv[2])
by_level = {}
for r in range(1, rounds + 1):
    with open(f"{work}/diff{r}.json", encoding="utf-8") as f:
        for s in json.load(f)["speeds"]:
            by_level.setdefault(s["concurrency"], []).append(s)


def median(rows, key):
    values = [row[key] for row in rows if row[key] is not None]
    return statistics.median(values) if values else float("nan")


print(f"median of {rounds} rounds (A: default engine, B: --engine-batch-invariant)")
print("| level | A tok/s | B tok/s | B/A | A latency ms mean (p95) | B latency ms mean (p95) | B/A |")
print("|---|---:|---:|---:|---:|---:|---:|")
for level, rows in sorted(by_level.items()):
    print(f"| c={level} | {median(rows, 'a_tokens_per_second'):.1f} "
          f"| {median(rows, 'b_tokens_per_second'):.1f} | {median(rows, 'throughput_ratio'):.2f} "
          f"| {median(rows, 'a_mean_latency_ms'):.1f} ({median(rows, 'a_p95_latency_ms'):.0f}) "
          f"| {median(rows, 'b_mean_latency_ms'):.1f} ({median(rows, 'b_p95_latency_ms'):.0f}) "
          f"| {median(rows, 'latency_ratio'):.2f} |")
PYTHON
