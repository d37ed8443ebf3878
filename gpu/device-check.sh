#!/usr/bin/env bash
# Device check for gpu-probe on a machine with an NVIDIA GPU, CMake, a C++ compiler and nvcc
# (no other packages, no network): builds the probe-only configuration with CUDA, runs the GPU
# tests (CTest label gpu) and `llmrepro-gpu-probe --backend cuda --quick`, and leaves the JSON
# report and logs in $OUT (default: <build>/out). Exits non-zero on any failure, including no
# visible device. Budget: under 5 minutes.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build-device-check}"
out="${OUT:-$build/out}"
mkdir -p "$out"
log="$out/device-check.log"
: > "$log"
started=$(date +%s)
say() { echo "device-check [$(( $(date +%s) - started ))s]: $*" | tee -a "$log"; }

say "repository $repo, build $build, output $out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || say "nvidia-smi unavailable"
nvcc --version > "$out/nvcc-version.txt" 2>&1 || { say "nvcc not found"; exit 3; }

generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
# Only the local GPU's architecture (sm_90 on H100/H200) keeps the build short.
say "configure"
cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DLLMREPRO_PROBE_ONLY=ON -DLLMREPRO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90-real}" \
  > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; say "configure failed"; exit 1; }
say "build"
cmake --build "$build" --parallel "$(nproc)" > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; say "build failed"; exit 1; }

helper="$build/cli/llmrepro-gpu-cuda"
set +e
"$helper" --check-device > "$out/device.txt" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
  cat "$out/device.txt" | tee -a "$log"
  say "no CUDA device visible (status $status)"
  exit 3
fi
say "device: $(cat "$out/device.txt")"

say "GPU tests"
ctest --test-dir "$build" -L gpu --output-on-failure --timeout 200 > "$out/ctest-gpu.log" 2>&1 ||
  { tail -40 "$out/ctest-gpu.log"; say "GPU tests failed"; exit 1; }
if grep -q "Skipped" "$out/ctest-gpu.log"; then say "GPU tests were skipped"; exit 1; fi
tail -4 "$out/ctest-gpu.log" | tee -a "$log"
# The gpu module's CPU unit tests too, where doctest happens to be installed.
ctest --test-dir "$build" -L unit -R "^gpu[.]" > "$out/ctest-unit.log" 2>&1 || { say "unit tests failed"; exit 1; }

say "gpu-probe --quick"
timeout 200 "$build/cli/llmrepro-gpu-probe" --backend cuda --dtype bf16 --quick \
  --json "$out/gpu-probe-quick-bf16.json" > "$out/gpu-probe-quick.txt" 2> "$out/gpu-probe-quick.err" ||
  { cat "$out/gpu-probe-quick.txt" "$out/gpu-probe-quick.err"; say "probe failed"; exit 1; }
cat "$out/gpu-probe-quick.txt" | tee -a "$log"
say "done"
