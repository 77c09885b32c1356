#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# meson setup DIR ARGS..., with --reconfigure when DIR already exists (a
# build directory kept between runs then takes the options given now).
# Used by scripts/test.sh, scripts/bench.sh and scripts/device.sh.
set -euo pipefail
dir=$1
shift
if [ -d "$dir" ]; then
  exec meson setup --reconfigure "$dir" "$@"
fi
exec meson setup "$dir" "$@"
