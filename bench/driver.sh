#!/usr/bin/env bash
# The driver's CPU and the parse's speed, this checkout against a baseline commit, in one run on
# one machine (see bench/README.md, "Driver CPU and parse"):
#   1. CPU per request at concurrency 64 against bench/responder (64 prompts x 40 runs of its
#      256-token chat completion with top-2 logprobs): user+sys of the whole `llmrepro audit`
#      (parse, store, final analysis), and of `llmrepro report` on the database it wrote (the
#      analysis alone, so that the request phase is the difference). Best of the rounds for each
#      build, the builds alternating within each round.
#   2. Parse: bench/parse_bench.cpp, built against each build's own libraries, parsing the
#      responder's body whole and as its SSE stream: MB/s of thread CPU, the best of the rounds
#      (each the best of five), the builds alternating.
# Prints one table with the ratios new/baseline and the targets, and the driver's target as a ratio
# against the baseline (0.2 ms of the 0.52 the baseline takes on a quiet machine).
#   LLMREPRO_BENCH_BASELINE_REF  the baseline commit (default: the commit before the driver work,
#                                the parent of the one that added probes' token reader)
#   LLMREPRO_BENCH_ROUNDS        audits and parse rounds per build (default 3)
#   LLMREPRO_BENCH_SCALE         multiplies the runs per prompt (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rounds=${LLMREPRO_BENCH_ROUNDS:-3}
jobs=${LLMREPRO_JOBS:-$(nproc)}
# work (removed at exit), pids, log(), count(): bench/lib.sh
source bench/lib.sh
bench_start driver

ref=${LLMREPRO_BENCH_BASELINE_REF:-}
if [[ -z $ref ]]; then
  # The commit before the driver work began: the one before the token reader was added.
  introduced=$(git log --format=%H --diff-filter=A -- probes/detail/openai_token_reader.hpp | tail -1)
  [[ -n $introduced ]] || { log "no commit adds the token reader: give LLMREPRO_BENCH_BASELINE_REF"; exit 2; }
  ref=$introduced^
fi
baseline=$(git rev-parse --verify "$ref^{commit}")
head=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
build() { # source_dir build_dir
  # -O2 as bench/run.sh and the tested builds use.
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DLLMREPRO_CUDA=OFF -DLLMREPRO_TESTS=OFF "${launcher[@]}" >/dev/null
  ninja -C "$2" -j "$jobs" llmrepro >/dev/null
  # The parse benchmark uses only probes/dialect.hpp, so this checkout's source builds against
  # either build's headers and libraries.
  local curl_libs
  read -ra curl_libs < <(pkg-config --libs libcurl)
  g++ -std=c++20 -O2 -DNDEBUG -I "$1" bench/parse_bench.cpp "$2/probes/libllmrepro_probes.a" \
    "$2/core/libllmrepro_core.a" "${curl_libs[@]}" -lfmt -o "$2/parse_bench"
}
# The baseline's source: a worktree of its own (bench/release_builds.sh), so that what its build
# compiled is what that commit holds (an exported tree keeps the commit's old mtimes, which let
# ninja keep objects of another commit built in the same folder).
source bench/release_builds.sh
base_src=$(baseline_source "$root/build-bench-base" "$baseline")
log "building the baseline ${baseline:0:12} (Release) in build-bench-base"
build "$base_src" "$root/build-bench-base/build"
log "building $head (Release) in build-bench"
build "$root" "$root/build-bench"
declare -A binary=([baseline]=$root/build-bench-base/build/cli/llmrepro [new]=$root/build-bench/cli/llmrepro)
declare -A parser=([baseline]=$root/build-bench-base/build/parse_bench [new]=$root/build-bench/parse_bench)
mkdir -p build-bench/bench
g++ -std=c++20 -O2 -pthread bench/responder.cpp -o build-bench/bench/responder
build-bench/bench/responder --dump "$work"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
build-bench/bench/responder "$port" 2 1 >"$work/responder.out" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf -o /dev/null -X POST -d '{}' "http://127.0.0.1:$port/v1/chat/completions" && break
  sleep 0.05
done
python3 -c "
import json
for i in range(64): print(json.dumps({'id': f'p{i}', 'prompt': f'Bench prompt {i}'}))" >"$work/suite.jsonl"
runs=$(python3 -c "import sys; print(max(int(40 * float(sys.argv[1])), 1))" "$scale")

# CPU seconds (user+sys, to the microsecond) of a command, its output discarded.
cpu_seconds() {
  python3 -c '
import resource, subprocess, sys
before = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
print(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)' "$@"
}

# "<audit cpu ms per request> <report cpu ms per request>" of one audit by one build.
audit_cpu() { # build
  local db=$work/$1.db audit report
  rm -f "$db"*
  audit=$(cpu_seconds "${binary[$1]}" audit --suite "$work/suite.jsonl" \
    --endpoint "http://127.0.0.1:$port" --api openai-chat --model bench-model --runs "$runs" \
    --concurrency 64 --max-tokens 256 --db "$db" --quiet)
  report=$(cpu_seconds "${binary[$1]}" report --db "$db" --quiet)
  python3 - "$db" "$audit" "$report" <<'EOF'
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM requests WHERE ok = 1").fetchone()[0]
print(" ".join(f"{1000 * float(c) / n:.4f}" for c in sys.argv[2:]))
EOF
}

declare -A best_audit best_report
for round in $(seq "$rounds"); do
  for build in baseline new; do
    read -r audit report < <(audit_cpu "$build")
    log "round $round $build: audit $audit ms, report $report ms a request"
    if [[ -z ${best_audit[$build]:-} ]] || python3 -c "import sys; sys.exit(float(sys.argv[1]) >= float(sys.argv[2]))" "$audit" "${best_audit[$build]}"; then
      best_audit[$build]=$audit
      best_report[$build]=$report
    fi
  done
done

# The parse benchmark, alternating between the builds, the best round of each.
higher() { python3 -c "import sys; sys.exit(not float(sys.argv[1]) > float(sys.argv[2] or 0))" "$1" "$2"; }
declare -A parse_whole parse_sse
for round in $(seq "$rounds"); do
  for build in baseline new; do
    while read -r form _ _ rate; do
      if [[ $form == whole ]]; then
        if higher "$rate" "${parse_whole[$build]:-}"; then parse_whole[$build]=$rate; fi
      elif higher "$rate" "${parse_sse[$build]:-}"; then
        parse_sse[$build]=$rate
      fi
    done < <("${parser[$build]}" "$work/chat.json" "$work/chat.sse")
    log "parse round $round $build: best whole ${parse_whole[$build]} MB/s, sse ${parse_sse[$build]} MB/s"
  done
done

python3 - "$baseline" "$head" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$runs" \
  "${best_audit[baseline]}" "${best_audit[new]}" "${best_report[baseline]}" "${best_report[new]}" \
  "${parse_whole[baseline]}" "${parse_whole[new]}" "${parse_sse[baseline]}" "${parse_sse[new]}" <<'EOF'
import sys
base, head, cpus, load, runs = sys.argv[1:6]
a0, a1, r0, r1, w0, w1, s0, s1 = map(float, sys.argv[6:14])
print(f"\nllmrepro driver bench ({cpus} CPUs, load {load}); baseline {base[:12]}, new {head}; "
      f"64 prompts x {runs} runs at c=64")
print(f"\n| metric | baseline | new | new/baseline | target |\n|---|---:|---:|---:|---|")
rows = [
    ("audit CPU ms per request (user+sys, analysis included)", a0, a1, "<= 0.2 ms", a1 <= 0.2),
    ("report CPU ms per request (the analysis alone)", r0, r1, "", None),
    ("request phase CPU ms per request (audit - report)", a0 - r0, a1 - r1, "", None),
    ("parse MB/s, 256-token chat completion", w0, w1, ">= 1000 MB/s", w1 >= 1000),
    ("parse MB/s, the same as SSE", s0, s1, "", None),
]
for name, old, new, target, held in rows:
    fmt = "{:.3f}" if "ms" in name else "{:.0f}"
    mark = "" if held is None else (" (holds)" if held else " (not met)")
    print(f"| {name} | {fmt.format(old)} | {fmt.format(new)} | {new / old:.2f} | {target}{mark} |")
# The issue set 0.2 ms where this baseline took 0.52 ms a request on a quiet machine: as a ratio
# against the baseline in the same run, which the machine's load moves far less, 0.2 / 0.52.
ratio_target = 0.2 / 0.52
held = " (holds)" if a1 / a0 <= ratio_target else " (not met)"
print(f"\nAudit CPU as a ratio: {a1 / a0:.2f} of the baseline against {ratio_target:.3f} "
      f"(the target's 0.2 ms of the baseline's 0.52 on a quiet machine){held}.")
EOF
