# What the benchmark scripts share, sourced from the repository root (`source bench/lib.sh`) by
# bench/run.sh, bench/storage.sh, bench/storage_bytes.sh and bench/driver.sh: optimised builds of
# the checkout and of a baseline commit, the responder, the suite, growing an audit in SQL, and
# the table's arithmetic.
# Reads LLMREPRO_JOBS (default: every CPU).

# A script's start: its scratch folder `work` (removed at exit, with every process whose id is in
# `pids` stopped), log() naming the script on stderr, and count() scaling a request count by
# LLMREPRO_BENCH_SCALE (`scale`, default 1).
bench_start() { # name
  bench_name=$1
  scale=${LLMREPRO_BENCH_SCALE:-1}
  work=$(mktemp -d "${TMPDIR:-/tmp}/llmrepro-$1.XXXXXX")
  pids=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
log() { printf '%s: %s\n' "$bench_name" "$*" >&2; }
count() { python3 -c "import sys; print(max(int(float(sys.argv[1]) * float(sys.argv[2])), 1))" "$1" "$scale"; }

bench_launcher=()
if command -v ccache >/dev/null; then
  bench_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# Builds llmrepro from source_dir into build_dir, optimised as the tested builds are: -O2 (GCC 12
# at -O3 raises false -Wrestrict warnings in report/), no CUDA, no tests.
bench_build() { # source_dir build_dir
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DLLMREPRO_CUDA=OFF -DLLMREPRO_TESTS=OFF "${bench_launcher[@]}" >/dev/null
  ninja -C "$2" -j "${LLMREPRO_JOBS:-$(nproc)}" llmrepro >/dev/null
}

# Builds commit `ref` in folder/build from a worktree of it at folder/src (bench/release_builds.sh's
# baseline_source); the binary is folder/build/cli/llmrepro.
bench_build_commit() { # ref folder
  bench_build "$(baseline_source "$PWD/$2" "$1")" "$PWD/$2/build"
}

# Compiles bench/responder.cpp into build-bench/bench/responder.
bench_build_responder() {
  mkdir -p build-bench/bench
  g++ -std=c++20 -O2 -pthread bench/responder.cpp -o build-bench/bench/responder
}

# The two builds a comparison measures: bench_base, LLMREPRO_BENCH_BASELINE_BINARY or commit
# `baseline` built in `folder`; bench_new, LLMREPRO_BENCH_BINARY or the checkout built in
# build-bench (`head` names it in the log). Then the responder. The caller defines log().
bench_binaries() { # baseline folder head
  if [[ -n ${LLMREPRO_BENCH_BASELINE_BINARY:-} ]]; then
    bench_base=$(realpath "$LLMREPRO_BENCH_BASELINE_BINARY")
  else
    log "building the baseline ${1:0:12} (Release) in $2"
    bench_build_commit "$1" "$2"
    bench_base=$PWD/$2/build/cli/llmrepro
  fi
  if [[ -n ${LLMREPRO_BENCH_BINARY:-} ]]; then
    bench_new=$(realpath "$LLMREPRO_BENCH_BINARY")
  else
    log "building $3 (Release) in build-bench"
    bench_build "$PWD" "$PWD/build-bench"
    bench_new=$PWD/build-bench/cli/llmrepro
  fi
  bench_build_responder
}

# The baseline commit in `baseline`: LLMREPRO_BENCH_BASELINE_REF, else the parent of the first
# commit whose store/audit_database.hpp (report/store/ before the move) gained `marker`, else
# `fallback` (none: an error). And `head`, the checkout's short hash (+changes where it is edited).
bench_baseline() { # marker [fallback]
  local ref=${LLMREPRO_BENCH_BASELINE_REF:-} introduced
  if [[ -z $ref ]]; then
    introduced=$(git log --format=%H -S "$1" -- store/audit_database.hpp \
      report/store/audit_database.hpp | tail -1)
    ref=${introduced:+$introduced^}
    ref=${ref:-${2:-}}
    [[ -n $ref ]] || { log "no commit adds '$1': give LLMREPRO_BENCH_BASELINE_REF"; exit 2; }
  fi
  baseline=$(git rev-parse --verify "$ref^{commit}")
  head=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo "+changes")
}

# A free loopback port in `port`, its URL in `url`.
bench_port() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  url="http://127.0.0.1:$port"
}

# Starts the responder `binary` on `port` with the arguments after the port (threads, variants,
# tokens, log probabilities: bench/responder.cpp) and waits until it answers.
start_responder() { # binary args...
  "$1" "$port" "${@:2}" >"$work/responder.out" &
  pids+=($!)
  for _ in $(seq 100); do
    curl -sf -o /dev/null -X POST -d '{}' "$url/v1/chat/completions" && return 0
    sleep 0.05
  done
  log "responder did not start"; exit 1
}
stop_responder() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }

# A suite of n prompts.
make_suite() { # n file
  python3 -c "
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({'id': f'p{i}', 'prompt': f'Bench prompt {i}'}))" "$1" >"$2"
}

source bench/double_audit.sh
source bench/release_builds.sh

# "<cpu ms per request>": user+sys of one audit of $work/suite.jsonl at concurrency 64 against
# $url (`bench/responder`) into db, over its successful requests.
audit_cpu() { # binary runs db max_tokens
  rm -f "$3"*
  /usr/bin/time -f '%U %S' -o "$work/time" "$1" audit --suite "$work/suite.jsonl" \
    --endpoint "$url" --api openai-chat --model bench-model --runs "$2" --concurrency 64 \
    --max-tokens "$4" --db "$3" --quiet || true # the verdict's exit code: drift fails a gate
  python3 - "$3" "$work/time" <<'PY'
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM requests WHERE ok = 1").fetchone()[0]
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
print(f"{1000 * (user + system) / n:.3f}")
PY
}

# a / b to two decimals ("inf" where b is 0).
ratio() { # a b
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else 'inf')" "$1" "$2"
}

# The smallest of the numbers given.
min() { printf '%s\n' "$@" | sort -g | head -1; }
