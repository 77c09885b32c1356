/* SPDX-License-Identifier: MIT */
/*
 * weft bench harness: what every runtime's bench executable shares.
 *
 *  - clocks: wall time (CLOCK_MONOTONIC) and process CPU time
 *    (CLOCK_PROCESS_CPUTIME_ID, all threads together);
 *  - the workload kernels, identical for every runtime (static inline here, so
 *    every executable compiles the same loop bodies with the same flags);
 *  - the result checks: every benchmark checks what it computed and the
 *    executable exits non-zero on a wrong result;
 *  - the command line, the same for every executable:
 *        bench_<rt> --workload W --threads N --reps R [--quick]
 *  - the output: one JSON object per line and metric, e.g.
 *        {"rt":"weft","workload":"fib","threads":2,"unit":"ms",
 *         "samples":[...],"check":"ok"}
 *
 * Workloads (W) and the metrics they print:
 *   fib        fib(30): every call with n >= 2 spawns fib(n-1) as a task, runs
 *              fib(n-2) inline and joins: 1,346,268 spawns. No serial cutoff.
 *              metric "fib", ms per fib(30).
 *   pfor_imb   1e6 iterations; iteration i runs i*1000/1e6 steps of a dependent
 *              multiply chain (a linear ramp 0..999 steps, ~5e8 steps in all).
 *              metric "pfor_imb", ms.
 *   pfor_fine  1e7 trivial iterations, out[i] = f(i, seed). metric
 *              "pfor_fine", ms.
 *   reduce     the sum of 1e7 doubles (x[i] = i % 1024, so every grouping
 *              gives the exact sum): each runtime's own reduce (weft's
 *              weft_parallel_reduce, oneTBB's parallel_reduce, OpenMP's
 *              reduction(+)), over the same chunk kernel. metric "reduce", ms.
 *   idle       a short burst of parallel work, then the process sleeps; CPU
 *              time the whole process burns in the first and in the second
 *              second after the burst. metrics "idle_s1", "idle_s2", CPU ms.
 *   chain, indep, dag, wave: the dependency-engine workloads, see "op lists"
 *              below. metric = the workload's name, ns per op; runtimes that
 *              can record the list once and run it again (weft's captured
 *              graphs, oneTBB's reused flow graph) also print
 *              "<workload>_replay", ns per op of one such run.
 *   pipeline   a 4-stage pipeline over real buffers with 2 buffers per stage,
 *              and its allocating variants with and without back pressure;
 *              see "pipeline" below. items/s and MB.
 *   graph_dag, graph_grid, graph_tree: Taskflow's graph shapes with explicit
 *              edges (a random layered DAG, a wavefront grid, a binary
 *              tree), see "graph shapes" below. metrics "<shape>" and
 *              "<shape>_relaunch", ns/node.
 *   fanout     the main thread spawns 131,072 tiny tasks into one group and
 *              waits, see "fanout" below. metric "fanout", ns/task.
 *   wake       submit-to-start latency of one task, in us:
 *              "wake_block" after 50 ms idle, the submitter then blocks;
 *              "wake_busy"  after 50 ms idle, the submitter busy-polls its CPU;
 *              "wake_hot"   0.2 ms after the previous task ended (submitter
 *                           blocks).
 *
 * Each executable runs one untimed warm-up repetition before the timed ones
 * (fib, pfor_fine; pfor_imb a shorter one, see BENCH_IMB_WARM_BEGIN; idle's
 * burst warms up; wake submits one untimed task first).
 */
#ifndef WEFT_BENCH_HARNESS_H
#define WEFT_BENCH_HARNESS_H

#include <stdbool.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ arguments */

typedef struct bench_args {
  const char *workload; /* fib | pfor_imb | pfor_fine | reduce | idle | wake | chain | indep | dag |
                           wave | pipeline | graph_dag | graph_grid | graph_tree | fanout */
  int threads;          /* >= 1 */
  int reps;             /* timed repetitions, >= 1 */
  int quick;            /* fewer wake samples, smaller op lists */
} bench_args;

/* Parses the common command line; on a bad one prints usage and exits 2.
 * supported: NULL-terminated list of the workloads this runtime implements. */
void bench_parse_args(int argc, char **argv, const char *rt, const char *const *supported,
                      bench_args *out);

/* ---------------------------------------------------------------- clocks */

uint64_t bench_now_ns(void);     /* CLOCK_MONOTONIC */
uint64_t bench_cpu_ns(void);     /* CLOCK_PROCESS_CPUTIME_ID: every thread */
uint64_t bench_thread_cpu_ns(void); /* CLOCK_THREAD_CPUTIME_ID: the calling thread */
void bench_sleep_until_ns(uint64_t deadline_ns); /* absolute, CLOCK_MONOTONIC */
void bench_sleep_ns(uint64_t ns);

static inline void bench_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* ------------------------------------------------------------------ fib */

#define BENCH_FIB_N 30
#define BENCH_FIB_RESULT 832040u
#define BENCH_FIB_SPAWNS 1346268u /* calls with n >= 2 = fib(31) - 1 */
/* idle's burst uses a smaller fib */
#define BENCH_BURST_FIB_N 22
#define BENCH_BURST_FIB_RESULT 17711u

/* The serial reference, the same recursion with no tasks. */
uint64_t bench_fib_serial(int n);

/* ------------------------------------------------------------- pfor_imb */

#define BENCH_IMB_N 1000000u
#define BENCH_IMB_MAX_STEPS 1000u
#define BENCH_IMB_MUL 6364136223846793005ull
#define BENCH_IMB_ADD 1442695040888963407ull
/* The warm-up repetition runs only [BENCH_IMB_WARM_BEGIN, BENCH_IMB_N), the
 * costliest eighth (~1/4 of the work): enough to get every CPU going (the
 * first parallel repetition was ~20% slow without it), not a full run. */
#define BENCH_IMB_WARM_BEGIN (BENCH_IMB_N - BENCH_IMB_N / 8)

/* Iteration i's cost: i*1000/1e6 steps, a linear ramp from 0 to 999. */
static inline uint64_t bench_imb_steps(size_t i) {
  return (uint64_t)i * BENCH_IMB_MAX_STEPS / BENCH_IMB_N;
}

static inline uint64_t bench_imb_seed(size_t i) {
  return (uint64_t)i * 0x9E3779B97F4A7C15ull + 1u;
}

/* One iteration: a dependent chain of steps multiply-adds (each needs the
 * previous result, so it can neither vectorise nor overlap); the result is
 * summed by the caller, so the chain cannot be optimised away. */
static inline uint64_t bench_imb_iter(size_t i) {
  uint64_t x = bench_imb_seed(i);
  uint64_t steps = bench_imb_steps(i);
  for (uint64_t k = 0; k < steps; k++)
    x = x * BENCH_IMB_MUL + BENCH_IMB_ADD;
  return x;
}

/* Sum (mod 2^64) of bench_imb_iter(i) over [begin, end): the loop body of
 * pfor_imb for one chunk. The chunk bodies (this and bench_fine_range) are
 * compiled once, in harness.c by the project's C compiler at -O2, and every
 * executable links that object (bench_omp_clang too), so every runtime runs
 * the same machine code per chunk and only the scheduling differs. */
uint64_t bench_imb_range(size_t begin, size_t end);

/* The expected sum over [0, BENCH_IMB_N), computed in closed form (the chain
 * is an affine map; its powers are tabulated), independently of the loop above
 * and in a few milliseconds. */
uint64_t bench_imb_expected(void);

/* ------------------------------------------------------------ pfor_fine */

#define BENCH_FINE_N 10000000u

static inline uint32_t bench_fine_f(size_t i, uint32_t seed) {
  return (uint32_t)i * 2654435761u + seed;
}

/* The loop body of pfor_fine over [begin, end) (see bench_imb_range). */
void bench_fine_range(uint32_t *out, size_t begin, size_t end, uint32_t seed);

/* Every repetition uses a different seed, so an iteration that did not run
 * leaves a stale value behind and the check catches it. */
static inline uint32_t bench_fine_seed(int rep) {
  return 0x5bd1e995u * (uint32_t)(rep + 1);
}

/* A BENCH_FINE_N array, every page touched. Never NULL (exits on failure). */
uint32_t *bench_fine_alloc(void);

/* 0 when out[i] == f(i, seed) for every i, else the number of wrong slots. */
size_t bench_fine_check(const uint32_t *out, uint32_t seed);

/* --------------------------------------------------------------- reduce */

#define BENCH_REDUCE_N 10000000u

/* The chunk kernel of reduce: x[begin..end) summed in order (out of line in
 * harness.c, as bench_fine_range: the same machine code for every runtime). */
double bench_reduce_range(const double *x, size_t begin, size_t end);

/* The BENCH_REDUCE_N inputs, every page touched. Never NULL (exits on
 * failure). */
double *bench_reduce_alloc(void);
/* A runtime's reduce repeats untimed (r < 0) for BENCH_REDUCE_WARM_NS from
 * first_ns before its timed repetitions (harness.c), so that every
 * runtime's start from the same state of the machine. After repetition *r
 * of such a loop: whether its time counts; an untimed one sets *r so that
 * the loop's increment runs another while the warm-up lasts.
 *   uint64_t warm0 = bench_now_ns();
 *   for (int r = -1; r < reps; r++) {
 *     ...one reduce, timed...
 *     if (bench_reduce_timed(&r, warm0)) ...keep its time... } */
#define BENCH_REDUCE_WARM_NS 300000000u
bool bench_reduce_timed(int *r, uint64_t first_ns);
/* Their exact sum. */
double bench_reduce_expected(void);

/* ---------------------------------------------------------------- wake */

#define BENCH_WAKE_IDLE_NS (50ull * 1000 * 1000)
#define BENCH_WAKE_HOT_IDLE_NS (200ull * 1000)
/* a task that has not started after this long is a failure */
#define BENCH_WAKE_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)

/* Samples per wake metric for the given args: blocked/busy (50 ms apart) and
 * hot (0.2 ms apart). */
int bench_wake_samples_idle(const bench_args *a);
int bench_wake_samples_hot(const bench_args *a);

/* A task as every runtime can run it (the same type as weft_task_fn). */
typedef int (*bench_task_fn)(void *arg);
/* The runtime's "run fn(arg) as one task, asynchronously"; 0 or an error. */
typedef int (*bench_submit_fn)(void *rt_ctx, bench_task_fn fn, void *arg);

/* The whole wake workload, run on the submitting thread: one untimed task,
 * then the three metrics; prints wake_block, wake_busy and wake_hot, each
 * with "idle_gap_us_median" (the idle time the runtime really had before a
 * submission). The latency is from just before submit() to the first thing
 * the task does, both CLOCK_MONOTONIC. note: NULL or a short text saved in
 * the JSON "note" field. */
void bench_wake_run(const char *rt, const bench_args *a, bench_submit_fn submit, void *rt_ctx,
                    const char *note);

/* ---------------------------------------------------------------- idle */

#define BENCH_IDLE_WINDOW_NS 1000000000ull

/* The whole idle workload: reps times { burst(ctx) (synchronous: returns when
 * the burst is over), then measure the process's CPU time over the next two
 * one-second windows while this thread sleeps }; prints idle_s1 and idle_s2,
 * each with "main_thread_cpu_ms": the sleeping main thread's own share (on a
 * VM a sleeping process is charged ~0.03-0.07 ms a second: the floor). */
void bench_idle_run(const char *rt, const bench_args *a, void (*burst)(void *ctx), void *ctx);

/* ------------------------------------------------------ checks, events */

/* Compares a computed value with the expected one; a mismatch is a failure. */
void bench_check_u64(const char *what, uint64_t got, uint64_t want);

/* A one-shot event with a timed wait (a POSIX semaphore underneath). */
typedef struct bench_event {
  sem_t sem;
} bench_event;
void bench_event_init(bench_event *e);
void bench_event_destroy(bench_event *e);
void bench_event_post(bench_event *e);
/* 0 when posted within timeout_ns, -1 on timeout. */
int bench_event_wait(bench_event *e, uint64_t timeout_ns);

/* --------------------------------------------------------------- output */

/* Samples of one metric, and its check. */
typedef struct bench_series {
  double *v;
  int n, cap;
} bench_series;

void bench_series_init(bench_series *s, int cap);
void bench_series_add(bench_series *s, double v);
void bench_series_free(bench_series *s);
/* The timed fib(BENCH_FIB_N) loop every runtime shares: one untimed warm-up,
 * then a->reps timed runs into s, each result checked; after (if not NULL)
 * runs after each call, to report errors the runtime recorded. */
void bench_time_fib(const bench_args *a, bench_series *s, uint64_t (*fib)(int n),
                    void (*after)(void));

/* Records a failed check (printf-style reason). The first reason is kept and
 * printed in the JSON "check" field; bench_exit_code() becomes 1. Thread-safe. */
void bench_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
int bench_failed(void);

/* Prints one JSON line: rt, workload (the metric), threads, unit, samples,
 * check ("ok" or the first failure), and extra (NULL or a string of further
 * ',"key":value' members, inserted verbatim). */
void bench_emit(const char *rt, const char *metric, int threads, const char *unit,
                const bench_series *s, const char *extra);

/* 0 when every check passed, else 1. */
int bench_exit_code(void);

/* ------------------------------------------------------------- op lists */

/*
 * The dependency-engine workloads. An op list is a sequence of ops over
 * nvars vars (one uint64_t each); op i writes (reads and writes) exactly one
 * var, ops[i].w, and reads ops[i].nr (0-2) others, ops[i].r[0..nr), all
 * distinct. Every runtime runs the same list, deterministic from
 * BENCH_DEP_SEED, with the same per-op kernel (bench_op_exec, compiled once in
 * harness.c), declaring the same dependencies (write = read-write, reads =
 * read-only), pushed in list order from one thread; the final values of all
 * vars must equal the sequential run's (a checksum and a full compare).
 *
 *   chain  BENCH_CHAIN_OPS ops, all on var 0: each waits for the previous
 *          one; measures the dependent hand-off latency.
 *   indep  BENCH_INDEP_OPS ops, op i writes var i mod BENCH_INDEP_VARS and
 *          reads nothing: 1024 independent chains, interleaved.
 *   dag    BENCH_DAG_OPS ops over BENCH_DAG_VARS vars, each writes one random
 *          var and reads 0-2 random others (uniform).
 *   wave   a BENCH_WAVE_N x BENCH_WAVE_N grid, one var a cell; op (i,j)
 *          writes cell (i,j) and reads (i-1,j) and (i,j-1) where they exist;
 *          pushed row by row (a wavefront: up to N ops ready at once).
 * --quick uses the *_QUICK sizes.
 *
 * Time per repetition: from the first push (or the first piece of dependency
 * tracking) until the runtime's wait-for-everything returns, divided by the
 * number of ops: ns/op. Resetting the vars and the check are outside it.
 */
#define BENCH_DEP_SEED 0x5eedf00dcafe1234ull
#define BENCH_CHAIN_OPS 100000u
#define BENCH_CHAIN_OPS_QUICK 20000u
#define BENCH_INDEP_OPS 1000000u
#define BENCH_INDEP_OPS_QUICK 200000u
#define BENCH_INDEP_VARS 1024u
#define BENCH_DAG_OPS 200000u
#define BENCH_DAG_OPS_QUICK 50000u
#define BENCH_DAG_VARS 256u
#define BENCH_WAVE_N 512u
#define BENCH_WAVE_N_QUICK 256u

typedef struct bench_op {
  uint32_t w;    /* the var it writes */
  uint32_t nr;   /* how many it reads: 0..2 */
  uint32_t r[2]; /* the vars it reads, r[0..nr) */
} bench_op;

/* One var's value, alone on a cache line (no false sharing between vars). */
typedef struct bench_slot {
  uint64_t v;
  uint64_t pad_[7];
} bench_slot;

typedef struct bench_oplist {
  const char *workload; /* chain | indep | dag | wave */
  size_t nops, nvars;
  bench_op *ops;
  bench_slot *ref;   /* the sequential run's final values */
  uint64_t ref_sum;  /* bench_vars_checksum of ref */
} bench_oplist;

/* 1 for chain, indep, dag and wave. */
int bench_is_dep_workload(const char *workload);
/* Builds the op list of workload (the quick or the full size) and runs the
 * sequential reference. Exits on a bad name or no memory. */
void bench_oplist_make(bench_oplist *L, const char *workload, int quick);
void bench_oplist_free(bench_oplist *L);

/* nvars slots, 64-byte aligned, zeroed. Never NULL (exits on failure). */
bench_slot *bench_vars_alloc(size_t nvars);
void bench_vars_free(bench_slot *vals);
/* The initial values (the same for every repetition and runtime). */
void bench_vars_init(const bench_oplist *L, bench_slot *vals);
/* Checksum of n values (order-sensitive). */
uint64_t bench_vars_checksum(const bench_slot *vals, size_t n);
/* Compares vals with the sequential result: the checksum, then every var.
 * 0 when equal, else the number of wrong vars (reported with bench_fail). */
size_t bench_oplist_verify(const bench_oplist *L, const bench_slot *vals, const char *rt);

/* The per-op work: a few dependent multiply/xor-shift rounds over the written
 * var's value w, the read vars' values (0 for a read the op does not have)
 * and the op's index i (~10-20 ns on this machine: small, so that scheduling
 * dominates). Returns the written var's new value. Out of line and never inlined
 * (harness.c). */
uint64_t bench_op_kernel(uint64_t w, uint64_t r0, uint64_t r1, uint64_t i);
/* Runs op i of ops on vals: vals[w] = kernel(vals[w], vals[r0], vals[r1], i).
 * Out of line: every runtime runs this same machine code. */
void bench_op_exec(bench_slot *vals, const bench_op *ops, size_t i);
/* Runs ops [begin, end) in order (the sequential run). */
void bench_oplist_run(bench_slot *vals, const bench_op *ops, size_t begin, size_t end);

/* One repetition of a runtime: reset vals, then run the whole list, returning
 * the timed region's length in ns (the runtime times itself: what it counts is
 * documented in its source). Errors go to bench_fail. */
typedef uint64_t (*bench_dep_rep_fn)(void *ctx, const bench_oplist *L, bench_slot *vals);

/* The loop every runtime shares: one untimed warm-up repetition, then a->reps
 * timed ones into s (ns/op), each followed by bench_oplist_verify. vals is
 * reset with bench_vars_init before every repetition. Stops after a failure;
 * rt names the runtime in failure messages.
 * A time budget keeps a pathologically slow runtime from holding the suite
 * (libgomp at 1 thread on the full dag: ~150 us an op, 30 s a repetition):
 * when the warm-up's wall time x reps exceeds it, fewer repetitions run
 * (at least 1); when the warm-up alone exceeds it, the warm-up is the only
 * sample. Either is said in the JSON ("time_budget", by bench_dep_emit). */
#define BENCH_DEP_BUDGET_NS (20ull * 1000000000ull)
#define BENCH_DEP_BUDGET_QUICK_NS (2ull * 1000000000ull)
void bench_dep_time(const char *rt, const bench_args *a, const bench_oplist *L,
                    bench_slot *vals, bench_dep_rep_fn rep, void *ctx, bench_series *s);

/* bench_emit for an op-list workload: metric = the workload, unit "ns/op",
 * with "ops", "vars" and extra (NULL or ',"key":value...') appended. */
void bench_dep_emit(const char *rt, const bench_args *a, const bench_oplist *L,
                    const bench_series *s, const char *extra);
/* The same for another metric of the op list (e.g. "indep_replay": a series
 * of the same ops timed another way), metric instead of the workload's name. */
void bench_dep_emit_metric(const char *rt, const bench_args *a, const bench_oplist *L,
                           const char *metric, const bench_series *s, const char *extra);

/* --------------------------------------------------------- graph shapes */

/*
 * Taskflow's CPU benchmark shapes where its peers compete: a graph of nodes
 * with explicit edges, built by each runtime in its own way (weft
 * weft_graph_add + weft_graph_edge, oneTBB continue_node + make_edge,
 * OpenMP tasks with depend clauses on each node's slot) from the same
 * description below, every node running the same kernel (bench_gnode_exec,
 * compiled once in harness.c), its result checked against the serial run.
 *
 *   graph_dag   a random layered DAG: BENCH_GDAG_LAYERS layers of
 *               BENCH_GDAG_WIDTH nodes (65,536), each node of a layer but
 *               the last with 1-BENCH_GDAG_MAX_OUT distinct out-edges to
 *               random nodes of the next layer (BENCH_GRAPH_SEED: the same
 *               graph for every runtime); each node does BENCH_GDAG_STEPS
 *               steps of a dependent multiply chain (~0.7 us on the 2-vCPU
 *               VM: the serial column).
 *   graph_grid  a BENCH_GGRID_N x BENCH_GGRID_N grid (Taskflow's
 *               wavefront): block (r, c) after (r, c-1) and (r-1, c);
 *               empty blocks (the kernel's mix of the predecessors' values
 *               alone, a few ns).
 *   graph_tree  a binary tree of BENCH_GTREE_NODES nodes (Taskflow's
 *               binary_tree), node i before nodes 2i+1 and 2i+2; empty.
 *
 * Nodes are numbered in a topological order (layer by layer, row by row,
 * level by level); node i's predecessors are pred[pred0[i] .. pred0[i+1]).
 * Node i's kernel reads its predecessors' values, mixes them into a value
 * of its own index (graph_dag: then the multiply chain), stores it in its
 * slot and counts its run there. A repetition starts from zeroed slots and
 * must end with every value equal to the serial run's and every node run
 * exactly once (a node that ran before a predecessor read a 0 and shows).
 *
 * Metrics: "<shape>" (ns/node): the graph built and run once, from its
 * first node's construction (or task creation) to the wait for all of it;
 * and "<shape>_relaunch" (ns/node, runtimes that can run a graph again:
 * weft's weft_graph_launch, oneTBB's reused flow graph): the same graph
 * built once outside the timed region, then each repetition from the
 * launch to the wait. Destroying a graph is never timed. --quick keeps the
 * sizes (Taskflow's; the runner takes fewer repetitions).
 */
#define BENCH_GRAPH_SEED 0x7a5cf10e5eed0017ull
#define BENCH_GDAG_LAYERS 256u
#define BENCH_GDAG_WIDTH 256u
#define BENCH_GDAG_MAX_OUT 4u
#define BENCH_GDAG_STEPS 750u
#define BENCH_GGRID_N 256u
#define BENCH_GTREE_NODES (1u << 18)

typedef struct bench_gshape {
  const char *workload; /* graph_dag | graph_grid | graph_tree */
  size_t n, nedges;
  uint32_t *pred0;      /* [n + 1] */
  uint32_t *pred;       /* [nedges] */
  uint32_t max_preds;   /* the largest in-degree */
  uint32_t *sources;    /* the nodes without predecessors, ascending */
  size_t nsources;
  uint32_t steps;       /* the kernel's multiply steps a node */
  uint64_t *ref;        /* the serial run's values */
} bench_gshape;

/* One node's state, alone on a cache line. */
typedef struct bench_gslot {
  uint64_t v;
  uint64_t runs;
  uint64_t pad_[6];
} bench_gslot;

/* 1 for graph_dag, graph_grid and graph_tree. */
int bench_is_graph_workload(const char *workload);
/* Builds the shape and runs the serial reference. Exits on a bad name. */
void bench_gshape_make(bench_gshape *G, const char *workload);
void bench_gshape_free(bench_gshape *G);
/* n slots, 64-byte aligned, zeroed. Never NULL. */
bench_gslot *bench_gslots_alloc(size_t n);
void bench_gslots_reset(const bench_gshape *G, bench_gslot *s);
/* Runs node i on s (out of line: the same machine code for every runtime). */
void bench_gnode_exec(const bench_gshape *G, bench_gslot *s, size_t i);
/* 0 when every value equals the serial run's and every node ran once;
 * else the number of wrong nodes (reported with bench_fail, naming rt and
 * what). */
size_t bench_gshape_verify(const bench_gshape *G, const bench_gslot *s, const char *rt,
                           const char *what);

/* One repetition: runs the whole graph on s (zeroed by the caller) and
 * returns the timed region's length in ns. Errors go to bench_fail. */
typedef uint64_t (*bench_graph_rep_fn)(void *ctx, const bench_gshape *G, bench_gslot *s);
/* A series of a graph shape: its metric and how one repetition runs. */
typedef struct bench_graph_mode {
  const char *metric;   /* "<shape>" or "<shape>_relaunch" */
  bench_graph_rep_fn rep;
  void *ctx;
  bench_series s;       /* ns/node, filled by bench_graph_time */
} bench_graph_mode;
/* The loop every runtime shares: a warm-up round (one untimed repetition of
 * each mode), then a->reps rounds, each one repetition of every mode in
 * turn (the modes interleaved, so that what the machine does meanwhile
 * weighs on them alike); every repetition starts from reset slots and is
 * verified. Stops after a failure. A round whose warm-up wall time x reps
 * passes BENCH_DEP_BUDGET_NS (quick: _QUICK) cuts the rounds (at least 1:
 * "time_budget" in the JSON). */
void bench_graph_time(const char *rt, const bench_args *a, const bench_gshape *G,
                      bench_gslot *s, bench_graph_mode *modes, int nmodes);
/* bench_emit of one mode: unit "ns/node", with "nodes", "edges" and extra
 * (NULL or ',"key":value...'). Frees the mode's series. */
void bench_graph_emit(const char *rt, const bench_args *a, const bench_gshape *G,
                      bench_graph_mode *m, const char *extra);

/* --------------------------------------------------------------- fanout */

/*
 * fanout (Taskflow's embarrassing parallelism / async tasks): the main
 * thread spawns BENCH_FANOUT_TASKS tiny tasks into one group and waits for
 * them. Task k adds bench_fanout_val(k, seed) to its own slot k
 * (bench_fanout_task, out of line); every slot must hold exactly that
 * afterwards (a task that did not run leaves 0, one that ran twice twice
 * the value), and the count of right slots must be the task count. Each
 * repetition uses a new seed. Metric "fanout", ns/task: from the first
 * spawn to the wait's return.
 */
#define BENCH_FANOUT_TASKS 131072u

static inline uint32_t bench_fanout_val(size_t k, uint32_t seed) {
  return bench_fine_f(k, seed) | 1u; /* never 0: a task that did not run shows */
}
/* BENCH_FANOUT_TASKS slots, zeroed, every page touched. Never NULL. */
uint32_t *bench_fanout_alloc(void);
void bench_fanout_task(uint32_t *slots, size_t k, uint32_t seed);
/* One repetition: spawns every task k (bench_fanout_task(slots, k, seed))
 * from the calling thread and waits; returns the timed region in ns. */
typedef uint64_t (*bench_fanout_rep_fn)(void *ctx, uint32_t *slots, uint32_t seed);
/* Warm-up + a->reps repetitions into s (ns/task), each from zeroed slots,
 * checked; then bench_emit with extra (NULL or ',"key":value...'). */
void bench_fanout_run(const char *rt, const bench_args *a, bench_fanout_rep_fn rep, void *ctx,
                      const char *extra);

/* ------------------------------------------------------------- pipeline */

/*
 * pipeline: OneFlow's actor pipeline (regst_num = 2). N items pass
 * load -> preprocess -> compute -> write-back. Every stage works on real
 * buffers of BENCH_PIPE_WORDS uint64_t (128 KB); the costs differ: load
 * 1 pass, preprocess ~3 rounds a word, compute ~12 (the heaviest, ~2/3 of
 * the work), write-back folds its input into an order-sensitive checksum,
 * the sink. The final sink must equal the sequential run's.
 *
 * Three variants, one process (--workload pipeline), five metrics:
 *   pipeline        (items/s) static buffers, two per stage output: item k
 *                   uses slot k%2 of L (load's output), P (preprocess's) and
 *                   C (compute's). So load(k) writes L[k%2] only after
 *                   preprocess(k-2) read it, etc.: a stage reuses a buffer
 *                   only once the next stage consumed it (the runtimes get
 *                   this from the declared read/write dependencies on the
 *                   slots; write-back also writes the sink, so it runs in
 *                   item order). No memory is allocated while it runs.
 *   pipe_alloc      (items/s) load allocates the item's own three buffers
 *                   (BENCH_PIPE_ITEM_BYTES), write-back frees them; the only
 *                   dependencies are the item's own stages and the sink.
 *                   Nothing bounds how far load runs ahead.
 *   pipe_alloc_mem  (MB) the peak of the bytes the workload holds live in
 *                   item buffers (counted by bench_pipe_item_stage, not RSS)
 *                   in pipe_alloc.
 *   pipe_bp         (items/s) pipe_alloc with back pressure: weft
 *                   max_inflight = BENCH_PIPE_MAX_INFLIGHT ops; the peers a
 *                   limit of BENCH_PIPE_TOKENS items in flight (oneTBB
 *                   parallel_pipeline tokens; OpenMP / StarPU: load(k)
 *                   waits for write-back(k - TOKENS) through a token slot).
 *   pipe_bp_mem     (MB) the peak live bytes in pipe_bp.
 * --quick: BENCH_PIPE_ITEMS_QUICK items.
 *
 * Time per repetition: from the first push/submission to the wait-for-all's
 * return (graph construction included where there is one). items/s =
 * items / that time.
 */
#define BENCH_PIPE_ITEMS 256u
#define BENCH_PIPE_ITEMS_QUICK 32u
#define BENCH_PIPE_WORDS 16384u /* 128 KB a buffer */
#define BENCH_PIPE_ITEM_BYTES (3u * BENCH_PIPE_WORDS * 8u)
#define BENCH_PIPE_MAX_INFLIGHT 8 /* weft, pipe_bp: ops (2 items' 4 stages) */
#define BENCH_PIPE_TOKENS 4u      /* peers, pipe_bp: items */
#define BENCH_PIPE_SINK_SEED 0x243F6A8885A308D3ull

enum { BENCH_PIPE_LOAD = 0, BENCH_PIPE_PRE = 1, BENCH_PIPE_COMPUTE = 2, BENCH_PIPE_WB = 3 };
enum { BENCH_PIPE_STATIC = 0, BENCH_PIPE_ALLOC = 1, BENCH_PIPE_BP = 2 };

/* One item of the alloc variants: its buffers, L, P and C back to back
 * (NULL before load and after write-back). */
typedef struct bench_pipe_item {
  uint64_t *buf;
  uint64_t pad_[7];
} bench_pipe_item;

typedef struct bench_pipe {
  size_t items, words;
  uint64_t *slot[3][2];   /* static variant: [L, P, C][k % 2] */
  bench_pipe_item *item;  /* alloc variants: one per item */
  uint64_t sink;          /* write-back's checksum */
  uint64_t expected;      /* the sequential run's final sink */
} bench_pipe;

/* Allocates the slots and items and computes the sequential reference. */
void bench_pipe_make(bench_pipe *P, int quick);
void bench_pipe_free(bench_pipe *P);
/* Before a repetition: sink to its seed, the live-bytes peak to 0. */
void bench_pipe_reset(bench_pipe *P);
/* Stage s of item k on the static slots (out of line: the same machine code
 * for every runtime). */
void bench_pipe_stage(bench_pipe *P, int s, size_t k);
/* Stage s of item k on its own buffers: load allocates, write-back frees. */
void bench_pipe_item_stage(bench_pipe *P, int s, size_t k);
/* Bytes live in item buffers now / at the peak since bench_pipe_reset. */
size_t bench_pipe_live_bytes(void);
size_t bench_pipe_peak_bytes(void);
/* One repetition of variant v; returns the timed region's length in ns. */
typedef uint64_t (*bench_pipe_rep_fn)(void *ctx, bench_pipe *P, int variant);
/* Warm-up + a->reps repetitions of variant v: throughput into rate (items/s)
 * and, when mem is not NULL, the peak live MB into mem; each repetition's
 * sink and the live bytes (0 after it) are checked. */
void bench_pipe_time(const char *rt, const bench_args *a, bench_pipe *P, int variant,
                     bench_pipe_rep_fn rep, void *ctx, bench_series *rate, bench_series *mem);
/* The whole pipeline workload for a runtime: times the static, alloc and bp
 * variants (bp skipped when has_bp is 0) and emits the five metrics, extra
 * appended to each. done (NULL: none) runs before the workload's buffers are
 * freed (e.g. to unregister them from the runtime). */
void bench_pipe_run(const char *rt, const bench_args *a, bench_pipe_rep_fn rep, void *ctx,
                    int has_bp, const char *extra, void (*done)(void *ctx, bench_pipe *P));

#ifdef __cplusplus
}
#endif

#endif /* WEFT_BENCH_HARNESS_H */
