#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers above the engine reach it through their doors alone.

src/graph reaches the engine through deps/ext.h and src/gpu through
deps/executor.h (docs/design.md, "Layout"); src/mpi through the public API.
Two checks:
  - includes: no src/graph, src/gpu or src/mpi file includes another
    header of src/deps;
  - fields: no function of theirs reads or writes a field of a struct that
    src/deps defines (an op block, a var, an engine, a request), but for
    the structs that a door hands over whole. Each translation unit of
    those folders (from the build's compile_commands.json) is parsed by
    clang, and every member access located in a file of theirs (their own
    inline functions included) is matched to the struct that declares the
    field.
Usage: check_seam.py SOURCE_ROOT BUILD_ROOT. Exit 0: held; 1: broken (each
offence printed); 77: no clang (skipped).
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

DOORS = {"src/graph/": {"deps/ext.h"}, "src/gpu/": {"deps/executor.h"}, "src/mpi/": set()}
# Structs of src/deps that a door hands over whole, so their fields are
# the interface's: the door headers' own, and the normalised var list that
# a recorded push comes with (ext.h, record).
HANDED_OVER = {"weft_push_sink", "weft_opr_ext_ops", "weft_exec_run", "weft_executor_ops",
               "weft_var_use"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(deps/[^"]+)"', re.M)


def layer_of(path):
    for folder in DOORS:
        if "/" + folder in "/" + path:
            return folder
    return None


def check_includes(root):
    bad = []
    for folder, allowed in DOORS.items():
        base = os.path.join(root, folder)
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                if not name.endswith((".c", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    if m.group(1) not in allowed:
                        line = text.count("\n", 0, m.start()) + 1
                        door = ", ".join(sorted(allowed)) or "the public API"
                        bad.append(f"{os.path.relpath(path, root)}:{line}: includes {m.group(1)} "
                                   f"(its door to the engine: {door})")
    return bad


def check_fields(root, build):
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    units = [e for e in commands if layer_of(e["file"]) and e["file"].endswith(".c")]
    bad = set()
    for e in units:
        args = shlex.split(e["command"]) if "command" in e else e["arguments"]
        keep = []
        for i, a in enumerate(args[1:], 1):
            if a in ("-I", "-D", "-isystem", "-include") and i + 1 < len(args):
                keep += [a, args[i + 1]]
            elif a.startswith(("-I", "-D", "-std", "-isystem", "-include")):
                keep.append(a)
        out = subprocess.run(["clang", "-fsyntax-only", "-w", "-Xclang", "-ast-dump=json"] + keep +
                             [e["file"]], cwd=e["directory"], capture_output=True, text=True)
        if out.returncode != 0:
            bad.add(f"{e['file']}: clang could not parse it: {out.stderr.strip()[:400]}")
            continue
        ast = json.loads(out.stdout)
        # clang's JSON names a location's file only where it changes from
        # the location before, in the order of the dump.
        where = {"file": None, "line": 0}

        def seen(loc):
            if not loc:
                return
            for key in ("spellingLoc", "expansionLoc"):
                if key in loc:
                    seen(loc[key])
            if "file" in loc:
                where["file"] = loc["file"]
            if "line" in loc:
                where["line"] = loc["line"]

        fields = {}
        stack = [(ast, None, None)]
        accesses = []
        while stack:
            node, record, record_file = stack.pop()
            seen(node.get("loc"))
            here, line = where["file"], where["line"]
            extent = node.get("range") or {}
            seen(extent.get("begin"))
            seen(extent.get("end"))
            kind = node.get("kind")
            if kind == "RecordDecl":
                record, record_file = node.get("name"), here
            elif kind == "FieldDecl":
                fields[node["id"]] = (record, node.get("name"), record_file)
            elif kind == "MemberExpr" and here and layer_of(here):
                accesses.append((node.get("referencedMemberDecl"), here, line))
            stack.extend((c, record, record_file) for c in reversed(node.get("inner", [])))
        for decl, here, line in accesses:
            if decl not in fields:
                continue
            record, name, record_file = fields[decl]
            if not record_file or "src/deps/" not in record_file or record in HANDED_OVER:
                continue
            path = os.path.relpath(os.path.normpath(os.path.join(e["directory"], here)), root)
            bad.add(f"{path}:{line}: reads or writes {record}.{name}, a field of "
                    f"{os.path.basename(record_file)} (through its door's functions only)")
    return sorted(bad), len(units)


def main():
    root, build = sys.argv[1], sys.argv[2]
    if not shutil.which("clang"):
        print("clang not found: skipped")
        return 77
    bad = check_includes(root)
    fbad, n = check_fields(root, build)
    bad += fbad
    for b in bad:
        print(b)
    if n == 0:
        print("no translation unit of src/graph, src/gpu or src/mpi in compile_commands.json")
        return 1
    print(f"{len(bad)} offences in {n} translation units")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
