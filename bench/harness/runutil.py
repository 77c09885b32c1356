# SPDX-License-Identifier: MIT
"""What bench/pthreadpool/run.py and bench/cholesky/run.py share: their
aligned plain-text table, and their entry point (a failed run, an
executable's failed check or a timeout, is one line and exit status 1)."""

import subprocess
import sys


def print_table(title, rows):
    """rows[0] is the header; every cell a string."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print()
    print(title)
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(widths[k]) for k, cell in enumerate(row)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def run_main(main, name):
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("%s: FAILED: %s" % (name, e), file=sys.stderr)
        sys.exit(1)
