#!/usr/bin/env bash
# Fails on an upward or sideways include between modules, or a third-party header in a public
# header. The rooms and what each may include are the table of docs/design.md "Module map".
set -euo pipefail
cd "$(dirname "$0")/.."

# A room is a top-level folder: its name is its namespace and its target.
rooms=(numerics store core probes report gpu engine audit)
declare -A allowed=(
  [numerics]="numerics"
  [core]="core"
  [probes]="core probes"
  [store]="core store"
  [report]="core report"
  [gpu]="core numerics gpu"
  [engine]="core numerics engine"
  [audit]="core probes store engine audit"
)
# The kernels need nothing of the audit domain but its error type and its random source.
numerics_core_headers="core/result.hpp core/random.hpp"

room_of() {
  local path=$1 room
  for room in "${rooms[@]}"; do
    [[ $path == "$room"/* ]] && { echo "$room"; return; }
  done
  echo "${path%%/*}"
}

status=0
for room in "${rooms[@]}"; do
  while IFS= read -r line; do
    file=${line%%:*}
    [[ $(room_of "$file") == "$room" ]] || continue
    header=$(sed -E 's/.*#\s*include\s+"([^"]+)".*/\1/' <<<"$line")
    target=$(room_of "$header")
    ok=0
    for permitted in ${allowed[$room]}; do [[ $target == "$permitted" ]] && ok=1; done
    if [[ $room == numerics && $target == core ]]; then
      for permitted in $numerics_core_headers; do [[ $header == "$permitted" ]] && ok=1; done
    fi
    if [[ $ok == 0 ]]; then
      echo "layering: $file includes $header (a $room file may include only: ${allowed[$room]}$(
        [[ $room == numerics ]] && echo " $numerics_core_headers"))"
      status=1
    fi
  done < <(grep -rHE '^\s*#\s*include\s+"[a-z_]+/' "$room" --include='*.hpp' --include='*.cpp' \
    --include='*.cu' --include='*.cuh' 2>/dev/null || true)
done

# Third-party headers stay out of public headers (pimpl the handles). A room's detail/ folder
# holds private headers shared by its own .cpp files only.
if grep -rnE '^\s*#\s*include\s*<(curl/|sqlite3|nlohmann/|httplib|CLI/|fmt/|cuda|cublas|doctest)' \
    core numerics probes store report gpu engine audit --include='*.hpp' --include='*.cuh' --exclude-dir=detail; then
  echo "layering: third-party header in a public header (above)"
  status=1
fi
# core uses the standard library only (fmt is allowed inside .cpp files).
if grep -rnE '^\s*#\s*include\s*<(curl/|sqlite3|nlohmann/|httplib|CLI/)' core; then
  echo "layering: core includes a third-party library (above)"
  status=1
fi
# The audit procedure takes a request of plain values: no CLI11 type anywhere in audit/.
if grep -rnE '^\s*#\s*include\s*<(CLI/|toml)|CLI::' audit; then
  echo "layering: audit/ uses CLI11 or toml++ (above); cli/ alone parses flags"
  status=1
fi
# A detail/ header is private to its room (and to that room's unit tests).
while IFS= read -r line; do
  file=${line%%:*}
  header=$(sed -E 's/.*#\s*include\s+"([^"]+)\/detail\/.*/\1/' <<<"$line")
  if [[ $(room_of "$file") != $(room_of "$header/") && ! $file =~ ^tests/unit/ ]]; then
    echo "layering: $file includes a private header of $header/"
    status=1
  fi
done < <(grep -rHE '^\s*#\s*include\s+"[a-z_/]+/detail/' core numerics probes store report gpu engine audit cli tests || true)
[[ $status == 0 ]] && echo "layering: ok"
exit $status
