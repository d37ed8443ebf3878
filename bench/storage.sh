#!/usr/bin/env bash
# Schema version 2 (packed tokens) against version 1 (a row per token), in one run on one machine:
# builds the last commit before version 2 (or LLMREPRO_BENCH_BASELINE_REF) into build-bench-v1 and
# the checkout into build-bench, then measures for both
#   1. driver CPU per request (user+sys of the whole audit) at concurrency 64 against
#      bench/responder, and the bytes per token of the databases recorded;
#   2. on one audit of 200 prompts x 50 runs x 256 tokens with identical content in both schemas:
#      bytes per token, `report --json --html` seconds and peak RSS, and the report against
#      reading the file once (`cat db > /dev/null`, the physical floor).
# The version 1 audit is recorded from the responder (50 prompts x 50 runs, four variants of the
# completion) and doubled twice in SQL, as bench/run.sh always did; the version 2 audit is that
# very file upgraded in place by the new build (`llmrepro report` on it) and VACUUMed into the
# version 2 page size, so both hold the same records and tokens. Prints one table of ratios and targets.
#   LLMREPRO_BENCH_BASELINE_REF  the version 1 commit (default: parent of the commit that set
#                                k_schema_version = 2)
#   LLMREPRO_BENCH_SCALE         multiplies the request counts (default 1; below 1 the analysis
#                                audit stays at 50 prompts)
#   LLMREPRO_BENCH_BINARY, LLMREPRO_BENCH_BASELINE_BINARY  optimised builds to use instead
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${LLMREPRO_JOBS:-$(nproc)}
# work (removed at exit), pids, log(), count(): bench/lib.sh
source bench/lib.sh
bench_start storage

ref=${LLMREPRO_BENCH_BASELINE_REF:-}
if [[ -z $ref ]]; then
  introduced=$(git log --format=%H -S 'k_schema_version = 2' -- report/store/audit_database.hpp | tail -1)
  [[ -n $introduced ]] || { log "no commit sets k_schema_version = 2: give LLMREPRO_BENCH_BASELINE_REF"; exit 2; }
  ref=$introduced^
fi
baseline=$(git rev-parse --verify "$ref^{commit}")
head=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")

source bench/release_builds.sh
if [[ -n ${LLMREPRO_BENCH_BASELINE_BINARY:-} ]]; then
  v1=$(realpath "$LLMREPRO_BENCH_BASELINE_BINARY")
else
  log "building version 1 at ${baseline:0:12} (Release) in build-bench-v1"
  release_build "$(baseline_source "$root/build-bench-v1" "$baseline")" "$root/build-bench-v1/build"
  v1=$root/build-bench-v1/build/cli/llmrepro
fi
if [[ -n ${LLMREPRO_BENCH_BINARY:-} ]]; then
  v2=$(realpath "$LLMREPRO_BENCH_BINARY")
else
  log "building $head (Release) in build-bench"
  release_build "$root" "$root/build-bench"
  v2=$root/build-bench/cli/llmrepro
fi
mkdir -p build-bench/bench
g++ -std=c++20 -O2 -pthread bench/responder.cpp -o build-bench/bench/responder

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$root/build-bench/bench/responder" "$port" 2 4 >"$work/responder.out" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf -o /dev/null -X POST -d '{}' "http://127.0.0.1:$port/v1/chat/completions" && break
  sleep 0.05
done
url="http://127.0.0.1:$port"

make_suite() { python3 -c "
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({'id': f'p{i}', 'prompt': f'Bench prompt {i}'}))" "$1" >"$2"; }
# Bytes of a database (its WAL too, should one be left) per token.
bytes_per_token() { # db tokens
  python3 -c "import os, sys; db = sys.argv[1]; size = sum(os.path.getsize(p) for p in (db, db + '-wal') if os.path.exists(p)); print(f'{size / int(sys.argv[2]):.1f}')" "$1" "$2"
}
v1_tokens() { sqlite3 "$1" 'SELECT COUNT(*) FROM tokens'; }
v2_tokens() { PYTHONPATH=tests/e2e python3 -c "import sqlite3, sys, token_blob; print(token_blob.token_count(sqlite3.connect(sys.argv[1])))" "$1"; }

# "<cpu ms per request>" of one audit at concurrency 64 into db.
audit_cpu() { # binary prompts runs db
  rm -f "$4"*
  /usr/bin/time -f '%U %S' -o "$work/time" "$1" audit --suite "$work/suite.jsonl" \
    --endpoint "$url" --api openai-chat --model bench-model --runs "$3" --concurrency 64 \
    --max-tokens 256 --db "$4" --quiet || true # the verdict's exit code: drift fails a gate
  python3 - "$4" "$work/time" <<'PY'
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM requests WHERE ok = 1").fetchone()[0]
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
print(f"{1000 * (user + system) / n:.3f}")
PY
}
min() { printf '%s\n' "$@" | sort -g | head -1; }

runs=$(count 40)
make_suite 64 "$work/suite.jsonl"
log "driver: 64 prompts x $runs runs at concurrency 64, three rounds alternating the builds"
cpu1=(); cpu2=()
for _ in 1 2 3; do
  cpu1+=("$(audit_cpu "$v1" 64 "$runs" "$work/drive-v1.db")")
  cpu2+=("$(audit_cpu "$v2" 64 "$runs" "$work/drive-v2.db")")
done
drive_bpt1=$(bytes_per_token "$work/drive-v1.db" "$(v1_tokens "$work/drive-v1.db")")
drive_bpt2=$(bytes_per_token "$work/drive-v2.db" "$(v2_tokens "$work/drive-v2.db")")

log "analysis audit: 50 prompts x 50 runs recorded by version 1, doubled in SQL"
make_suite 50 "$work/suite.jsonl"
rm -f "$work/v1.db"*
"$v1" audit --suite "$work/suite.jsonl" --endpoint "$url" --api openai-chat --model bench-model \
  --runs 50 --concurrency 64 --max-tokens 256 --db "$work/v1.db" --quiet || true
double() { # db
  sqlite3 "$1" <<'SQL'
BEGIN;
CREATE TEMP TABLE k AS SELECT (SELECT MAX(idx) + 1 FROM prompts) AS p, (SELECT MAX(id) FROM requests) AS r;
INSERT INTO prompts SELECT idx + (SELECT p FROM k), id || '-' || (SELECT p FROM k), text, messages,
  max_tokens, tags, expect, extract, response_format, source_line FROM prompts;
INSERT INTO requests SELECT id + (SELECT r FROM k), endpoint_index, prompt_index + (SELECT p FROM k),
  concurrency, probe, repeat, ok, http_status, error, attempts, started_ms, finished_ms, text,
  has_logprobs, finish_reason, system_fingerprint, model, completion_tokens, numbers_nan,
  numbers_infinity, numbers_negative_infinity, numbers_overflow, numbers_null, reasoning_text,
  reasoning_split, usage_prompt_tokens, usage_reasoning_tokens FROM requests;
INSERT INTO tokens SELECT request_id + (SELECT r FROM k), position, token, logprob, c1_token,
  c1_logprob, c2_token, c2_logprob, more FROM tokens;
COMMIT;
SQL
}
if python3 -c "import sys; sys.exit(float(sys.argv[1]) < 1)" "$scale"; then
  double "$work/v1.db"; double "$work/v1.db"
fi
sqlite3 "$work/v1.db" 'VACUUM'
cp "$work/v1.db" "$work/v2.db"
log "upgrading a copy in place with the new build"
/usr/bin/time -f '%e s' -o "$work/upgrade.time" "$v2" report --db "$work/v2.db" --quiet \
  >/dev/null 2>"$work/upgrade.err" || true
upgrade_s=$(tail -1 "$work/upgrade.time")
grep -q 'upgraded audit database' "$work/upgrade.err" || { cat "$work/upgrade.err" >&2; exit 1; }
# VACUUMed with the page size a new version 2 database gets (16 KiB; the upgrade keeps the file's
# 4 KiB pages), so that the file is what recording the same audit with the new build would write.
sqlite3 "$work/v2.db" 'PRAGMA journal_mode=DELETE; PRAGMA page_size=16384; VACUUM; PRAGMA journal_mode=WAL;' >/dev/null
tokens=$(v1_tokens "$work/v1.db")
bpt1=$(bytes_per_token "$work/v1.db" "$tokens")
bpt2=$(bytes_per_token "$work/v2.db" "$tokens")

measure() { # command...: "<seconds> <peak MiB>"
  /usr/bin/time -f '%e %M' -o "$work/m" "$@" >/dev/null || true
  # GNU time writes "Command exited with non-zero status N" first when the verdict fails a gate.
  tail -1 "$work/m" | awk '{printf "%.2f %.0f\n", $1, $2 / 1024}'
}
log "report and cat, twice each, alternating"
rep1=(); rep2=(); mib1=(); mib2=(); cat1=(); cat2=()
for _ in 1 2; do
  read -r s m < <(measure "$v1" report --db "$work/v1.db" --json "$work/v1.json" --html "$work/v1.html" --quiet)
  rep1+=("$s"); mib1+=("$m")
  read -r s m < <(measure "$v2" report --db "$work/v2.db" --json "$work/v2.json" --html "$work/v2.html" --quiet)
  rep2+=("$s"); mib2+=("$m")
  read -r s _ < <(measure sh -c "cat '$work/v1.db' > /dev/null"); cat1+=("$s")
  read -r s _ < <(measure sh -c "cat '$work/v2.db' > /dev/null"); cat2+=("$s")
done
scan1=$(measure sqlite3 "$work/v1.db" 'SELECT COUNT(*), SUM(length(token)), SUM(logprob), SUM(c1_logprob), SUM(c2_logprob), SUM(length(c2_token)) FROM tokens' | cut -d' ' -f1)
same=$(python3 - "$work/v1.json" "$work/v2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print("identical" if (a["summary"], a["prompts"]) == (b["summary"], b["prompts"]) else "DIFFERENT")
PY
)

ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else 'inf')" "$1" "$2"; }
c1=$(min "${cpu1[@]}"); c2=$(min "${cpu2[@]}")
r1=$(min "${rep1[@]}"); r2=$(min "${rep2[@]}")
k1=$(min "${cat1[@]}"); k2=$(min "${cat2[@]}")
m1=$(min "${mib1[@]}"); m2=$(min "${mib2[@]}")
prompts=$(sqlite3 "$work/v1.db" 'SELECT COUNT(*) FROM prompts')
echo
echo "llmrepro storage bench ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), scale $scale)"
echo "v1: ${baseline:0:12} (schema 1)   v2: $head (schema 2)"
echo "analysis audit: $prompts prompts x 50 runs, $tokens tokens; v2 = v1's file upgraded in place ($upgrade_s), reports $same"
echo
printf '%-36s %10s %10s %8s %8s\n' metric v1 v2 v2/v1 target
printf '%-36s %10s %10s %8s %8s\n' 'bytes per token (analysis audit)' "$bpt1" "$bpt2" "$(ratio "$bpt2" "$bpt1")" '<= 0.33'
printf '%-36s %10s %10s %8s %8s\n' 'bytes per token (recorded at c=64)' "$drive_bpt1" "$drive_bpt2" "$(ratio "$drive_bpt2" "$drive_bpt1")" '<= 0.33'
printf '%-36s %10s %10s %8s %8s\n' 'report --json --html s' "$r1" "$r2" "$(ratio "$r2" "$r1")" '<= 0.33'
printf '%-36s %10s %10s %8s %8s\n' 'report peak MiB' "$m1" "$m2" "$(ratio "$m2" "$m1")" ''
printf '%-36s %10s %10s %8s %8s\n' 'driver CPU ms per request, c=64' "$c1" "$c2" "$(ratio "$c2" "$c1")" '<= 0.50'
printf '%-36s %10s %10s %8s %8s\n' 'cat db > /dev/null s' "$k1" "$k2" '' ''
printf '%-36s %10s %10s %8s %8s\n' 'report / cat db' "$(ratio "$r1" "$k1")" "$(ratio "$r2" "$k2")" '' ''
printf '%-36s %10s %10s %8s %8s\n' 'report / SQL scan of the v1 rows' "$(ratio "$r1" "$scan1")" "$(ratio "$r2" "$scan1")" '' ''
echo "driver CPU: best of three audits each (${cpu1[*]} / ${cpu2[*]} ms); report, cat: best of two"
