#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fails if the library needs libcuda (the driver) or the shared CUDA runtime
# at load time. The machine's LIBRARY_PATH may point at libcuda's stub, so a
# stray -lcuda would link silently; this catches it.
set -euo pipefail
lib=$1
needed=$(readelf -d "$lib" | awk '/NEEDED/ {print $NF}')
echo "$lib needs: $(echo $needed)"
if echo "$needed" | grep -Eq 'libcuda\.|libcudart\.'; then
  echo "FAIL: $lib has a load-time dependency on CUDA: $needed" >&2
  exit 1
fi
