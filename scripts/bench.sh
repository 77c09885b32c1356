#!/usr/bin/env bash
# The bench suite: installs what is missing (weft's build and the peers),
# configures, builds and runs bench/run.py with the given arguments
# (--quick for the quick mode; see bench/run.py for the others).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh bench
builddir=build-bench
if [ -d "$builddir" ]; then
  meson setup --reconfigure "$builddir" -Dtests=disabled -Dbench=true >/dev/null
else
  meson setup "$builddir" -Dtests=disabled -Dbench=true >/dev/null
fi
ninja -C "$builddir" >/dev/null
exec python3 bench/run.py --builddir "$builddir" "$@"
