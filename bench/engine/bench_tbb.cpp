/* SPDX-License-Identifier: MIT */
/*
 * bench_tbb: the bench workloads (harness.h) on oneTBB, the peer for weft.
 *
 *   bench_tbb --workload W --threads N --reps R [--quick]
 *
 * --threads N: tbb::task_arena arena(N) (one slot reserved for the calling
 * thread, N-1 workers) and everything timed runs inside arena.execute, so N
 * threads compute; a global_control caps TBB at N threads in all.
 * fib: tbb::task_group per call (run fib(n-1), fib(n-2) inline, wait).
 * pfor: tbb::parallel_for over a blocked_range with the default
 * auto_partitioner. idle: the burst runs in arena.execute.
 * wake: arena.enqueue from main, a thread outside the arena; that arena is
 * task_arena(N, 0) (no slot reserved for main) and global_control allows
 * N + 1 threads, so N TBB workers serve it, like N weft workers.
 * chain, indep, dag, wave (harness.h, op lists): a tbb::flow::graph with one
 *   continue_node per op and explicit edges computed from the op list, the
 *   way a dependency engine would track them: for each var the last writer
 *   and the readers since; an op that writes v gets edges from v's readers
 *   since its last write (or, with none, from the last writer), an op that
 *   reads v an edge from v's last writer; duplicate edges are merged. The
 *   graph is built in list order, then every op without predecessors gets a
 *   try_put, then wait_for_all. All inside arena.execute (N threads).
 *   TIMED: from the first node's construction (dependency tracking and graph
 *   construction are the equivalent of an engine's push) to wait_for_all's
 *   return. NOT timed: destroying the graph (reported as "teardown_ns_per_op").
 *   The edges must all exist before the first try_put (an edge from a node
 *   that already ran would never fire), so construction and execution do not
 *   overlap, unlike the push-as-you-go engines. Node policy: the default
 *   (queueing; each ready node spawns a task).
 *   replay (metric "<workload>_replay", its own JSON line): the same graph
 *   built ONCE inside the arena (not timed: "build_ns_per_op"), then each
 *   repetition (the same warm-up, check and time budget) is a try_put to
 *   every source node + wait_for_all, inside arena.execute. TIMED: from the
 *   first try_put to wait_for_all's return. continue_nodes reset their
 *   signal counts after firing, so the graph may run again; every
 *   repetition's values are checked as for the other series.
 *   "fresh_samples": the construction-timed series of the same run.
 * graph_dag, graph_grid, graph_tree (harness.h): a flow graph, continue_node
 *   per node, make_edge per edge, built and run once and reused (the "graph
 *   shapes" section below). fanout: task_group::run of every task from main,
 *   then wait (the "fanout" section below).
 * pipeline (harness.h): the static variant as a flow graph with the edges
 *   the 2 slots a stage imply; pipe_alloc / pipe_bp with parallel_pipeline
 *   (serial_in_order filters) and a token limit of the item count / of
 *   BENCH_PIPE_TOKENS. Inside arena.execute.
 */
#include "harness.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

static const char RT[] = "tbb";

static uint64_t fib(int n) {
  if (n < 2)
    return (uint64_t)n;
  uint64_t x = 0, y;
  tbb::task_group g;
  g.run([&x, n] { x = fib(n - 1); });
  y = fib(n - 2);
  g.wait();
  return x + y;
}

static uint64_t run_imb(size_t begin) {
  std::atomic<uint64_t> sum{0};
  tbb::parallel_for(tbb::blocked_range<size_t>(begin, BENCH_IMB_N),
                    [&sum](const tbb::blocked_range<size_t> &r) {
                      sum.fetch_add(bench_imb_range(r.begin(), r.end()),
                                    std::memory_order_relaxed);
                    });
  return sum.load();
}

static void run_fine(uint32_t *out, uint32_t seed) {
  tbb::parallel_for(tbb::blocked_range<size_t>(0, BENCH_FINE_N),
                    [out, seed](const tbb::blocked_range<size_t> &r) {
                      bench_fine_range(out, r.begin(), r.end(), seed);
                    });
}

struct burst_ctx {
  tbb::task_arena *arena;
  uint32_t *out;
  int round;
};

static void burst(void *p) {
  burst_ctx *b = static_cast<burst_ctx *>(p);
  b->arena->execute([b] {
    for (int k = 0; k < 5; k++) {
      bench_check_u64("burst fib", fib(BENCH_BURST_FIB_N), BENCH_BURST_FIB_RESULT);
      uint32_t seed = bench_fine_seed(b->round++);
      run_fine(b->out, seed);
      if (bench_fine_check(b->out, seed))
        bench_fail("burst pfor_fine: wrong slots");
    }
  });
}

static int submit(void *ctx, bench_task_fn fn, void *arg) {
  static_cast<tbb::task_arena *>(ctx)->enqueue([fn, arg] { fn(arg); });
  return 0;
}

/* ------------------------------------------------------------ op lists */

namespace {

using tbb::flow::continue_msg;
using dep_node = tbb::flow::continue_node<continue_msg>;
constexpr uint32_t NONE = UINT32_MAX;

struct dep_ctx {
  tbb::task_arena *arena;
  double teardown_ns = 0; /* the last repetition's graph destruction, ns/op */
};

/* Adds one continue_node per op of L to g, in list order (body(i): op i's
 * node body), with the edges the list implies (see the top), and collects
 * the ops without predecessors in sources. */
template <class Body>
void build_dep_graph(tbb::flow::graph &g, std::deque<dep_node> &nodes,
                     std::vector<uint32_t> &sources, const bench_oplist *L, Body body) {
  const bench_op *ops = L->ops;
  const size_t nops = L->nops;
  std::vector<uint32_t> last_writer(L->nvars, NONE);
  std::vector<std::vector<uint32_t>> readers(L->nvars);
  std::vector<uint32_t> preds;
  for (size_t i = 0; i < nops; i++) {
    const bench_op &o = ops[i];
    nodes.emplace_back(g, body(i));
    dep_node &me = nodes.back();
    preds.clear();
    auto add = [&](uint32_t p) {
      for (uint32_t q : preds) /* a handful at most: a linear scan */
        if (q == p)
          return;
      preds.push_back(p);
      tbb::flow::make_edge(nodes[p], me);
    };
    /* reads: after the var's last writer */
    for (uint32_t k = 0; k < o.nr; k++)
      if (last_writer[o.r[k]] != NONE)
        add(last_writer[o.r[k]]);
    /* the write: after the readers since the var's last write, else after
     * that writer (the readers themselves come after it) */
    std::vector<uint32_t> &rd = readers[o.w];
    if (!rd.empty()) {
      for (uint32_t p : rd)
        add(p);
      rd.clear();
    } else if (last_writer[o.w] != NONE) {
      add(last_writer[o.w]);
    }
    last_writer[o.w] = (uint32_t)i;
    for (uint32_t k = 0; k < o.nr; k++)
      readers[o.r[k]].push_back((uint32_t)i);
    if (preds.empty())
      sources.push_back((uint32_t)i);
  }
}

/* One repetition inside the arena; returns the timed region's length. */
uint64_t dep_rep_in_arena(dep_ctx *c, const bench_oplist *L, bench_slot *vals) {
  const bench_op *ops = L->ops;
  const size_t nops = L->nops;
  uint64_t t0, t1;
  {
    t0 = bench_now_ns();
    tbb::flow::graph g;
    std::deque<dep_node> nodes; /* nodes never move once built */
    std::vector<uint32_t> sources;
    build_dep_graph(g, nodes, sources, L, [vals, ops](size_t i) {
      return [vals, ops, i](const continue_msg &) {
        bench_op_exec(vals, ops, i);
        return continue_msg();
      };
    });
    for (uint32_t i : sources)
      nodes[i].try_put(continue_msg());
    g.wait_for_all();
    t1 = bench_now_ns();
  } /* nodes, then the graph, destroyed here */
  c->teardown_ns = (double)(bench_now_ns() - t1) / (double)nops;
  return t1 - t0;
}

uint64_t dep_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  dep_ctx *c = static_cast<dep_ctx *>(ctx);
  uint64_t ns = 0;
  c->arena->execute([&] { ns = dep_rep_in_arena(c, L, vals); });
  return ns;
}

/* replay: the same graph built once (inside the arena, not timed) and run
 * again by every repetition. A continue_node's count of signals received
 * goes back to 0 each time it fires, so a second try_put to the sources runs
 * every node once more, in the same order. The nodes run on the current
 * repetition's values (vals, set before each run). */
struct replay_graph {
  tbb::flow::graph g;         /* declared first: destroyed after the nodes */
  std::deque<dep_node> nodes; /* nodes never move once built */
  std::vector<uint32_t> sources;
  bench_slot *vals = nullptr;
  tbb::task_arena *arena = nullptr;
  double build_ns = 0; /* construction, ns/op (not timed) */
};

void replay_build(replay_graph *r, const bench_oplist *L) {
  uint64_t t0 = bench_now_ns();
  const bench_op *ops = L->ops;
  build_dep_graph(r->g, r->nodes, r->sources, L, [r, ops](size_t i) {
    return [r, ops, i](const continue_msg &) {
      bench_op_exec(r->vals, ops, i);
      return continue_msg();
    };
  });
  r->build_ns = (double)(bench_now_ns() - t0) / (double)L->nops;
}

/* One repetition: try_put to the sources + wait_for_all, inside the arena. */
uint64_t replay_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  (void)L;
  replay_graph *r = static_cast<replay_graph *>(ctx);
  r->vals = vals;
  uint64_t ns = 0;
  r->arena->execute([&] {
    uint64_t t0 = bench_now_ns();
    for (uint32_t i : r->sources)
      r->nodes[i].try_put(continue_msg());
    r->g.wait_for_all();
    ns = bench_now_ns() - t0;
  });
  return ns;
}

/* -------------------------------------------------------- graph shapes */

/* graph_dag, graph_grid, graph_tree (harness.h, "graph shapes"): a flow
 * graph, one continue_node per node (body: bench_gnode_exec on its index)
 * and a make_edge per edge, built in node order; then a try_put to every
 * source node and wait_for_all. All inside arena.execute (N threads, main
 * one of them).
 *   "<shape>"           built and run once: TIMED from the first node's
 *                       construction to wait_for_all's return (teardown
 *                       after it, not timed: "teardown_ns_per_node").
 *   "<shape>_relaunch"  the graph built once (not timed), run
 *                       GRAPH_WARM_RUNS times untimed (as weft's warm
 *                       launches), then each repetition try_put to the
 *                       sources + wait_for_all, TIMED (continue_nodes reset
 *                       their counts after firing, so the graph runs again).
 * The two modes' repetitions alternate (bench_graph_time). */
constexpr int GRAPH_WARM_RUNS = 8;

struct shape_ctx {
  tbb::task_arena *arena;
  double teardown_ns = 0;
};

template <class Body>
void build_shape(tbb::flow::graph &g, std::deque<dep_node> &nodes, const bench_gshape *G,
                 Body body) {
  for (size_t i = 0; i < G->n; i++) {
    nodes.emplace_back(g, body(i));
    dep_node &me = nodes.back();
    for (uint32_t k = G->pred0[i]; k < G->pred0[i + 1]; k++)
      tbb::flow::make_edge(nodes[G->pred[k]], me);
  }
}

uint64_t shape_once_rep(void *ctx, const bench_gshape *G, bench_gslot *s) {
  shape_ctx *c = static_cast<shape_ctx *>(ctx);
  uint64_t ns = 0;
  c->arena->execute([&] {
    uint64_t t0 = bench_now_ns(), t1;
    {
      tbb::flow::graph g;
      std::deque<dep_node> nodes; /* nodes never move once built */
      build_shape(g, nodes, G, [G, s](size_t i) {
        return [G, s, i](const continue_msg &) {
          bench_gnode_exec(G, s, i);
          return continue_msg();
        };
      });
      for (size_t j = 0; j < G->nsources; j++)
        nodes[G->sources[j]].try_put(continue_msg());
      g.wait_for_all();
      t1 = bench_now_ns();
    } /* nodes, then the graph, destroyed here */
    c->teardown_ns = (double)(bench_now_ns() - t1) / (double)G->n;
    ns = t1 - t0;
  });
  return ns;
}

struct shape_reused {
  tbb::flow::graph g;         /* declared first: destroyed after the nodes */
  std::deque<dep_node> nodes; /* nodes never move once built */
  bench_gslot *s = nullptr;   /* the current repetition's slots */
  tbb::task_arena *arena = nullptr;
  double build_ns = 0;
};

uint64_t shape_relaunch_rep(void *ctx, const bench_gshape *G, bench_gslot *s) {
  shape_reused *r = static_cast<shape_reused *>(ctx);
  r->s = s;
  uint64_t ns = 0;
  r->arena->execute([&] {
    uint64_t t0 = bench_now_ns();
    for (size_t j = 0; j < G->nsources; j++)
      r->nodes[G->sources[j]].try_put(continue_msg());
    r->g.wait_for_all();
    ns = bench_now_ns() - t0;
  });
  return ns;
}

void bench_shape(const bench_args *a, tbb::task_arena &arena) {
  bench_gshape G;
  bench_gshape_make(&G, a->workload);
  bench_gslot *s = bench_gslots_alloc(G.n);
  std::string relaunch_metric = std::string(G.workload) + "_relaunch";
  shape_ctx once;
  once.arena = &arena;
  arena.execute([&] {
    shape_reused r;
    r.arena = &arena;
    uint64_t t0 = bench_now_ns();
    build_shape(r.g, r.nodes, &G, [&r, &G](size_t i) {
      return [&r, &G, i](const continue_msg &) {
        bench_gnode_exec(&G, r.s, i);
        return continue_msg();
      };
    });
    r.build_ns = (double)(bench_now_ns() - t0) / (double)G.n;
    for (int w = 0; w < GRAPH_WARM_RUNS && !bench_failed(); w++) {
      bench_gslots_reset(&G, s);
      (void)shape_relaunch_rep(&r, &G, s);
      bench_gshape_verify(&G, s, RT, relaunch_metric.c_str());
    }
    bench_graph_mode modes[2] = {{G.workload, shape_once_rep, &once, {}},
                                 {relaunch_metric.c_str(), shape_relaunch_rep, &r, {}}};
    if (!bench_failed())
      bench_graph_time(RT, a, &G, s, modes, 2);
    else
      for (auto &m : modes)
        bench_series_init(&m.s, 1);
    char extra[512];
    std::snprintf(extra, sizeof extra,
                  ",\"push\":\"flow graph, continue_node per node, make_edge per edge; "
                  "construction timed\",\"teardown_ns_per_node\":%.1f",
                  once.teardown_ns);
    bench_graph_emit(RT, a, &G, &modes[0], extra);
    std::snprintf(extra, sizeof extra,
                  ",\"push\":\"the flow graph built once (not timed: build_ns_per_node), run "
                  "%d times untimed, then try_put to the sources + wait_for_all\","
                  "\"build_ns_per_node\":%.1f",
                  GRAPH_WARM_RUNS, r.build_ns);
    bench_graph_emit(RT, a, &G, &modes[1], extra);
  }); /* r destroyed inside the arena */
  std::free(s);
  bench_gshape_free(&G);
}

/* ---------------------------------------------------------------- fanout */

/* fanout (harness.h): main, in the arena's reserved slot of a
 * task_arena(N + 1, 1) (global_control N + 1), runs every task with one
 * tbb::task_group's run, then wait (it runs tasks meanwhile): N workers +
 * main, as weft's. TIMED: from the first run to wait's return. */
uint64_t fanout_rep(void *ctx, uint32_t *slots, uint32_t seed) {
  tbb::task_arena *arena = static_cast<tbb::task_arena *>(ctx);
  uint64_t ns = 0;
  arena->execute([&] {
    tbb::task_group tg;
    uint64_t t0 = bench_now_ns();
    for (size_t k = 0; k < BENCH_FANOUT_TASKS; k++)
      tg.run([slots, seed, k] { bench_fanout_task(slots, k, seed); });
    tg.wait();
    ns = bench_now_ns() - t0;
  });
  return ns;
}

/* ------------------------------------------------------------ pipeline */

/* pipeline (static slots): a flow graph, one continue_node per (item,
 * stage), with the edges the slots imply: stage s of item k after stage s-1
 * of item k (its input), after stage s of item k-1 (a stage is an actor: one
 * item at a time, in order) and after stage s+1 of item k-2 (which read the
 * slot k%2 that stage s is about to overwrite). Built and run inside the
 * arena; construction timed, teardown not. */
uint64_t pipe_static(bench_pipe *P) {
  const size_t n = P->items;
  uint64_t t0 = bench_now_ns(), t1;
  {
    tbb::flow::graph g;
    std::deque<dep_node> nodes; /* node (k, s) at 4k + s */
    for (size_t k = 0; k < n; k++)
      for (int s = 0; s < 4; s++) {
        nodes.emplace_back(g, [P, s, k](const continue_msg &) {
          bench_pipe_stage(P, s, k);
          return continue_msg();
        });
        dep_node &me = nodes.back();
        if (s > 0)
          tbb::flow::make_edge(nodes[4 * k + s - 1], me);
        if (k > 0)
          tbb::flow::make_edge(nodes[4 * (k - 1) + s], me);
        if (k > 1 && s < 3)
          tbb::flow::make_edge(nodes[4 * (k - 2) + s + 1], me);
      }
    nodes[0].try_put(continue_msg());
    g.wait_for_all();
    t1 = bench_now_ns();
  }
  return t1 - t0;
}

/* pipe_alloc / pipe_bp: tbb::parallel_pipeline, four serial_in_order filters
 * (load allocates the item's buffers, write-back frees them), max live
 * tokens = the item count (no bound) or BENCH_PIPE_TOKENS. */
uint64_t pipe_items(bench_pipe *P, size_t tokens) {
  size_t next = 0;
  const tbb::filter_mode m = tbb::filter_mode::serial_in_order;
  uint64_t t0 = bench_now_ns();
  tbb::parallel_pipeline(
      tokens,
      tbb::make_filter<void, size_t>(m,
                                     [P, &next](tbb::flow_control &fc) -> size_t {
                                       if (next == P->items) {
                                         fc.stop();
                                         return 0;
                                       }
                                       bench_pipe_item_stage(P, BENCH_PIPE_LOAD, next);
                                       return next++;
                                     }) &
          tbb::make_filter<size_t, size_t>(m,
                                           [P](size_t k) {
                                             bench_pipe_item_stage(P, BENCH_PIPE_PRE, k);
                                             return k;
                                           }) &
          tbb::make_filter<size_t, size_t>(m,
                                           [P](size_t k) {
                                             bench_pipe_item_stage(P, BENCH_PIPE_COMPUTE, k);
                                             return k;
                                           }) &
          tbb::make_filter<size_t, void>(
              m, [P](size_t k) { bench_pipe_item_stage(P, BENCH_PIPE_WB, k); }));
  return bench_now_ns() - t0;
}

uint64_t pipe_rep(void *ctx, bench_pipe *P, int variant) {
  tbb::task_arena *arena = static_cast<tbb::task_arena *>(ctx);
  uint64_t ns = 0;
  arena->execute([&] {
    if (variant == BENCH_PIPE_STATIC)
      ns = pipe_static(P);
    else
      ns = pipe_items(P, variant == BENCH_PIPE_BP ? BENCH_PIPE_TOKENS : P->items);
  });
  return ns;
}

} // namespace

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib",        "pfor_imb",   "pfor_fine", "reduce",
                                          "idle",       "wake",       "chain",     "indep",
                                          "dag",        "wave",       "pipeline",  "graph_dag",
                                          "graph_grid", "graph_tree", "fanout",    nullptr};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);
  const int n = a.threads;
  const bool wake = !std::strcmp(a.workload, "wake");
  /* fanout: main spawns and helps, beside N workers (weft's N + main) */
  const bool fanout = !std::strcmp(a.workload, "fanout");
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                         static_cast<size_t>(wake || fanout ? n + 1 : n));
  tbb::task_arena arena(fanout ? n + 1 : n, wake ? 0 : 1);
  arena.initialize();

  bench_series s;
  bench_series_init(&s, a.reps);
  uint32_t *out = nullptr;

  if (!std::strcmp(a.workload, "fib")) {
    arena.execute([&] { bench_time_fib(&a, &s, fib, nullptr); });
    char extra[64];
    std::snprintf(extra, sizeof extra, ",\"spawns\":%u", BENCH_FIB_SPAWNS);
    bench_emit(RT, "fib", n, "ms", &s, extra);
  } else if (!std::strcmp(a.workload, "pfor_imb")) {
    uint64_t want = bench_imb_expected();
    arena.execute([&] {
      for (int r = -1; r < a.reps; r++) {
        uint64_t t0 = bench_now_ns();
        uint64_t v = run_imb(r < 0 ? BENCH_IMB_WARM_BEGIN : 0);
        uint64_t t1 = bench_now_ns();
        if (r < 0)
          continue;
        bench_check_u64("pfor_imb sum", v, want);
        bench_series_add(&s, (double)(t1 - t0) / 1e6);
      }
    });
    bench_emit(RT, "pfor_imb", n, "ms", &s, ",\"partitioner\":\"auto\"");
  } else if (!std::strcmp(a.workload, "pfor_fine")) {
    out = bench_fine_alloc();
    arena.execute([&] {
      for (int r = -1; r < a.reps; r++) {
        uint32_t seed = bench_fine_seed(r + 1);
        uint64_t t0 = bench_now_ns();
        run_fine(out, seed);
        uint64_t t1 = bench_now_ns();
        size_t bad = bench_fine_check(out, seed);
        if (bad)
          bench_fail("pfor_fine: %zu of %u slots wrong", bad, BENCH_FINE_N);
        if (r >= 0)
          bench_series_add(&s, (double)(t1 - t0) / 1e6);
      }
    });
    bench_emit(RT, "pfor_fine", n, "ms", &s, ",\"partitioner\":\"auto\"");
  } else if (!std::strcmp(a.workload, "reduce")) {
    double *x = bench_reduce_alloc();
    double want = bench_reduce_expected();
    arena.execute([&] {
      uint64_t warm0 = bench_now_ns();
      for (int r = -1; r < a.reps; r++) {
        uint64_t t0 = bench_now_ns();
        double got = tbb::parallel_reduce(
            tbb::blocked_range<size_t>(0, BENCH_REDUCE_N), 0.0,
            [x](const tbb::blocked_range<size_t> &rg, double acc) {
              return acc + bench_reduce_range(x, rg.begin(), rg.end());
            },
            [](double l, double rgt) { return l + rgt; });
        uint64_t t1 = bench_now_ns();
        if (got != want)
          bench_fail("reduce: sum %.17g, want %.17g", got, want);
        if (bench_reduce_timed(&r, warm0)) // after the warm-up (harness.h)
          bench_series_add(&s, (double)(t1 - t0) / 1e6);
      }
    });
    bench_emit(RT, "reduce", n, "ms", &s, ",\"partitioner\":\"auto\"");
    std::free(x);
  } else if (!std::strcmp(a.workload, "idle")) {
    out = bench_fine_alloc();
    burst_ctx b{&arena, out, 0};
    bench_idle_run(RT, &a, burst, &b);
  } else if (!std::strcmp(a.workload, "pipeline")) {
    char extra[200];
    std::snprintf(extra, sizeof extra,
                  ",\"push\":\"pipeline: flow graph, slot edges; alloc/bp: parallel_pipeline, "
                  "serial_in_order filters\",\"tokens_bp\":%u",
                  BENCH_PIPE_TOKENS);
    bench_pipe_run(RT, &a, pipe_rep, &arena, 1, extra, nullptr);
  } else if (wake) {
    bench_wake_run(RT, &a, submit, &arena,
                   "task_arena(N,0).enqueue from main; N workers");
  } else if (bench_is_graph_workload(a.workload)) {
    bench_shape(&a, arena);
  } else if (fanout) {
    bench_fanout_run(RT, &a, fanout_rep, &arena,
                     ",\"push\":\"task_group::run from main in task_arena(N+1,1), then "
                     "wait: N workers + main\"");
  } else {
    bench_oplist L;
    bench_oplist_make(&L, a.workload, a.quick);
    bench_slot *vals = bench_vars_alloc(L.nvars);
    dep_ctx c;
    c.arena = &arena;
    bench_dep_time(RT, &a, &L, vals, dep_rep, &c, &s);
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  ",\"push\":\"flow graph, continue_node per op, explicit edges; "
                  "construction timed\",\"teardown_ns_per_op\":%.1f",
                  c.teardown_ns);
    bench_dep_emit(RT, &a, &L, &s, extra);

    /* replay: the graph built once inside the arena (not timed), then each
     * repetition only runs it; its own line, "<workload>_replay", with the
     * construction-timed samples above as "fresh_samples" */
    bench_series rs;
    bench_series_init(&rs, a.reps);
    double build_ns = 0;
    arena.execute([&] {
      replay_graph r;
      r.arena = &arena;
      if (!bench_failed()) {
        replay_build(&r, &L);
        build_ns = r.build_ns;
        bench_dep_time(RT, &a, &L, vals, replay_rep, &r, &rs);
      }
    });
    char head[320];
    std::snprintf(head, sizeof head,
                  ",\"push\":\"flow graph, continue_node per op, explicit edges; built once "
                  "(not timed), each repetition try_put to the sources + wait_for_all\","
                  "\"build_ns_per_op\":%.1f,\"fresh_push\":\"construction timed\","
                  "\"fresh_samples\":[",
                  build_ns);
    std::string ex = head;
    for (int i = 0; i < s.n; i++) {
      char num[32];
      std::snprintf(num, sizeof num, "%s%.6g", i ? "," : "", s.v[i]);
      ex += num;
    }
    ex += "]";
    std::string metric = std::string(L.workload) + "_replay";
    bench_dep_emit_metric(RT, &a, &L, metric.c_str(), &rs, ex.c_str());
    bench_series_free(&rs);
    bench_vars_free(vals);
    bench_oplist_free(&L);
  }
  bench_series_free(&s);
  std::free(out);
  return bench_exit_code();
}
