#!/usr/bin/env bash
# Fetches NVRTC (CUDA 11.8, Debian bookworm's non-free section) into DIR without installing anything, so that the
# CUDA kernels can be compiled for sm_80/sm_90 on a machine with no GPU and no CUDA: the compile test of
# backend/cuda (TestKernelsCompile) then runs instead of skipping. Prints the environment to export.
#
#   eval "$(scripts/fetch-nvrtc.sh .nvrtc)"
#   go test -run KernelsCompile ./backend/cuda/
set -euo pipefail
dir=${1:?usage: fetch-nvrtc.sh DIR}
mkdir -p "$dir" && dir=$(cd "$dir" && pwd) # absolute: go test runs each test binary in its package folder
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/sources" "$dir/root"
cat >"$dir/apt/sources/non-free.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
opts=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$dir/apt/sources"
	-o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update -qq >&2
(cd "$dir" && apt-get "${opts[@]}" download libnvrtc11.2 libnvrtc-builtins11.8 >&2)
for deb in "$dir"/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
lib="$dir/root/usr/lib/x86_64-linux-gnu"
test -e "$lib/libnvrtc.so.11.2"
echo "export GEOVB_LIBNVRTC=$lib/libnvrtc.so.11.2"
echo "export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
