#!/usr/bin/env bash
# Device check for gpu-probe on a machine with an NVIDIA GPU, CMake, a C++ compiler and nvcc
# (no other packages, no network). Builds the CUDA backend, runs the GPU tests (CTest label
# gpu: device == host bit for bit for E0/E2/E4/E5/E6, the fixed-order kernel's batch
# invariance) and `gpu-probe --backend cuda --quick`, and leaves everything in $OUT (default
# <build>/out): probe.json, probe.html (only where the full build configures: the HTML renderer
# needs libfmt), logs, nvidia-smi and tool versions. Budget: under 5 minutes on an H200.
#
# DEVICE_CHECK_MODE=probe-only skips the full build; BUILD_DIR, OUT and CUDA_ARCH override
# the defaults.
# Exit codes: 0 all passed; 1 a build, test or probe step failed; 3 no CUDA device is visible
# (after a successful build) or nvcc is missing.
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
{
  nvidia-smi || echo "nvidia-smi unavailable"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv || true
} > "$out/nvidia-smi.txt" 2>&1
nvcc --version > "$out/versions.txt" 2>&1 || { say "nvcc not found"; exit 3; }
{ cmake --version; c++ --version; uname -a; } >> "$out/versions.txt" 2>&1 || true

generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
# Only the local GPU's architecture (sm_90 on H100/H200) keeps the build short.
arch=(-DLLMREPRO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90-real}")
# The full build (llmrepro itself, with the HTML report) where our packages are installed;
# else the probe-only build, which needs nothing beyond CMake, a compiler and CUDA.
# DEVICE_CHECK_MODE=probe-only skips the attempt at the full build.
mode=full
if [ "${DEVICE_CHECK_MODE:-auto}" = probe-only ]; then mode=probe-only; fi
if [ "$mode" = full ]; then say "configure (full)"; fi
if [ "$mode" = probe-only ] || ! cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${arch[@]}" \
     -DLLMREPRO_PROBE_ONLY=OFF > "$out/configure.log" 2>&1; then
  if [ "$mode" = full ]; then rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"; fi
  mode=probe-only
  say "configure (probe-only)"
  cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${arch[@]}" \
    -DLLMREPRO_PROBE_ONLY=ON > "$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; say "configure failed"; exit 1; }
fi
targets=(llmrepro-gpu-cuda llmrepro-gpu-device-tests llmrepro-gpu-probe)
if [ "$mode" = full ]; then targets+=(llmrepro); fi
say "build ${targets[*]}"
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}" > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; say "build failed"; exit 1; }

set +e
"$build/cli/llmrepro-gpu-cuda" --check-device > "$out/device.txt" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
  tee -a "$log" < "$out/device.txt"
  say "no CUDA device visible (status $status): exit 3"
  exit 3
fi
say "device: $(cat "$out/device.txt")"

say "GPU tests"
ctest --test-dir "$build" -L gpu --output-on-failure --timeout 240 > "$out/ctest-gpu.log" 2>&1 ||
  { tail -60 "$out/ctest-gpu.log"; say "GPU tests failed"; exit 1; }
if grep -q "Skipped" "$out/ctest-gpu.log"; then say "GPU tests were skipped"; exit 1; fi
tail -4 "$out/ctest-gpu.log" | tee -a "$log"

say "gpu-probe --quick"
if [ "$mode" = full ]; then
  probe=("$build/cli/llmrepro" gpu-probe --backend cuda --dtype bf16 --quick
         --json "$out/probe.json" --html "$out/probe.html")
else
  probe=("$build/cli/llmrepro-gpu-probe" --backend cuda --dtype bf16 --quick --json "$out/probe.json")
  say "probe-only build: no probe.html (render probe.json with a full build)"
fi
timeout 200 "${probe[@]}" > "$out/probe.txt" 2> "$out/probe.err" ||
  { cat "$out/probe.txt" "$out/probe.err"; say "probe failed"; exit 1; }
tee -a "$log" < "$out/probe.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv \
  >> "$out/nvidia-smi.txt" 2>&1 || true
say "done"
