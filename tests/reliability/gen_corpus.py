#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_engine.c (tests/reliability/corpus/):
programs biased toward each feature of the decoder (see fz_decode), from a
fixed seed so that the corpus is reproducible. Usage: gen_corpus.py [DIR]"""
import os
import random
import sys

# Opcode bytes (fz_decode: byte % 16).
VAR_NEW, VAR_DELETE, OP_NEW, OP_PUSH, OP_DELETE, VAR_WAIT, WAIT_ALL, BAD, DESTROY = 0, 1, 7, 8, 9, 10, 11, 12, 13
PUSH = [2, 3, 4, 5, 6, 14, 15]


def ref(r, bad=0.1):
    if r.random() < bad:
        return r.choice([248, 240, 241, 243])  # NULL, forged handles
    return r.randrange(8) + 8 * r.randrange(20)


def op(r, out, fail=0.2, inside=0.05):
    nr, nw = r.randrange(5), r.randrange(4)
    out.append(nr + 5 * nw)
    for _ in range(nr + nw):
        out.append(ref(r))
    c = r.randrange(256)
    if r.random() >= fail:
        c = (c & ~7) | r.randrange(5)  # success
    if r.random() >= inside:
        c &= ~3 if (c & 3) == 3 else 0xFF
    out.append(c)


def program(r, n, weights):
    out = [r.randrange(256)]
    kinds = list(weights)
    for _ in range(n):
        k = r.choices(kinds, [weights[x] for x in kinds])[0]
        if k == 'push':
            out.append(r.choice(PUSH))
            op(r, out)
        elif k == 'var_new':
            out += [VAR_NEW, r.randrange(256)]
        elif k == 'var_delete':
            out += [VAR_DELETE, ref(r)]
        elif k == 'op_new':
            out += [OP_NEW, r.randrange(4)]
            op(r, out)
        elif k == 'op_push':
            out += [OP_PUSH, r.randrange(5)]
        elif k == 'op_delete':
            out += [OP_DELETE, r.randrange(5)]
        elif k == 'var_wait':
            out += [VAR_WAIT, ref(r)]
        elif k == 'wait_all':
            out.append(WAIT_ALL)
        elif k == 'bad':
            out += [BAD, r.randrange(256)]
    if r.random() < 0.3:
        out += [DESTROY, 0]
    return bytes(out)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus')
    os.makedirs(d, exist_ok=True)
    r = random.Random(20240613)
    base = dict(push=10, var_new=1, var_delete=1, op_new=1, op_push=2, op_delete=0.5,
                var_wait=1, wait_all=0.5, bad=0.5)
    focus = ['push', 'var_new', 'var_delete', 'op_new', 'op_push', 'var_wait', 'wait_all', 'bad']
    i = 0
    for f in focus:
        for n in (8, 30, 80):
            w = dict(base)
            w[f] = w[f] * 4 + 2
            open(os.path.join(d, 'seed-%02d-%s-%d' % (i, f, n)), 'wb').write(program(r, n, w))
            i += 1
    for n in (5, 20, 60, 120, 200, 300):
        for _ in range(2):
            open(os.path.join(d, 'seed-%02d-mixed-%d' % (i, n)), 'wb').write(program(r, n, base))
            i += 1


if __name__ == '__main__':
    main()
