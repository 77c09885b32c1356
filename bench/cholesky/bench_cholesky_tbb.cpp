/* SPDX-License-Identifier: MIT */
/*
 * bench_cholesky_tbb: the tiled Cholesky of examples/cholesky on a oneTBB
 * flow graph: the same tiles, kernels (examples/cholesky/tiles.c) and
 * operator order, one continue_node per operator, and edges computed from
 * the tiles each operator reads and writes as bench_tbb.cpp does for the op
 * lists (per tile the last writer and the readers since; a writer gets
 * edges from those readers, or else from the last writer; a reader from the
 * last writer). Timed from the first node's construction (the equivalent of
 * a push) to wait_for_all, inside a task_arena of T threads.
 *
 *   bench_cholesky_tbb --n N --b B --threads T [--precision float|double]
 *                      [--reps R] [--check]
 *
 * Prints one line as bench_cholesky_omp does; exit 1 when --check finds a
 * wrong factor, 2 on bad arguments.
 */
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <vector>

extern "C" {
#include "tiles.h"
}

namespace flow = oneapi::tbb::flow;
using node = flow::continue_node<flow::continue_msg>;

struct tile_state {
  long last_writer = -1;
  std::vector<long> readers; /* since the last write */
};

static void factor(tiled *t)
{
  const size_t nt = t->nt;
  flow::graph g;
  std::vector<std::unique_ptr<node>> nodes;
  std::vector<tile_state> st(nt * nt);
  std::vector<bool> has_pred;
  auto add = [&](std::vector<size_t> reads, size_t write, auto fn) {
    long id = (long)nodes.size();
    nodes.emplace_back(new node(g, [fn](const flow::continue_msg &) { fn(); }));
    std::set<long> preds;
    for (size_t r : reads)
      if (st[r].last_writer >= 0)
        preds.insert(st[r].last_writer);
    if (!st[write].readers.empty())
      preds.insert(st[write].readers.begin(), st[write].readers.end());
    else if (st[write].last_writer >= 0)
      preds.insert(st[write].last_writer);
    for (long p : preds)
      flow::make_edge(*nodes[(size_t)p], *nodes[(size_t)id]);
    has_pred.push_back(!preds.empty());
    for (size_t r : reads)
      st[r].readers.push_back(id);
    st[write].last_writer = id;
    st[write].readers.clear();
  };
  void **tp = t->tile;
  for (size_t k = 0; k < nt; k++) {
    size_t kk = k * nt + k;
    add({}, kk, [t, tp, kk] {
      if (tile_potrf(t, tp[kk]))
        std::fprintf(stderr, "cholesky_tbb: not SPD\n");
    });
    for (size_t i = k + 1; i < nt; i++) {
      size_t ik = i * nt + k;
      add({kk}, ik, [t, tp, kk, ik] { tile_trsm(t, tp[kk], tp[ik]); });
    }
    for (size_t i = k + 1; i < nt; i++) {
      size_t ik = i * nt + k, ii = i * nt + i;
      add({ik}, ii, [t, tp, ik, ii] { tile_syrk(t, tp[ik], tp[ii]); });
      for (size_t j = k + 1; j < i; j++) {
        size_t jk = j * nt + k, ij = i * nt + j;
        add({ik, jk}, ij, [t, tp, ik, jk, ij] { tile_gemm(t, tp[ik], tp[jk], tp[ij]); });
      }
    }
  }
  for (size_t n = 0; n < nodes.size(); n++)
    if (!has_pred[n])
      nodes[n]->try_put(flow::continue_msg());
  g.wait_for_all();
}

int main(int argc, char **argv)
{
  tiles_bench_args o;
  if (tiles_bench_args_parse(&o, argc, argv, "bench_cholesky_tbb") || tiles_blas_init())
    return 2;
  oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism,
                                 (size_t)o.threads);
  oneapi::tbb::task_arena arena(o.threads);
  tiled a, w;
  if (tiled_alloc(&a, o.prec, o.n, o.b) || tiled_alloc(&w, o.prec, o.n, o.b))
    return 2;
  tiled_fill_spd(&a, 1, -1);
  std::vector<double> t((size_t)o.reps);
  int ok = 1;
  for (int r = 0; r < o.reps; r++) {
    tiled_copy(&w, &a);
    auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] { factor(&w); });
    t[(size_t)r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.check) {
      double res = tiled_residual(&a, &w);
      if (!(res >= 0 && res < 10)) {
        std::fprintf(stderr, "cholesky_tbb: FAILED: residual %.3g\n", res);
        ok = 0;
      }
    }
  }
  tiles_bench_report("cholesky_tbb", &o, t.data());
  tiled_free(&a);
  tiled_free(&w);
  return ok ? 0 : 1;
}
