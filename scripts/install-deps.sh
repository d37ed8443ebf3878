#!/usr/bin/env bash
# Installs what llmrepro needs from Debian 12's archive: `build` (default) to build, run and
# package (dpkg-dev's dpkg-shlibdeps computes the Debian package's Depends),
# `test` to run every test as well, `bench` for the benchmarks. Does nothing when all is there.
set -euo pipefail

build=(cmake ninja-build g++ pkg-config libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev
       libtomlplusplus-dev libfmt-dev libsqlite3-dev doctest-dev libcpp-httplib-dev
       ca-certificates dpkg-dev)
# groff and zsh check the generated man page and zsh completion; python3-yaml reads the CI
# examples; python3-numpy writes the llama.cpp scenario's GGUF model and xz-utils unpacks the
# llama.cpp source it builds.
test=(python3 python3-jsonschema python3-yaml sqlite3 chromium clang clang-format
      libclang-rt-14-dev groff-base zsh python3-numpy xz-utils)
bench=(wrk python3-aiohttp bc time)

packages=("${build[@]}")
for profile in "$@"; do
  case $profile in
    build) ;;
    test) packages+=("${test[@]}") ;;
    bench) packages+=("${test[@]}" "${bench[@]}") ;;
    *) echo "install-deps: unknown profile '$profile' (build, test or bench)" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$package")
done
[[ ${#missing[@]} == 0 ]] && exit 0

sudo=()
[[ $(id -u) != 0 ]] && sudo=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
