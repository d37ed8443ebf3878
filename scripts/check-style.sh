#!/usr/bin/env bash
# Fails where the sources drift from the conventions that can be checked by a machine:
#   - no source file over 800 lines (start a new file before one reaches it);
#   - every C++ and CUDA source laid out as .clang-format says (clang-format 14, Debian 12's).
# `scripts/check-style.sh --fix` applies the layout instead of checking it.
set -euo pipefail
cd "$(dirname "$0")/.."

max_lines=800
# Tracked sources, plus new ones not yet committed; never build trees. Outside a git checkout
# (an unpacked archive), every source below the module folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files --cached --others --exclude-standard \
    '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' | while read -r f; do [[ -f $f ]] && echo "$f"; done)
else
  mapfile -t sources < <(find core probes report engine gpu cli tests fuzz bench -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) | sort)
fi
if [[ ${#sources[@]} == 0 ]]; then
  echo "style: no sources found"
  exit 1
fi

status=0
for file in "${sources[@]}"; do
  lines=$(wc -l <"$file")
  if ((lines > max_lines)); then
    echo "style: $file has $lines lines (at most $max_lines: split it by concern)"
    status=1
  fi
done

format=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $format ]]; then
  echo "style: clang-format not found (scripts/install-deps.sh test installs it)"
  exit 1
fi
if [[ ${1:-} == --fix ]]; then
  "$format" -i "${sources[@]}"
  echo "style: layout applied to ${#sources[@]} files"
elif ! "$format" --dry-run --Werror "${sources[@]}" 2>/tmp/llmrepro-format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/llmrepro-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/style: not laid out as .clang-format says: /'
  echo "style: run scripts/check-style.sh --fix to apply the layout"
  status=1
fi
rm -f /tmp/llmrepro-format.$$
[[ $status == 0 ]] && echo "style: ok (${#sources[@]} files)"
exit $status
