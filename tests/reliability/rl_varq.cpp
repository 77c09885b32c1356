/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the dependency engine's var queues (src/deps/var_queue.c)
 * with an operator's registration (weft_push_opr, src/deps/push.c: all its
 * vars' spinlocks in index order, append, the wait counter starting at
 * nvars + 1 and dropped by granted + 1 with a store before the unlocks) and
 * completion (weft_opr_complete,
 * src/deps/dispatch.c: complete each var under its lock, then a decrement
 * of each granted operator's counter; the last decrement dispatches).
 *
 * Several threads push operators that read and write 2-3 shared vars. A
 * ready operator runs in the thread that made it ready, after that thread's
 * current push or completion (as weft_opr_ready's inline queue does for
 * WEFT_PROP_ASYNC operators; pool dispatch only adds a hand-off).
 *
 * Claimed segments (var_queue.h) are modelled too: a completion that grants
 * a simple write claims the requests waiting behind it, and that operator's
 * completion hands the var to the first of them without the lock when it is
 * a simple write (which it reads in its own request: next_sw, written with
 * the link; else gives the rest back under the lock). In a scenario,
 * "w0" / "r0" are simple requests, "W0" / "R0" not (a device or internal
 * operator's).
 *
 * A registration on many vars (more than WEFT_REGISTER_HOLD_VARS, push.c)
 * streams: once it holds every lock, it unlocks each var as soon as its
 * request is queued there, and settles its counter with one locked
 * decrement; a scenario marks such an operator with a leading "+". A
 * hand-over to an operator with a single var grants it with a store
 * (complete.c, take_grant).
 *
 * Checks: every operator runs exactly once; on each var, writes run in push
 * order and each read sees the value of the last write pushed before it
 * (each var carries a version, a plain rl::var, so an unordered access is
 * also a reported data race); no write overlaps a read or another write on
 * its var; at the end every queue is idle (nothing granted, nothing waiting).
 */
#include "rl_common.hpp"

namespace {

constexpr int kMaxVars = 3;
constexpr int kMaxOps = 8;

struct opr;

/* weft_var_req (var_queue.h) */
struct var_req {
  rl::var<var_req *> next;
  rl::var<bool> next_sw; /* next is a simple write: written with next */
  opr *op;
  bool write;
  bool simple;
  rl::var<var_req *> ahead; /* a holder's prefetch cursor into its segment */
  int writes_before; /* harness: writes pushed on the var before this request */
};

using weft_rl::spinlock;

/* weft_varq (var_queue.h) plus the var's data and the harness's checks */
struct varq {
  spinlock lock;
  rl::var<int> nreaders;
  rl::var<bool> writer;
  rl::var<var_req *> head, tail;
  rl::var<var_req *> ctail;
  rl::var<bool> head_sw;       /* head is a simple write */
  rl::var<int> writes_pushed;  /* harness, under lock */
  rl::var<int> version;        /* the var's contents: writes bump it */
  rl::atomic<int> active_reads, active_writes; /* harness: overlap checks */

  void init()
  {
    lock.init();
    nreaders($) = 0;
    writer($) = false;
    head($) = nullptr;
    tail($) = nullptr;
    ctail($) = nullptr;
    head_sw($) = false;
    writes_pushed($) = 0;
    version($) = 0;
    active_reads.store(0, rl::memory_order_relaxed);
    active_writes.store(0, rl::memory_order_relaxed);
  }

  /* weft_varq_append (var_queue.c) */
  bool append(var_req *r)
  {
    r->next($) = nullptr;
    r->next_sw($) = false;
    if (head($) == nullptr && !writer($) && (!r->write || nreaders($) == 0)) {
      if (r->write)
        writer($) = true;
      else
        nreaders($) = nreaders($) + 1;
      return true;
    }
    if (tail($)) {
      tail($)->next($) = r;
      tail($)->next_sw($) = r->simple && r->write;
    } else {
      head($) = r;
      head_sw($) = r->simple && r->write;
    }
    tail($) = r;
    return false;
  }

  /* weft_varq_complete (var_queue.c) */
  var_req *complete(bool write, bool claim)
  {
    if (write)
      writer($) = false;
    else
      nreaders($) = nreaders($) - 1;
    var_req *granted = nullptr, *last = nullptr;
    while (head($) && !writer($)) {
      var_req *r = head($);
      if (r->write && nreaders($) > 0)
        break;
      head($) = r->next($);
      head_sw($) = r->next_sw($);
      if (!head($))
        tail($) = nullptr;
      r->next($) = nullptr;
      if (last)
        last->next($) = r;
      else
        granted = r;
      last = r;
      if (r->write) {
        writer($) = true;
        if (claim && r->simple && head($)) { /* r's next links the segment */
          r->next($) = head($);
          r->ahead($) = nullptr;
          ctail($) = tail($);
          head($) = nullptr;
          tail($) = nullptr;
        }
        break;
      }
      nreaders($) = nreaders($) + 1;
    }
    return granted;
  }

  /* weft_varq_unclaim (var_queue.c) */
  void unclaim(var_req *r)
  {
    var_req *rest = r->next($);
    r->next($) = nullptr;
    ctail($)->next($) = head($);
    ctail($)->next_sw($) = head($) && head_sw($);
    if (!head($))
      tail($) = ctail($);
    head($) = rest;
    head_sw($) = r->next_sw($);
    ctail($) = nullptr;
  }

  bool idle() { return nreaders($) == 0 && !writer($) && head($) == nullptr; }
};

/* weft_opr: its vars (normalised: sorted by index, one entry each) */
struct opr {
  int nvars;
  bool stream; /* registers as an operator with many vars does */
  int var[kMaxVars];
  bool write[kMaxVars];
  var_req req[kMaxVars];
  rl::atomic<int> wait;
  rl::atomic<int> runs; /* harness */
};

/* An operator of a scenario: "w0 r1" = writes var 0, reads var 1. */
struct op_spec {
  int thread;
  const char *uses;
};

template <int THREADS, int NVARS, int NOPS>
struct varq_test : rl::test_suite<varq_test<THREADS, NVARS, NOPS>, THREADS> {
  static const op_spec *spec;
  varq q[NVARS];
  opr ops[NOPS];
  /* Each thread's ready operators, run after its current step (the
   * inline queue of dispatch.c). */
  opr *ready_list[THREADS][NOPS];
  int nready[THREADS];

  void before()
  {
    for (int v = 0; v < NVARS; v++)
      q[v].init();
    for (int i = 0; i < NOPS; i++) {
      opr &o = ops[i];
      o.nvars = 0;
      o.stream = spec[i].uses[0] == '+';
      for (const char *s = spec[i].uses; *s; s++) {
        if (*s != 'r' && *s != 'w' && *s != 'R' && *s != 'W')
          continue;
        o.write[o.nvars] = *s == 'w' || *s == 'W';
        o.req[o.nvars].simple = *s == 'r' || *s == 'w';
        o.var[o.nvars] = s[1] - '0';
        o.nvars++;
      }
      o.runs.store(0, rl::memory_order_relaxed);
    }
    for (int t = 0; t < THREADS; t++)
      nready[t] = 0;
  }

  void ready(unsigned self, opr *o) { ready_list[self][nready[self]++] = o; }

  /* weft_push_opr (push.c) */
  void push(unsigned self, opr *op)
  {
    int n = op->nvars;
    op->wait.store(n + 1, rl::memory_order_relaxed); /* atomic_init */
    if (WEFT_MUTANT != 3 || !op->stream) /* mutant 3: streams without holding every lock first */
      for (int k = 0; k < n; k++)
        q[op->var[k]].lock.lock();
    int granted = 0;
    if (op->stream) {
      for (int k = 0; k < n; k++) {
        varq &v = q[op->var[k]];
        if (WEFT_MUTANT == 3)
          v.lock.lock();
        op->req[k].op = op;
        op->req[k].write = op->write[k];
        op->req[k].writes_before = v.writes_pushed($); /* harness */
        if (op->write[k])
          v.writes_pushed($) = v.writes_pushed($) + 1;
        granted += v.append(&op->req[k]);
        v.lock.unlock();
      }
      if (op->wait.fetch_sub(granted + 1, rl::memory_order_acq_rel) == granted + 1)
        ready(self, op);
      return;
    }
    for (int k = 0; k < n; k++) {
      op->req[k].op = op;
      op->req[k].write = op->write[k];
      varq &v = q[op->var[k]];
      op->req[k].writes_before = v.writes_pushed($); /* harness */
      if (op->write[k])
        v.writes_pushed($) = v.writes_pushed($) + 1;
      granted += v.append(&op->req[k]);
    }
    /* the counter settled under every lock (no grant can reach it yet) */
    int left = op->wait.load(rl::memory_order_relaxed) - (granted + 1);
    if (WEFT_MUTANT == 2) { /* settled after the unlocks: a grant may come between */
      for (int k = n; k-- > 0;)
        q[op->var[k]].lock.unlock();
      op->wait.store(left, rl::memory_order_relaxed);
    } else {
      op->wait.store(left, rl::memory_order_relaxed);
      for (int k = n; k-- > 0;) /* unlock_vars */
        q[op->var[k]].lock.unlock();
    }
    if (left == 0)
      ready(self, op);
  }

  /* The operator's body: checks order and exclusion on each var. */
  void body(opr *op)
  {
    RL_ASSERT(op->runs.fetch_add(1, rl::memory_order_relaxed) == 0); /* exactly once */
    for (int k = 0; k < op->nvars; k++) {
      varq &v = q[op->var[k]];
      if (op->write[k]) {
        RL_ASSERT(v.active_writes.fetch_add(1, rl::memory_order_relaxed) == 0);
        RL_ASSERT(v.active_reads.load(rl::memory_order_relaxed) == 0);
      } else {
        RL_ASSERT(v.active_writes.load(rl::memory_order_relaxed) == 0);
        v.active_reads.fetch_add(1, rl::memory_order_relaxed);
      }
    }
    rl::yield(1, $); /* the body takes time: let others run meanwhile */
    for (int k = 0; k < op->nvars; k++) {
      varq &v = q[op->var[k]];
      /* the last write pushed before this request, and no later one */
      RL_ASSERT(v.version($) == op->req[k].writes_before);
      if (op->write[k]) {
        v.version($) = op->req[k].writes_before + 1;
        v.active_writes.fetch_sub(1, rl::memory_order_relaxed);
      } else {
        v.active_reads.fetch_sub(1, rl::memory_order_relaxed);
      }
    }
  }

  /* weft_opr_complete (dispatch.c), the var part */
  void complete(unsigned self, opr *op)
  {
    for (int k = 0; k < op->nvars; k++) {
      varq &v = q[op->var[k]];
      var_req *me = &op->req[k];
      var_req *g, *rest = nullptr;
      if (me->simple && me->write)
        rest = me->next($);
      /* mutant 1: hands the var to a claimed read as if it were a write */
      if (rest && (WEFT_MUTANT == 1 ? rest->simple : bool(me->next_sw($)))) {
        /* weft_varq_passable, then weft_varq_pass: no lock */
        /* weft_varq_pass: the cursor walks the segment's links (reads
         * only: nobody writes them while the segment lasts) */
        var_req *c = me->ahead($);
        me->next($) = nullptr;
        if (c == rest)
          c = nullptr;
        if (!c) {
          c = rest->next($);
          for (int i = 1; c && i < 4; i++) { /* over the run of simple writes */
            var_req *cn = c->next($);
            if (!cn || !c->next_sw($))
              break;
            c = cn;
          }
        } else if (c->next($)) {
          c = c->next($);
        }
        rest->ahead($) = c;
        opr *o = rest->op;
        /* take_grant: its only grant (mutant 4: the store grant for an
         * operator with other vars too) */
        if (WEFT_MUTANT == 4 ? o->nvars <= 2 : o->nvars == 1) {
          RL_ASSERT(o->wait.load(rl::memory_order_relaxed) >= 1);
          o->wait.store(0, rl::memory_order_relaxed);
          ready(self, o);
          continue;
        }
        g = rest;
      } else {
        v.lock.lock();
        if (rest)
          v.unclaim(me);
        g = v.complete(op->write[k], true);
        v.lock.unlock();
      }
      while (g) {
        var_req *gnext = nullptr; /* a write comes alone */
        if (!g->write)
          gnext = g->next($);
        opr *o = g->op;
        if (o->wait.fetch_sub(1, rl::memory_order_acq_rel) == 1)
          ready(self, o);
        g = gnext;
      }
    }
  }

  void run_ready(unsigned self)
  {
    while (nready[self] > 0) {
      opr *o = ready_list[self][--nready[self]];
      body(o);
      complete(self, o);
    }
  }

  void thread(unsigned self)
  {
    for (int i = 0; i < NOPS; i++) {
      if (spec[i].thread != (int)self)
        continue;
      push(self, &ops[i]);
      run_ready(self);
    }
  }

  void after()
  {
    for (int i = 0; i < NOPS; i++)
      RL_ASSERT(ops[i].runs.load(rl::memory_order_relaxed) == 1); /* nothing left pending */
    for (int v = 0; v < NVARS; v++) {
      RL_ASSERT(q[v].idle());
      RL_ASSERT(q[v].version($) == q[v].writes_pushed($));
    }
  }
};

/* Two threads, two vars: a write, reads, and an operator on both vars. */
const op_spec two_threads[] = {{0, "w0"}, {0, "r0 r1"}, {1, "r0 w1"}, {1, "w0 w1"}};
/* Three threads, three vars: readers and writers interleaved. */
const op_spec three_threads[] = {{0, "w0 r1"}, {1, "r0 w2"}, {2, "r1 r2"}, {0, "w1"}, {2, "r0"}};

/* Runs of writes on var 0 pushed from two threads, a non-simple write and
 * reads among them: segments are claimed, handed on and given back. */
const op_spec claims[] = {{0, "w0"}, {1, "w0"}, {1, "w0"}, {1, "r0"}, {0, "W0"}, {0, "w0 r1"}};

/* Streamed registrations on two vars from two threads, with operators on
 * one of them between; writes handed over to operators with one var and
 * with two. */
const op_spec streams[] = {{0, "+w0 w1"}, {1, "+w0 w1"}, {0, "w1"}, {1, "r0 w1"}, {0, "w0"}};
/* Three threads: var 0 handed over along a claimed segment to an operator
 * that also waits for var 1, held by a third thread's writer. */
const op_spec sole[] = {{0, "w0"}, {2, "w1"}, {1, "w0"}, {1, "w0 w1"}, {0, "w0"}};

using two_threads_test = varq_test<2, 2, 4>;
using streams_test = varq_test<2, 2, 5>;
template <> const op_spec *streams_test::spec = streams;
using sole_test = varq_test<3, 2, 5>;
template <> const op_spec *sole_test::spec = sole;
using claims_test = varq_test<2, 2, 6>;
template <> const op_spec *claims_test::spec = claims;
using three_threads_test = varq_test<3, 3, 5>;
template <> const op_spec *two_threads_test::spec = two_threads;
template <> const op_spec *three_threads_test::spec = three_threads;

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "a claimed read handed on as a write",
                                      "the pushed counter settled after the unlocks",
                                      "a streamed registration that never holds every lock",
                                      "a hand-over granted with a store to a two-var operator"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<two_threads_test>("varq 2 threads x 2 vars", 50000, 3, out);
  weft_rl::run_both<three_threads_test>("varq 3 threads x 3 vars", 50000, 2, out);
  weft_rl::run_both<claims_test>("varq claimed segments, 2 threads", 50000, 3, out);
  weft_rl::run_both<streams_test>("varq streamed registrations, 2 threads", 50000, 3, out);
  weft_rl::run_both<sole_test>("varq hand-overs to one- and two-var operators, 3 threads", 50000, 3, out);
  return weft_rl::finish("varq", names[WEFT_MUTANT], out);
}
