#!/usr/bin/env bash
# The "Auditing llama.cpp" table of docs/dialects.md: upstream llama-server (scripts/build-llama-server.sh)
# serving the seeded random-weight llama of tests/e2e/llama_model.py as F32, F16 and Q8_0 at
# -np 8 (and F32 at -np 1), each audited with --api llamacpp, 12 text prompts x 5 runs x 32
# tokens at concurrency 1 and 8; prints, per level, how many noise samples moved and the largest.
#   bench/llama-cpp.sh [BUILD_DIR]      (default build; needs build/cli/llmrepro)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=$root/${1:-build}/cli/llmrepro
llama=$("$root/scripts/build-llama-server.sh")
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

python3 - "$work/suite.jsonl" <<'PY'
import json, sys
prompts = ["The quick brown fox", "Explain why the sky is blue.", "List three prime numbers:",
           "Write a haiku about the sea.", "Count from one to ten:", "Translate hello into German:",
           "Please answer the question in one short sentence.",
           "Our engine returns the log probability of every token.",
           "Describe a cat, a house and a tree.",
           "The weather today is sunny with a light wind from the west.",
           "Summarize the following text for a busy reader.", "What is the capital of France?"]
with open(sys.argv[1], "w") as f:
    for i, p in enumerate(prompts):
        f.write(json.dumps({"id": f"p{i}", "prompt": p}) + "\n")
PY

audit() { # weights slots levels
  local weights=$1 slots=$2 levels=$3 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  [[ -f $work/$weights.gguf ]] || /usr/bin/python3 "$root/tests/e2e/llama_model.py" --gguf-py "$llama/gguf-py" \
    --out "$work/$weights.gguf" --type "$weights" >/dev/null
  "$llama/llama-server" -m "$work/$weights.gguf" --host 127.0.0.1 --port "$port" -np "$slots" \
    -c $((512 * slots)) -t 2 >"$work/server.log" 2>&1 &
  local server=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  "$binary" audit --endpoint "http://127.0.0.1:$port" --api llamacpp --suite "$work/suite.jsonl" \
    --runs 5 --concurrency "$levels" --max-tokens 32 --db "$work/a.db" --json "$work/a.json" \
    --fail-on none --quiet >/dev/null 2>&1 || true
  kill "$server"; wait "$server" 2>/dev/null || true
  python3 - "$work/a.json" "$weights -np $slots" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))["summary"]
cells = [f"c={l['concurrency']}: {l['noise']['nonzero']} of {l['noise']['positions']} moved, "
         f"max {l['noise']['max']:.2g}" for l in summary["by_concurrency"]]
print(f"{sys.argv[2]:<12} unstable {summary['unstable_prompts']} of {summary['prompts']}, "
      f"failed {summary['failed_requests']}; " + "; ".join(cells))
PY
  rm -f "$work/a.db" "$work/a.json"
}

audit f32 8 1,8
audit f16 8 1,8
audit q8_0 8 1,8
audit f32 1 1
