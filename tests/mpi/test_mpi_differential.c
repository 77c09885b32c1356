/* SPDX-License-Identifier: MIT */
/*
 * The random-DAG differential test, distributed: a random sequence of
 * operators over vars spread over the ranks (random owners, operators on
 * their owner's rank or on a random one, some failing, collective waits in
 * between) runs through weft_mpi; rank 0 runs the same sequence on a
 * single-process naive engine (every push runs at once, in order). After
 * detach the owners send their final values to rank 0, which compares them
 * with the naive engine's, and every wait's result with the naive one's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_tap.h"
#include <weft/weft_mpi.h>

enum { K = 4, MAX_USE = 5 };

typedef struct dag {
  int nvars, nops, threads;
  uint64_t seed;
} dag;

typedef struct op_spec {
  int id;
  int nr, nw;
  int reads[3], writes[2];
  int exec;   /* WEFT_MPI_OWNER or a rank */
  int status; /* 0, or what it returns */
  /* How the operator reaches its buffers: through weft_mpi or directly. */
  weft_mpi *mpi;
  weft_var **vars;
  int64_t (*local)[K];
} op_spec;

static uint64_t next(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t *buf_of(const op_spec *o, int v)
{
  return o->mpi ? weft_mpi_var_data(o->mpi, o->vars[v]) : o->local[v];
}

static int op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  const op_spec *o = arg;
  if (o->status)
    return o->status; /* fails before writing anything */
  int64_t in[K] = {0};
  for (int i = 0; i < o->nr; i++) {
    const int64_t *r = buf_of(o, o->reads[i]);
    for (int k = 0; k < K; k++)
      in[k] += r[k] * (i + 2);
  }
  for (int i = 0; i < o->nw; i++) {
    int64_t *w = buf_of(o, o->writes[i]);
    for (int k = 0; k < K; k++)
      w[k] = (w[k] * 31 + in[k] + o->id * 7 + k) % 1000000007;
  }
  return 0;
}

static void gen(const dag *g, int size, int *owner, op_spec *ops, int *wait_after)
{
  uint64_t s = g->seed;
  for (int v = 0; v < g->nvars; v++)
    owner[v] = (int)(next(&s) % (uint64_t)size);
  for (int j = 0; j < g->nops; j++) {
    op_spec *o = &ops[j];
    memset(o, 0, sizeof *o);
    o->id = j;
    o->nr = (int)(next(&s) % 4);
    o->nw = 1 + (int)(next(&s) % 2);
    for (int i = 0; i < o->nr; i++)
      o->reads[i] = (int)(next(&s) % (uint64_t)g->nvars);
    for (int i = 0; i < o->nw; i++) {
      do
        o->writes[i] = (int)(next(&s) % (uint64_t)g->nvars);
      while (i == 1 && o->writes[1] == o->writes[0]);
    }
    o->exec = next(&s) % 3 == 0 ? (int)(next(&s) % (uint64_t)size) : WEFT_MPI_OWNER;
    o->status = next(&s) % 50 == 0 ? 1000 + j : 0;
    wait_after[j] = next(&s) % 60 == 0 || j == g->nops - 1;
  }
}

static void push_spec(mt_ctx *t, weft_engine *eng, weft_mpi *mpi, weft_var **vars, op_spec *o)
{
  weft_var *r[3], *w[2];
  for (int i = 0; i < o->nr; i++)
    r[i] = vars[o->reads[i]];
  for (int i = 0; i < o->nw; i++)
    w[i] = vars[o->writes[i]];
  weft_op_desc d = {0};
  d.fn = op_fn;
  d.arg = o;
  d.reads = r;
  d.num_reads = (size_t)o->nr;
  d.writes = w;
  d.num_writes = (size_t)o->nw;
  int rc = mpi ? weft_mpi_push(mpi, &d, o->exec) : weft_push(eng, &d);
  MT_CHECK(t, rc == 0, "push %d: %d", o->id, rc);
}

/* The naive engine's run of the same sequence: final values and each wait's
 * result. */
static void reference(mt_ctx *t, const dag *g, op_spec *ops, const int *wait_after,
                      int64_t (*vals)[K], int *waits)
{
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.kind = "naive";
  weft_engine *eng = NULL;
  MT_CHECK(t, weft_engine_create(&eng, &cfg) == 0, "naive engine");
  weft_var **vars = calloc((size_t)g->nvars, sizeof *vars);
  for (int v = 0; v < g->nvars; v++) {
    weft_var_new(eng, &vars[v]);
    for (int k = 0; k < K; k++)
      vals[v][k] = v * 10 + k;
  }
  int nw = 0;
  for (int j = 0; j < g->nops; j++) {
    op_spec o = ops[j];
    o.mpi = NULL;
    o.local = vals;
    push_spec(t, eng, NULL, vars, &o);
    if (wait_after[j])
      waits[nw++] = weft_wait_all(eng);
  }
  weft_engine_destroy(eng);
  free(vars);
}

static void run(mt_ctx *t, const dag *g)
{
  int *owner = calloc((size_t)g->nvars, sizeof *owner);
  op_spec *ops = calloc((size_t)g->nops, sizeof *ops);
  int *wait_after = calloc((size_t)g->nops, sizeof *wait_after);
  int64_t (*mine)[K] = calloc((size_t)g->nvars, sizeof *mine);
  int *waits = calloc((size_t)g->nops, sizeof *waits);
  weft_var **vars = calloc((size_t)g->nvars, sizeof *vars);
  gen(g, t->size, owner, ops, wait_after);

  weft_pool_config pc;
  weft_pool_config_default(&pc);
  pc.num_threads = g->threads;
  weft_pool *pool = NULL;
  MT_CHECK(t, weft_pool_create(&pool, &pc) == 0, "pool");
  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = pool;
  ec.kind = "threaded";
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, weft_engine_create(&eng, &ec) == 0, "engine");
  MT_CHECK(t, weft_mpi_attach(eng, MPI_COMM_WORLD, NULL, &mpi) == 0, "attach");
  for (int v = 0; v < g->nvars; v++) {
    for (int k = 0; k < K; k++)
      mine[v][k] = v * 10 + k;
    weft_var_new(eng, &vars[v]);
    int rc = weft_mpi_var_register(mpi, vars[v], owner[v], owner[v] == t->rank ? mine[v] : NULL,
                                   K, MPI_INT64_T);
    MT_CHECK(t, rc == 0, "register %d: %d", v, rc);
  }
  int nw = 0;
  for (int j = 0; j < g->nops; j++) {
    ops[j].mpi = mpi;
    ops[j].vars = vars;
    push_spec(t, eng, mpi, vars, &ops[j]);
    if (wait_after[j])
      waits[nw++] = weft_mpi_wait_all(mpi);
  }
  MT_CHECK(t, weft_mpi_detach(mpi) == 0, "detach");
  MT_CHECK(t, weft_engine_destroy(eng) == 0, "engine destroy");
  weft_pool_destroy(pool);

  /* The owners' values to rank 0, then the comparison there. */
  if (t->rank != 0) {
    for (int v = 0; v < g->nvars; v++)
      if (owner[v] == t->rank)
        MPI_Send(mine[v], K, MPI_INT64_T, 0, v, MPI_COMM_WORLD);
  } else {
    for (int v = 0; v < g->nvars; v++)
      if (owner[v] != 0)
        MPI_Recv(mine[v], K, MPI_INT64_T, owner[v], v, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int64_t (*ref)[K] = calloc((size_t)g->nvars, sizeof *ref);
    int *ref_waits = calloc((size_t)g->nops, sizeof *ref_waits);
    reference(t, g, ops, wait_after, ref, ref_waits);
    int bad = 0;
    for (int v = 0; v < g->nvars && bad < 5; v++)
      for (int k = 0; k < K; k++)
        if (mine[v][k] != ref[v][k]) {
          MT_CHECK(t, 0, "seed %llu: var %d (owner %d) [%d] = %lld, the naive engine %lld",
                   (unsigned long long)g->seed, v, owner[v], k, (long long)mine[v][k],
                   (long long)ref[v][k]);
          bad++;
          break;
        }
    for (int i = 0; i < nw; i++) {
      /* With several failures between two waits, each engine reports the
       * first it saw: both non-zero is a match, and ours must be injected. */
      bool ok = (waits[i] == 0) == (ref_waits[i] == 0) && (!waits[i] || waits[i] >= 1000);
      MT_CHECK(t, ok, "seed %llu: wait %d returned %d, the naive engine %d",
               (unsigned long long)g->seed, i, waits[i], ref_waits[i]);
    }
    MT_CHECK(t, nw > 0, "no wait");
    free(ref);
    free(ref_waits);
  }
  free(owner);
  free(ops);
  free(wait_after);
  free(mine);
  free(waits);
  free(vars);
}

static double scale(void)
{
  const char *s = getenv("WEFT_TEST_SCALE");
  if (!s || !*s)
    s = getenv("WEFT_TEST_SCALE_DEFAULT");
  double v = s && *s ? atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

static void seeds(mt_ctx *t, int threads)
{
  for (uint64_t seed = 1; seed <= 4; seed++) {
    dag g = {24, (int)(600 * scale()), threads, seed * 7919 + (uint64_t)t->size};
    run(t, &g);
  }
}

static void one_thread(mt_ctx *t)
{
  seeds(t, 1);
}

static void two_threads(mt_ctx *t)
{
  seeds(t, 2);
}

int main(int argc, char **argv)
{
  static const mt_case cases[] = {
      {"random_dag_vs_naive_1_thread", one_thread, 1},
      {"random_dag_vs_naive_2_threads", two_threads, 1},
  };
  return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
