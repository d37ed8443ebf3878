#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and audits the embedded reference
# engine on the demo suite, writing the reports under out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
echo "audit-demo: building llmrepro in build/ (a few minutes the first time)" >&2
# Only what the audit needs: the test command builds the rest. A unity build (eight sources a
# translation unit) with line tables only, as the test command builds: the shared headers' templates
# are compiled once per eight files instead of once per file (docs/building.md).
LLMREPRO_TARGETS=llmrepro scripts/build.sh build -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
mkdir -p out
exec build/cli/llmrepro audit --suite examples/suites/engine-demo.jsonl --runs 5 --concurrency 1,16 \
  --db out/demo-audit.db --overwrite --json out/demo-audit.json --html out/demo-audit.html "$@"
