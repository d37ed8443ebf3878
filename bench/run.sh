#!/usr/bin/env bash
# Runs every benchmark from a clean checkout and prints one table (see bench/README.md).
#   1. Driver: requests/s at concurrency 1, 16, 64, 256 against bench/responder (a C++ epoll
#      server answering at once with one 256-token chat completion with top-2 logprobs) for
#      `llmrepro audit` (full parse + SQLite store), wrk posting the same body (the HTTP limit),
#      and bench/python_client.py (asyncio + aiohttp, same parse and store).
#   2. CPU cost per request (user+sys) at concurrency 64, ours and Python's.
#   3. Analysis: `llmrepro report --json --html` on an audit of 200 prompts x 50 runs x 256 tokens
#      (and 2x, 4x) against reading the database file once (`cat db > /dev/null`, the physical
#      floor): time and peak memory.
#   4. bench/storage.sh: schema version 2 against version 1 built from the commit before it.
# Every figure that is compared is measured in this one run, on this machine.
#   LLMREPRO_BENCH_BUILD  build folder (default build-bench)
#   LLMREPRO_BENCH_SCALE  multiplies the request counts (default 1; 0.2 for a smoke run)
#   LLMREPRO_BENCH_BINARY an llmrepro already built (optimised) to measure instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${LLMREPRO_BENCH_BUILD:-build-bench}
jobs=${LLMREPRO_JOBS:-$(nproc)}
# work (removed at exit), pids, log(), count(): bench/lib.sh
source bench/lib.sh
bench_start bench

scripts/install-deps.sh bench
mkdir -p "$build/bench"
if [[ -n ${LLMREPRO_BENCH_BINARY:-} ]]; then
  llmrepro=$(realpath "$LLMREPRO_BENCH_BINARY")
else
  log "building (Release) in $build"
  # -O2 as the tested builds use (GCC 12 at -O3 raises false -Wrestrict warnings in report/).
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DLLMREPRO_CUDA=OFF -DLLMREPRO_TESTS=OFF >/dev/null
  ninja -C "$build" -j "$jobs" llmrepro >/dev/null
  llmrepro=$root/$build/cli/llmrepro
fi
g++ -std=c++20 -O2 -pthread bench/responder.cpp -o "$build/bench/responder"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_responder() { # variants
  "$build/bench/responder" "$port" 2 "$1" >"$work/responder.out" &
  pids+=($!)
  for _ in $(seq 100); do
    curl -sf -o /dev/null -X POST -d '{}' "http://127.0.0.1:$port/v1/chat/completions" && return 0
    sleep 0.05
  done
  log "responder did not start"; exit 1
}
stop_responder() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }
start_responder 1
url="http://127.0.0.1:$port"

body='{"model":"bench-model","messages":[{"role":"user","content":"Bench prompt 0"}],"max_tokens":256,"temperature":0,"logprobs":true,"top_logprobs":2,"seed":0}'
cat >"$work/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
EOF

# A suite of n prompts.
make_suite() { python3 -c "
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({'id': f'p{i}', 'prompt': f'Bench prompt {i}'}))" "$1" >"$2"; }

# "<req/s> <cpu ms per request>" of one audit: the rate over the request phase (first start to
# last finish in the database), the CPU over the whole process (analysis included).
audit_rate() { # concurrency prompts runs db
  local c=$1 prompts=$2 runs=$3 db=$4
  make_suite "$prompts" "$work/suite.jsonl"
  rm -f "$db"
  /usr/bin/time -f '%U %S' -o "$work/time" "$llmrepro" audit --suite "$work/suite.jsonl" \
    --endpoint "$url" --api openai-chat --model bench-model --runs "$runs" --concurrency "$c" \
    --max-tokens 256 --db "$db" --quiet
  python3 - "$db" "$work/time" <<'EOF'
import sqlite3, sys
n, first, last = sqlite3.connect(sys.argv[1]).execute(
    "SELECT COUNT(*), MIN(started_ms), MAX(finished_ms) FROM requests WHERE ok = 1").fetchone()
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
print(f"{n / max((last - first) / 1000, 1e-3):.0f} {1000 * (user + system) / n:.2f}")
EOF
}
wrk_rate() { # concurrency
  local threads=$(( $1 < 2 ? 1 : 2 ))
  wrk -t"$threads" -c"$1" -d3s -s "$work/post.lua" "$url/v1/chat/completions" |
    awk '/Requests\/sec/ {printf "%.0f", $2}'
}
python_rate() { # concurrency requests
  rm -f "$work/py.db"*
  /usr/bin/time -f '%U %S' -o "$work/pytime" /usr/bin/python3 bench/python_client.py \
    "$url/v1/chat/completions" "$work/py.db" "$1" "$2" >"$work/py.out"
  python3 - "$work/py.out" "$work/pytime" "$2" <<'EOF'
import sys
fields = dict(kv.split("=") for kv in open(sys.argv[1]).read().split())
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
n = int(sys.argv[3])
print(f"{n / float(fields['seconds']):.0f} {1000 * (user + system) / n:.2f}")
EOF
}

log "driver: requests/s at concurrency 1, 16, 64, 256"
declare -A ours ours_cpu wrk_rps py py_cpu
for c in 1 16 64 256; do
  runs=$(count $(( c == 1 ? 8 : 40 )))
  read -r ours[$c] ours_cpu[$c] < <(audit_rate "$c" 64 "$runs" "$work/audit-$c.db")
  wrk_rps[$c]=$(wrk_rate "$c")
  read -r py[$c] py_cpu[$c] < <(python_rate "$c" "$(count $(( c == 1 ? 200 : 600 )))")
  log "c=$c: llmrepro ${ours[$c]}/s, wrk ${wrk_rps[$c]}/s, python ${py[$c]}/s"
done
stop_responder

log "analysis: generating 200 prompts x 50 runs x 256 tokens (and 2x, 4x; 50 prompts when scale < 1)"
# 50 prompts x 50 runs from the responder, grown in SQL to x1 (200 prompts), x2, x4 (more
# prompts: the report itself grows) and r2, r4 (more runs of the same prompts: the report keeps
# its size); bench/analysis_audits.sh, which bench/report_memory.sh shares.
source bench/analysis_audits.sh
analysis_audits "$llmrepro" "$build/bench/responder" "$work" \
  "$(python3 -c "import sys; print(int(float(sys.argv[1]) < 1))" "$scale")"

declare -A rep_s rep_cpu rep_mb cat_s tokens
measure() { # name command...: "<seconds> <cpu seconds> <peak MiB>"
  /usr/bin/time -f '%e %U %S %M' -o "$work/m" "${@:2}" >/dev/null || true
  # GNU time writes "Command exited with non-zero status N" first when the verdict fails a gate.
  tail -1 "$work/m" | awk '{printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}'
}
sizes=(x1 x2 x4 r2 r4)
for size in "${sizes[@]}"; do
  db=$work/$size.db
  tokens[$size]=$(PYTHONPATH=tests/e2e python3 -c "import sqlite3, sys, token_blob; print(token_blob.stored_count(sqlite3.connect(sys.argv[1])))" "$db")
  read -r rep_s[$size] rep_cpu[$size] rep_mb[$size] < <(measure report "$llmrepro" report --db "$db" \
    --json "$work/$size.json" --html "$work/$size.html" --quiet)
  read -r cat_s[$size] _ _ < <(measure cat sh -c "cat '$db' > /dev/null")
done

ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else 'inf')" "$1" "$2"; }
echo
echo "llmrepro bench ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); body $(awk '{print $4}' "$work/responder.out" 2>/dev/null || true) bytes)"
echo
printf '%-12s %10s %10s %10s %12s %12s\n' concurrency 'llmrepro/s' 'wrk/s' 'python/s' 'ours/wrk' 'ours/python'
for c in 1 16 64 256; do
  printf '%-12s %10s %10s %10s %12s %12s\n' "$c" "${ours[$c]}" "${wrk_rps[$c]}" "${py[$c]}" \
    "$(ratio "${ours[$c]}" "${wrk_rps[$c]}")" "$(ratio "${ours[$c]}" "${py[$c]}")"
done
echo
printf 'CPU per request at c=64 (user+sys): llmrepro %s ms (whole audit incl. analysis), python %s ms, ratio %s\n' \
  "${ours_cpu[64]}" "${py_cpu[64]}" "$(ratio "${py_cpu[64]}" "${ours_cpu[64]}")"
echo
printf '%-6s %10s %9s %9s %11s %7s %11s\n' size 'tokens' 'report s' 'rep cpu' 'report MiB' \
  'cat s' 'report/cat'
for size in "${sizes[@]}"; do
  printf '%-6s %10s %9s %9s %11s %7s %11s\n' "$size" "${tokens[$size]}" "${rep_s[$size]}" \
    "${rep_cpu[$size]}" "${rep_mb[$size]}" "${cat_s[$size]}" "$(ratio "${rep_s[$size]}" "${cat_s[$size]}")"
done
echo "x2, x4: twice and four times the prompts; r2, r4: the same prompts with twice and four times the runs"
echo
echo "targets: ours/wrk >= 0.5 at c=64; ours/python >= 5; report MiB flat as the prompts and runs"
echo "grow (within 10% of x1; bench/report_memory.sh measures it against a baseline build);"
echo "report/cat: the report against reading the file once, the physical floor"

LLMREPRO_BENCH_BINARY=$llmrepro bench/storage.sh
