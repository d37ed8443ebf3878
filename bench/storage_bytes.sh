#!/usr/bin/env bash
# Bytes on disk of schema version 3 (token blob version 2, texts read back from their tokens)
# against the build before it, in one run on one machine: builds the parent of the commit that
# set k_schema_version = 3 (or LLMREPRO_BENCH_BASELINE_REF; HEAD while that commit is not made)
# into build-bench-base and the checkout into build-bench, then measures for both
#   1. bytes per token of an audit of 64 prompts x 40 runs x 128 tokens (`--max-tokens 128`, the
#      default) recorded at concurrency 64 from bench/responder, request rows, indexes, page
#      slack and all, with where they go (dbstat), for two kinds of log probabilities: the
#      responder's short decimals (-0.012, -2.125) and float32 values printed with 17 digits over
#      a text of its own at every position, as vLLM and SGLang send them; and the driver CPU per
#      request of those audits (user+sys of the whole process, best of five, alternating);
#   2. on one audit of 200 prompts x 50 runs x 128 tokens with identical content in both schemas
#      (recorded by the baseline from the responder and doubled twice in SQL, as bench/run.sh
#      does; the new build's copy is that very file upgraded in place and VACUUMed), bytes per
#      token, `report --json --html` seconds, CPU seconds (user+sys, steadier than the wall time
#      on a loaded machine) and peak RSS (best of five, alternating), and
#      whether both reports are identical byte for byte.
# Prints one table of ratios (new/base) and targets.
#   LLMREPRO_BENCH_BASELINE_REF  the baseline commit
#   LLMREPRO_BENCH_SCALE         multiplies the request counts (default 1; below 1 the analysis
#                                audit stays at 50 prompts)
#   LLMREPRO_BENCH_BINARY, LLMREPRO_BENCH_BASELINE_BINARY  optimised builds to use instead
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source bench/lib.sh
bench_start storage_bytes
tokens=128

bench_baseline 'k_schema_version = 3' HEAD

bench_binaries "$baseline" build-bench-base "$head"
base=$bench_base
new=$bench_new

bench_port
responder=$root/build-bench/bench/responder

stored_tokens() { PYTHONPATH=tests/e2e python3 -c "import sqlite3, sys, token_blob; print(token_blob.stored_count(sqlite3.connect(sys.argv[1])))" "$1"; }

# "<bytes per token> <blobs> <requests> <requests index> <texts> <other> <free>": the file (and
# any WAL left) per token, then each part's pages per token (dbstat; free: the freelist).
bytes_per_token() { # db
  python3 - "$1" "$(stored_tokens "$1")" <<'PY'
import os, sqlite3, sys
db, tokens = sys.argv[1], int(sys.argv[2])
size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
conn = sqlite3.connect(db)
page = conn.execute("PRAGMA page_size").fetchone()[0]
parts = dict.fromkeys(("blobs", "requests", "index", "texts", "other"), 0)
group = {"packed_tokens": "blobs", "requests": "requests", "sqlite_autoindex_requests_1": "index",
         "token_texts": "texts", "sqlite_autoindex_token_texts_1": "texts"}
for name, pages in conn.execute("SELECT name, count(*) FROM dbstat GROUP BY name"):
    parts[group.get(name, "other")] += pages * page
free = conn.execute("PRAGMA freelist_count").fetchone()[0] * page
print(" ".join(f"{value / tokens:.2f}" for value in (size, *parts.values(), free)))
PY
}


runs=$(count 40)
make_suite 64 "$work/suite.jsonl"
declare -A cpu_base cpu_new bpt_base bpt_new
styles=(decimal float32)
for style in "${styles[@]}"; do
  log "driver ($style log probabilities): 64 prompts x $runs runs x $tokens tokens at c=64, five rounds alternating"
  start_responder "$responder" 2 4 "$tokens" "$style"
  c1=(); c2=()
  for _ in 1 2 3 4 5; do
    c1+=("$(audit_cpu "$base" "$runs" "$work/$style-base.db" "$tokens")")
    c2+=("$(audit_cpu "$new" "$runs" "$work/$style-new.db" "$tokens")")
  done
  stop_responder
  cpu_base[$style]=$(min "${c1[@]}"); cpu_new[$style]=$(min "${c2[@]}")
  log "driver CPU ms per request: base ${c1[*]}, new ${c2[*]}"
  bpt_base[$style]=$(bytes_per_token "$work/$style-base.db")
  bpt_new[$style]=$(bytes_per_token "$work/$style-new.db")
done

log "analysis audit: 50 prompts x 50 runs recorded by the baseline, doubled in SQL"
make_suite 50 "$work/suite.jsonl"
start_responder "$responder" 2 4 "$tokens" decimal
mkdir -p "$work/base" "$work/new"
"$base" audit --suite "$work/suite.jsonl" --endpoint "$url" --api openai-chat --model bench-model \
  --runs 50 --concurrency 64 --max-tokens "$tokens" --db "$work/base/audit.db" --quiet || true
stop_responder
if python3 -c "import sys; sys.exit(float(sys.argv[1]) < 1)" "$scale"; then
  double "$work/base/audit.db"; double "$work/base/audit.db"
fi
sqlite3 "$work/base/audit.db" 'PRAGMA journal_mode=DELETE; VACUUM; PRAGMA journal_mode=WAL;' >/dev/null
cp "$work/base/audit.db" "$work/new/audit.db"
log "upgrading a copy in place with the new build"
/usr/bin/time -f '%e s' -o "$work/upgrade.time" "$new" report --db "$work/new/audit.db" --quiet \
  >/dev/null 2>"$work/upgrade.err" || true
upgrade_s=$(tail -1 "$work/upgrade.time")
upgraded=$(grep -o 'upgraded audit database.*' "$work/upgrade.err" || echo "not upgraded (same schema)")
sqlite3 "$work/new/audit.db" 'PRAGMA journal_mode=DELETE; VACUUM; PRAGMA journal_mode=WAL;' >/dev/null
analysis_tokens=$(stored_tokens "$work/base/audit.db")
read -r abpt_base _ < <(bytes_per_token "$work/base/audit.db")
read -r abpt_new _ < <(bytes_per_token "$work/new/audit.db")

measure() { # command...: "<seconds> <cpu seconds> <peak MiB>"
  /usr/bin/time -f '%e %U %S %M' -o "$work/m" "$@" >/dev/null || true
  # GNU time writes "Command exited with non-zero status N" first when the verdict fails a gate.
  tail -1 "$work/m" | awk '{printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}'
}
log "report --json --html, five times each, alternating"
rep1=(); rep2=(); cpu1=(); cpu2=(); mib1=(); mib2=()
for _ in 1 2 3 4 5; do
  for side in base new; do
    binary=$base; [[ $side == new ]] && binary=$new
    read -r s c m < <(measure "$binary" report --db "$work/$side/audit.db" --json "$work/$side/report.json" \
      --html "$work/$side/report.html" --quiet)
    if [[ $side == base ]]; then rep1+=("$s"); cpu1+=("$c"); mib1+=("$m")
    else rep2+=("$s"); cpu2+=("$c"); mib2+=("$m"); fi
  done
done
same_json=$(cmp -s "$work/base/report.json" "$work/new/report.json" && echo identical || echo DIFFERENT)
same_html=$(cmp -s "$work/base/report.html" "$work/new/report.html" && echo identical || echo DIFFERENT)

row() { printf '%-44s %9s %9s %8s %10s\n' "$@"; }
echo
echo "llmrepro storage bytes bench ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), scale $scale)"
echo "base: ${baseline:0:12}   new: $head"
echo "analysis audit: $analysis_tokens tokens; new = base's file upgraded in place ($upgrade_s: $upgraded)"
echo "reports of the analysis audit: JSON $same_json, HTML $same_html"
echo
row metric base new new/base target
for style in "${styles[@]}"; do
  read -r b_all b_blobs b_requests b_index b_texts b_other b_free <<<"${bpt_base[$style]}"
  read -r n_all n_blobs n_requests n_index n_texts n_other n_free <<<"${bpt_new[$style]}"
  row "bytes per token, $tokens tokens, $style" "$b_all" "$n_all" "$(ratio "$n_all" "$b_all")" '<= 16.0'
  row "  token blobs (packed_tokens)" "$b_blobs" "$n_blobs" "$(ratio "$n_blobs" "$b_blobs")" ''
  row "  request rows (requests)" "$b_requests" "$n_requests" "$(ratio "$n_requests" "$b_requests")" ''
  row "  plan-key index of requests" "$b_index" "$n_index" '' ''
  row "  token_texts and its index" "$b_texts" "$n_texts" '' ''
  row "  other tables" "$b_other" "$n_other" '' ''
  row "  free pages" "$b_free" "$n_free" '' ''
done
row "bytes per token, analysis audit" "$abpt_base" "$abpt_new" "$(ratio "$abpt_new" "$abpt_base")" '<= 16.0'
for style in "${styles[@]}"; do
  row "driver CPU ms per request, c=64, $style" "${cpu_base[$style]}" "${cpu_new[$style]}" \
    "$(ratio "${cpu_new[$style]}" "${cpu_base[$style]}")" '<= 1.05'
done
r1=$(min "${rep1[@]}"); r2=$(min "${rep2[@]}")
row "report --json --html s, analysis audit" "$r1" "$r2" "$(ratio "$r2" "$r1")" '<= 1.05'
k1=$(min "${cpu1[@]}"); k2=$(min "${cpu2[@]}")
row "report CPU s (user+sys)" "$k1" "$k2" "$(ratio "$k2" "$k1")" '<= 1.05'
m1=$(min "${mib1[@]}"); m2=$(min "${mib2[@]}")
row "report peak MiB" "$m1" "$m2" "$(ratio "$m2" "$m1")" '<= 1.05'
echo "bytes: the file per token; its parts: pages per token (dbstat; free: freelist pages)"
echo "driver CPU: best of five audits each; report: best of five"
echo "report s: ${rep1[*]} / ${rep2[*]}; CPU s: ${cpu1[*]} / ${cpu2[*]}"
