#!/usr/bin/env bash
# Builds upstream llama.cpp's `llama-server` from a source tarball, once, for the end-to-end
# scenario against a real inference server (tests/e2e/test_llama_cpp.py), and prints the
# directory that holds it: DIR/llama-server and DIR/gguf-py (the tarball's GGUF writer).
#
#   scripts/build-llama-server.sh [TARBALL]
#
# TARBALL defaults to $LLMREPRO_LLAMA_TARBALL, else the first llama.cpp-*.tar.xz in
# ../shared/thirdparty/ beside the checkout. The build lives outside the clone, in
# ${XDG_CACHE_HOME:-~/.cache}/llmrepro/llama.cpp-<sha256 of the tarball>/, so every clone and
# every CI run on a machine reuses it; a lock keeps two runs from building it at once. Exit 3
# (and one line on stderr) when there is no tarball: the caller skips, naming why.
#
# The flags are the portable recipe (no -march=native: these virtual machines advertise CPU
# features a process may not use), a static binary (no libllama.so to find at run time), and the
# build number and commit that make `/props` build_info name the source.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

tarball=${1:-${LLMREPRO_LLAMA_TARBALL:-}}
if [[ -z $tarball ]]; then
  tarball=$(ls "$root"/../shared/thirdparty/llama.cpp-*.tar.xz 2>/dev/null | head -n 1 || true)
fi
if [[ -z $tarball || ! -f $tarball ]]; then
  echo "build-llama-server: no llama.cpp source tarball (set LLMREPRO_LLAMA_TARBALL)" >&2
  exit 3
fi

hash=$(sha256sum "$tarball" | cut -c1-64)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/llmrepro/llama.cpp-$hash
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [[ -x $cache/llama-server && -d $cache/gguf-py ]]; then
  echo "$cache"
  exit 0
fi

# The tarball's commit, from its name (llama.cpp-<commit>.tar.xz), for build_info.
commit=$(basename "$tarball" .tar.xz)
commit=${commit#llama.cpp-}
build_number=${LLMREPRO_LLAMA_BUILD_NUMBER:-10470}

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-llama-server: building llama-server from $(basename "$tarball") in $cache" \
  "(about 6 minutes on 2 idle cores, once)" >&2
tar -xJf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_NUMBER="$build_number" -DLLAMA_BUILD_COMMIT="$commit" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j "${LLMREPRO_JOBS:-$(nproc)}" --target llama-server \
  >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }
rm -rf "$cache/gguf-py"
cp -r "$src/gguf-py" "$cache/gguf-py"
cp "$src/LICENSE" "$cache/LICENSE"
# The binary last: its presence says the cache is complete.
install -m 755 "$work/build/bin/llama-server" "$cache/llama-server.partial"
mv "$cache/llama-server.partial" "$cache/llama-server"
echo "$cache"
