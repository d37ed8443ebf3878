#!/usr/bin/env bash
# Fails on an upward or sideways include between modules, or a third-party header in a public
# header. The modules and what each may include are the table of DESIGN.md.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
  [core]="core"
  [probes]="core probes"
  [report]="core report"
  [gpu]="core gpu"
  [engine]="core engine"
)
status=0
for module in "${!allowed[@]}"; do
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$line")
    ok=0
    for permitted in ${allowed[$module]}; do [[ $target == "$permitted" ]] && ok=1; done
    if [[ $ok == 0 ]]; then
      echo "layering: $file includes $target/ (a $module file may include only: ${allowed[$module]})"
      status=1
    fi
  done < <(grep -rHE '^\s*#\s*include\s+"[a-z_]+/' "$module" --include='*.hpp' --include='*.cpp' --include='*.cu' --include='*.cuh' || true)
done

# Third-party headers stay out of public headers (pimpl the handles). A module's detail/ folder
# holds private headers shared by its own .cpp files only.
if grep -rnE '^\s*#\s*include\s*<(curl/|sqlite3|nlohmann/|httplib|CLI/|fmt/|cuda|cublas|doctest)' \
    core probes report gpu engine --include='*.hpp' --include='*.cuh' --exclude-dir=detail; then
  echo "layering: third-party header in a public header (above)"
  status=1
fi
# core uses the standard library only (fmt is allowed inside .cpp files).
if grep -rnE '^\s*#\s*include\s*<(curl/|sqlite3|nlohmann/|httplib|CLI/)' core; then
  echo "layering: core includes a third-party library (above)"
  status=1
fi
# A detail/ header is private to its module.
while IFS= read -r line; do
  file=${line%%:*}
  module=${file%%/*}
  header=$(sed -E 's/.*#include "([a-z_]+)\/detail\/.*/\1/' <<<"$line")
  if [[ $module != "$header" && ! $file =~ ^tests/unit/$header/ ]]; then
    echo "layering: $file includes a private header of $header/"
    status=1
  fi
done < <(grep -rHE '^\s*#\s*include\s+"[a-z_]+/detail/' core probes report gpu engine cli tests || true)
[[ $status == 0 ]] && echo "layering: ok"
exit $status
