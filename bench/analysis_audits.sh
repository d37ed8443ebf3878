# shellcheck shell=bash
# The analysis audits of bench/run.sh and bench/report_memory.sh, sourced by both (bash):
#   analysis_audits LLMREPRO RESPONDER WORK [SMALL]
# records 50 prompts x 50 runs x 256 tokens from RESPONDER (bench/responder, four variants of
# the completion, so there is drift) with LLMREPRO into WORK/base.db, then grows it in SQL:
#   WORK/x1.db  200 prompts x 50 runs (the base doubled twice; with SMALL=1, the 50 prompts)
#   WORK/x2.db, WORK/x4.db  twice and four times the prompts of x1 at the same runs
#   WORK/r2.db, WORK/r4.db  the prompts of x1 with twice and four times the runs
# Doubling copies prompts with their requests and packed tokens under new ids (the token texts
# are the audit's, so the copies name the same ids); doubling the runs copies every request under
# new repeat numbers.

source bench/double_audit.sh

analysis_audits() { # llmrepro responder work [small]
  local llmrepro=$1 responder=$2 work=$3 small=${4:-0} port pid
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$responder" "$port" 2 4 >"$work/responder.out" &
  pid=$!
  for _ in $(seq 100); do
    curl -sf -o /dev/null -X POST -d '{}' "http://127.0.0.1:$port/v1/chat/completions" && break
    sleep 0.05
  done
  python3 -c "
import json
for i in range(50):
    print(json.dumps({'id': f'p{i}', 'prompt': f'Bench prompt {i}'}))" >"$work/analysis-suite.jsonl"
  rm -f "$work/base.db"*
  # The verdict's exit code is not the bench's: drift fails a gate.
  "$llmrepro" audit --suite "$work/analysis-suite.jsonl" --endpoint "http://127.0.0.1:$port" \
    --api openai-chat --model bench-model --runs 50 --concurrency 64 --max-tokens 256 \
    --db "$work/base.db" --quiet || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
  if [[ $small != 1 ]]; then double "$work/base.db"; double "$work/base.db"; fi
  cp "$work/base.db" "$work/x1.db"
  cp "$work/base.db" "$work/r2.db"; double_runs "$work/r2.db"
  cp "$work/r2.db" "$work/r4.db"; double_runs "$work/r4.db"
  double "$work/base.db"
  cp "$work/base.db" "$work/x2.db"; double "$work/base.db"
  mv "$work/base.db" "$work/x4.db"
  rm -f "$work/base.db.lock"
}
