#!/usr/bin/env bash
# `llmrepro report --json --html` as the audit grows, for this checkout against a baseline build,
# in one run on one machine: peak RSS and seconds at 1x, 2x and 4x the prompts (200, 400, 800
# prompts x 50 runs x 256 tokens) and at 2x and 4x the runs (200 prompts x 100 and 200 runs),
# and user+sys CPU seconds, each against one SQL scan of the token blobs (`SELECT sum(length(answer))
# FROM packed_tokens`, timed by sqlite3); and `report --quiet`, the analysis without writing its
# outputs, against a scan that reads every blob's bytes (`sum(instr(answer, ...))`).
# The audits are bench/analysis_audits.sh's (recorded from bench/responder, grown in SQL). Each
# figure is the best of LLMREPRO_BENCH_REPEAT runs (default 3), the two builds alternating, and
# the script checks that both builds write the same JSON and HTML bytes. Prints one table.
#   LLMREPRO_BENCH_BASELINE_REF  the baseline commit (default: the parent of the commit that added
#                                core/prompt_details.hpp, the lean report)
#   LLMREPRO_BENCH_BINARY, LLMREPRO_BENCH_BASELINE_BINARY  optimised builds to use instead
#   LLMREPRO_BENCH_SCALE         below 1: the audits start from 50 prompts (a smoke run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck disable=SC2034 # read by bench/release_builds.sh
jobs=${LLMREPRO_JOBS:-$(nproc)}
repeat=${LLMREPRO_BENCH_REPEAT:-3}
small=$(python3 -c "import sys; print(int(float(sys.argv[1]) < 1))" "${LLMREPRO_BENCH_SCALE:-1}")
work=$(mktemp -d "${TMPDIR:-/tmp}/llmrepro-report-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
log() { printf 'report-memory: %s\n' "$*" >&2; }
source bench/analysis_audits.sh

ref=${LLMREPRO_BENCH_BASELINE_REF:-}
if [[ -z $ref && -z ${LLMREPRO_BENCH_BASELINE_BINARY:-} ]]; then
  added=$(git log --format=%H --diff-filter=A -- core/prompt_details.hpp | tail -1)
  [[ -n $added ]] || { log "no commit adds core/prompt_details.hpp: give LLMREPRO_BENCH_BASELINE_REF"; exit 2; }
  ref=$added^
fi
source bench/release_builds.sh
# Unity builds, as CI's, to spend less of a shared machine on two builds.
unity=-DCMAKE_UNITY_BUILD=ON
if [[ -n ${LLMREPRO_BENCH_BASELINE_BINARY:-} ]]; then
  base=$(realpath "$LLMREPRO_BENCH_BASELINE_BINARY")
  base_name=given
else
  baseline=$(git rev-parse --verify "$ref^{commit}")
  base_name=${baseline:0:7}
  log "building the baseline ${baseline:0:12} (Release) in build-bench-base"
  release_build "$(baseline_source "$root/build-bench-base" "$baseline")" \
    "$root/build-bench-base/build" "$unity"
  base=$root/build-bench-base/build/cli/llmrepro
fi
head_name=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")
if [[ -n ${LLMREPRO_BENCH_BINARY:-} ]]; then
  head=$(realpath "$LLMREPRO_BENCH_BINARY")
else
  log "building $head_name (Release) in build-bench"
  release_build "$root" "$root/build-bench" "$unity"
  head=$root/build-bench/cli/llmrepro
fi
mkdir -p build-bench/bench
g++ -std=c++20 -O2 -pthread bench/responder.cpp -o build-bench/bench/responder
# The scan that reads every token as the report does, with nothing analysed: this checkout's
# store, built against build-bench's libraries (none where LLMREPRO_BENCH_BINARY is given).
token_scan=
if [[ -z ${LLMREPRO_BENCH_BINARY:-} ]]; then
  token_scan=build-bench/bench/token_scan
  g++ -std=c++20 -O2 -DNDEBUG -I . -I build-bench bench/token_scan.cpp \
    build-bench/store/libllmrepro_store.a build-bench/core/libllmrepro_core.a -lsqlite3 -lfmt \
    -o "$token_scan"
fi

log "recording the analysis audits (50 prompts x 50 runs, grown in SQL)"
analysis_audits "$head" build-bench/bench/responder "$work" "$small"

# "<seconds> <cpu seconds> <peak MiB>" of one command (cpu: user + sys).
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$work/m" "$@" >/dev/null 2>&1 || true # a gate's exit code
  tail -1 "$work/m" | awk '{printf "%.2f %.2f %.1f\n", $1, $2 + $3, $4 / 1024}'
}
# Seconds of a scan, as sqlite3's timer gives them (milliseconds; /usr/bin/time has 10). The
# issue's scan, sum(length(answer)), reads no blob's bytes: SQLite takes a blob's length from its
# record header. The byte scan searches every blob for eight bytes no blob holds, so it reads
# them all, as a report must. The token scan (bench/token_scan.cpp) reads every record's tokens
# as the report streams them, decoded, and analyses nothing: the floor of a report that reads
# every token.
scan_seconds() {
  printf '.timer on\nSELECT sum(length(answer)) FROM packed_tokens;\n' | sqlite3 "$1" |
    awk '/^Run Time:/ {print $4}'
}
byte_scan_seconds() {
  printf ".timer on\nSELECT sum(instr(answer, x'fffefdfcfbfaf9f8')) FROM packed_tokens;\n" |
    sqlite3 "$1" | awk '/^Run Time:/ {print $4}'
}
best() { printf '%s\n' "$@" | sort -g | head -1; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else 'inf')" "$1" "$2"; }

sizes=(x1 x2 x4 r2 r4)
declare -A prompts runs tokens scan byte_scan token_scan_s base_s base_cpu base_mb head_s head_cpu head_mb same \
  base_q head_q
for size in "${sizes[@]}"; do
  db=$work/$size.db
  read -r prompts[$size] runs[$size] tokens[$size] < <(sqlite3 -separator ' ' "$db" \
    "SELECT (SELECT COUNT(*) FROM prompts), (SELECT MAX(repeat) + 1 FROM requests), (SELECT SUM(completion_tokens) FROM requests)")
  s=(); bytes=(); decoded=(); bs=(); bc=(); bm=(); hs=(); hc=(); hm=(); bq=(); hq=()
  for _ in $(seq "$repeat"); do
    s+=("$(scan_seconds "$db")")
    bytes+=("$(byte_scan_seconds "$db")")
    if [[ -n $token_scan ]]; then decoded+=("$("$token_scan" "$db" 1 | cut -d' ' -f1)"); fi
    read -r t c m < <(measure "$base" report --db "$db" --json "$work/base.json" --html "$work/base.html" --quiet)
    bs+=("$t"); bc+=("$c"); bm+=("$m")
    read -r t c m < <(measure "$head" report --db "$db" --json "$work/head.json" --html "$work/head.html" --quiet)
    hs+=("$t"); hc+=("$c"); hm+=("$m")
    # The analysis alone, without writing the outputs (74 MB of JSON at x1).
    read -r t _ _ < <(measure "$base" report --db "$db" --quiet); bq+=("$t")
    read -r t _ _ < <(measure "$head" report --db "$db" --quiet); hq+=("$t")
  done
  scan[$size]=$(best "${s[@]}")
  byte_scan[$size]=$(best "${bytes[@]}")
  token_scan_s[$size]=-
  if [[ -n $token_scan ]]; then token_scan_s[$size]=$(best "${decoded[@]}"); fi
  base_q[$size]=$(best "${bq[@]}"); head_q[$size]=$(best "${hq[@]}")
  base_s[$size]=$(best "${bs[@]}"); base_cpu[$size]=$(best "${bc[@]}"); base_mb[$size]=$(best "${bm[@]}")
  head_s[$size]=$(best "${hs[@]}"); head_cpu[$size]=$(best "${hc[@]}"); head_mb[$size]=$(best "${hm[@]}")
  same[$size]=no
  if [[ -s $work/head.json && -s $work/head.html ]] && cmp -s "$work/base.json" "$work/head.json" &&
    cmp -s "$work/base.html" "$work/head.html"; then same[$size]=yes; fi
  log "$size: baseline ${base_s[$size]} s ${base_mb[$size]} MiB, head ${head_s[$size]} s ${head_mb[$size]} MiB, scan ${scan[$size]} s, byte scan ${byte_scan[$size]} s, same bytes: ${same[$size]}"
done

echo
echo "llmrepro report --json --html: baseline $base_name against $head_name ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); best of $repeat)"
echo
printf '%-4s %7s %4s %8s | %6s %6s %5s | %7s %7s %5s | %8s %8s %5s | %6s %9s | %4s\n' size prompts \
  runs tokens 'base s' 'head s' 'h/b' 'base cpu' 'head cpu' 'h/b' 'base MiB' 'head MiB' 'h/b' \
  'scan s' 'head/scan' same
for size in "${sizes[@]}"; do
  printf '%-4s %7s %4s %8s | %6s %6s %5s | %7s %7s %5s | %8s %8s %5s | %6s %9s | %4s\n' "$size" \
    "${prompts[$size]}" "${runs[$size]}" "${tokens[$size]}" "${base_s[$size]}" "${head_s[$size]}" \
    "$(ratio "${head_s[$size]}" "${base_s[$size]}")" "${base_cpu[$size]}" "${head_cpu[$size]}" \
    "$(ratio "${head_cpu[$size]}" "${base_cpu[$size]}")" "${base_mb[$size]}" "${head_mb[$size]}" \
    "$(ratio "${head_mb[$size]}" "${base_mb[$size]}")" "${scan[$size]}" \
    "$(ratio "${head_s[$size]}" "${scan[$size]}" | cut -d. -f1)" "${same[$size]}"
done
echo
echo "llmrepro report --quiet (the analysis, no output written), against the scans that read the bytes and the tokens:"
printf '%-4s | %6s %6s %5s | %11s %10s | %12s %11s | %10s\n' size 'base s' 'head s' 'h/b' \
  'byte scan s' 'head/bytes' 'token scan s' 'head/tokens' 'ns a token'
for size in "${sizes[@]}"; do
  against_tokens=-
  if [[ ${token_scan_s[$size]} != - ]]; then
    against_tokens=$(ratio "${head_q[$size]}" "${token_scan_s[$size]}")
  fi
  printf '%-4s | %6s %6s %5s | %11s %10s | %12s %11s | %10s\n' "$size" "${base_q[$size]}" \
    "${head_q[$size]}" "$(ratio "${head_q[$size]}" "${base_q[$size]}")" "${byte_scan[$size]}" \
    "$(ratio "${head_q[$size]}" "${byte_scan[$size]}")" "${token_scan_s[$size]}" "$against_tokens" \
    "$(python3 -c "import sys; print(round(float(sys.argv[1]) * 1e9 / int(sys.argv[2])))" "${head_q[$size]}" "${tokens[$size]}")"
done
echo
echo "peak MiB against x1 (1x prompts, 1x runs):"
for size in x2 x4 r2 r4; do
  printf '  %s: baseline %s, head %s\n' "$size" "$(ratio "${base_mb[$size]}" "${base_mb[x1]}")" \
    "$(ratio "${head_mb[$size]}" "${head_mb[x1]}")"
done
echo "x2, x4: twice and four times the prompts; r2, r4: the same prompts with twice and four times the runs"
echo "cpu: user + sys seconds; scan: SELECT sum(length(answer)) FROM packed_tokens, by sqlite3's timer"
echo "byte scan: SELECT sum(instr(answer, x'fffefdfcfbfaf9f8')) FROM packed_tokens, which reads every blob's bytes"
echo "token scan: bench/token_scan.cpp, every record's tokens read and decoded as the report streams them, nothing analysed"
echo "targets: head peak MiB within 10% of x1 at x2, x4, r2, r4; head seconds within 2x of the scan"
