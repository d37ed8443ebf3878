#!/usr/bin/env bash
# The cost of charging every attempt in the database before it is sent (a budgeted audit's
# journal, docs/design.md "Budgets"): requests/s of `llmrepro audit` with no budget (no journal)
# and with --max-requests far above the plan (one committed write per batch of starts),
# alternating, best of three each, and the ratio budgeted/unbudgeted: against bench/responder
# (answers at once: the worst case) at concurrency 1 and 64, and against the embedded reference
# engine at concurrency 8. One binary, one run, one machine: read the ratio.
#   LLMREPRO_BENCH_BINARY the llmrepro to measure (default build/cli/llmrepro)
#   LLMREPRO_BENCH_SCALE  multiplies the request counts (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
llmrepro=$(realpath "${LLMREPRO_BENCH_BINARY:-build/cli/llmrepro}")
scale=${LLMREPRO_BENCH_SCALE:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmrepro-bench-charge.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
count() { python3 -c "import sys; print(max(int(float(sys.argv[1]) * float(sys.argv[2])), 1))" "$1" "$scale"; }

g++ -std=c++20 -O2 -pthread bench/responder.cpp -o "$work/responder"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$work/responder" "$port" 2 1 >"$work/responder.out" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf -o /dev/null -X POST -d '{}' "http://127.0.0.1:$port/v1/chat/completions" && break
  sleep 0.05
done
python3 -c "
import json
for i in range(64):
    print(json.dumps({'id': f'p{i}', 'prompt': f'Bench prompt {i}'}))" >"$work/suite.jsonl"

# Requests/s over the request phase (first start to last finish in the database).
rate() { # target concurrency runs budget-flags...
  local target=$1 c=$2 runs=$3
  shift 3
  local endpoint=(--endpoint "http://127.0.0.1:$port" --api openai-chat --model bench-model
    --max-tokens 256)
  [[ $target == engine ]] && endpoint=(--max-tokens 16)
  rm -f "$work/a.db"*
  "$llmrepro" audit --suite "$work/suite.jsonl" "${endpoint[@]}" --runs "$runs" \
    --concurrency "$c" --db "$work/a.db" --quiet "$@" || true
  python3 - "$work/a.db" <<'PY'
import sqlite3, sys
n, first, last = sqlite3.connect(sys.argv[1]).execute(
    "SELECT COUNT(*), MIN(started_ms), MAX(finished_ms) FROM requests WHERE ok = 1").fetchone()
print(f"{n / max((last - first) / 1000, 1e-3):.0f}")
PY
}

echo "budget charge ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%9s  %5s  %12s  %12s  %6s\n' target c "no budget/s" "budgeted/s" ratio
for case in "responder 1 8" "responder 64 40" "engine 8 2"; do
  read -r target c runs <<<"$case"
  runs=$(count "$runs")
  best_plain=0 best_budget=0
  for _ in 1 2 3; do
    plain=$(rate "$target" "$c" "$runs")
    budget=$(rate "$target" "$c" "$runs" --max-requests 1000000000)
    (( plain > best_plain )) && best_plain=$plain
    (( budget > best_budget )) && best_budget=$budget
  done
  printf '%9s  %5s  %12s  %12s  %6s\n' "$target" "$c" "$best_plain" "$best_budget" \
    "$(python3 -c "print(f'{$best_budget / $best_plain:.2f}')")"
done
