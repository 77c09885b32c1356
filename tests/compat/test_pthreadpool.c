/* SPDX-License-Identifier: MIT */
/*
 * libpthreadpool.so.0 on weft (src/compat/pthreadpool), seen as its users
 * see it: compiled against the system's <pthreadpool.h>, linked with ours.
 *
 * Every one of the 27 parallelize/compute functions, at 1, 2 and 4 threads
 * and on a NULL pool: each item covered exactly once, tiles where and as
 * large as the variant says, the uarch index passed; row-major order when
 * serial; again over ranges that tiles do not divide (or that are smaller
 * than a tile, or 1) at 1, 2 and 3 threads with each flag, a stalled tile
 * making the others steal; the caller taking part; thread counts; both
 * flags; a worker lingering while its call is open, and moving off the
 * caller's CPU; nested calls; calls from two threads serialized; destroy
 * during a call; bad input.
 */
#include "../common/testutil.h"

#include <float.h>
#include <pthreadpool.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* the legacy API is tested too */

#define MAX_DIMS 6
#define NO_UARCH UINT32_MAX
#define DEFAULT_UARCH 3u
#define MAX_UARCH 7u

/* What one parallelize call must do, and what it did. */
typedef struct grid_check {
  int nd, ntiled; /* the last ntiled dimensions are tiled */
  size_t range[MAX_DIMS], tile[MAX_DIMS];
  size_t total;       /* items: the product of range */
  atomic_uchar *hits; /* per item: times covered */
  size_t *order;      /* NULL, or: first item of each call, in call order */
  atomic_size_t norder;
  pthread_t caller;
  atomic_long on_caller; /* calls made on the calling thread */
  useconds_t sleep_us;   /* per call, to let every thread take part */
  useconds_t stall_us;   /* the call on tile 0 only: the others steal from its thread */
  bool want_flush;       /* every call must see denormals flushed */
} grid_check;

static bool flushes_denormals(void);

static size_t linear(const grid_check *g, const size_t *idx)
{
  size_t x = 0;
  for (int d = 0; d < g->nd; d++)
    x = x * g->range[d] + idx[d];
  return x;
}

/* Marks every item of the tile (starts s, sizes z) once, checking the
 * tile's shape against the variant's. */
static void cover(void *arg, uint32_t uarch, const size_t *s, const size_t *z)
{
  grid_check *g = arg;
  TU_CHECK(uarch == NO_UARCH || uarch == DEFAULT_UARCH, "uarch index %u", uarch);
  size_t n = 1;
  for (int d = 0; d < g->nd; d++) {
    TU_CHECK(s[d] < g->range[d], "dim %d: start %zu of %zu", d, s[d], g->range[d]);
    if (s[d] >= g->range[d])
      return;
    size_t want = g->range[d] - s[d] < g->tile[d] ? g->range[d] - s[d] : g->tile[d];
    TU_CHECK(s[d] % g->tile[d] == 0 && z[d] == want, "dim %d: tile at %zu of size %zu (tile %zu)",
             d, s[d], z[d], g->tile[d]);
    if (z[d] != want)
      return;
    n *= z[d];
  }
  if (g->order)
    g->order[atomic_fetch_add(&g->norder, 1)] = linear(g, s);
  if (pthread_equal(pthread_self(), g->caller))
    atomic_fetch_add(&g->on_caller, 1);
  /* Every item of the box: an odometer over the tile's indices. */
  size_t idx[MAX_DIMS];
  memcpy(idx, s, sizeof(size_t) * (size_t)g->nd);
  for (size_t k = 0; k < n; k++) {
    atomic_fetch_add(&g->hits[linear(g, idx)], 1);
    for (int d = g->nd - 1; d >= 0; d--) {
      if (++idx[d] < s[d] + z[d])
        break;
      idx[d] = s[d];
    }
  }
  if (g->want_flush)
    TU_CHECK(flushes_denormals(), "DISABLE_DENORMALS: a tile at %zu ran with denormals on",
             linear(g, s));
  if (g->sleep_us)
    usleep(g->sleep_us);
  if (g->stall_us && linear(g, s) == 0)
    usleep(g->stall_us);
}

static void cb_1d(void *c, size_t s0)
{
  const size_t s[] = {s0};
  const size_t z[] = {1};
  cover(c, NO_UARCH, s, z);
}

static void cb_1d_with_uarch(void *c, uint32_t u, size_t s0)
{
  const size_t s[] = {s0};
  const size_t z[] = {1};
  cover(c, u, s, z);
}

static void cb_1d_tile_1d(void *c, size_t s0, size_t z0)
{
  const size_t s[] = {s0};
  const size_t z[] = {z0};
  cover(c, NO_UARCH, s, z);
}

static void cb_2d(void *c, size_t s0, size_t s1)
{
  const size_t s[] = {s0, s1};
  const size_t z[] = {1, 1};
  cover(c, NO_UARCH, s, z);
}

static void cb_2d_tile_1d(void *c, size_t s0, size_t s1, size_t z1)
{
  const size_t s[] = {s0, s1};
  const size_t z[] = {1, z1};
  cover(c, NO_UARCH, s, z);
}

static void cb_2d_tile_2d(void *c, size_t s0, size_t s1, size_t z0, size_t z1)
{
  const size_t s[] = {s0, s1};
  const size_t z[] = {z0, z1};
  cover(c, NO_UARCH, s, z);
}

static void cb_2d_tile_2d_with_uarch(void *c, uint32_t u, size_t s0, size_t s1, size_t z0,
                                     size_t z1)
{
  const size_t s[] = {s0, s1};
  const size_t z[] = {z0, z1};
  cover(c, u, s, z);
}

static void cb_3d(void *c, size_t s0, size_t s1, size_t s2)
{
  const size_t s[] = {s0, s1, s2};
  const size_t z[] = {1, 1, 1};
  cover(c, NO_UARCH, s, z);
}

static void cb_3d_tile_1d(void *c, size_t s0, size_t s1, size_t s2, size_t z2)
{
  const size_t s[] = {s0, s1, s2};
  const size_t z[] = {1, 1, z2};
  cover(c, NO_UARCH, s, z);
}

static void cb_3d_tile_2d(void *c, size_t s0, size_t s1, size_t s2, size_t z1, size_t z2)
{
  const size_t s[] = {s0, s1, s2};
  const size_t z[] = {1, z1, z2};
  cover(c, NO_UARCH, s, z);
}

static void cb_3d_tile_2d_with_uarch(void *c, uint32_t u, size_t s0, size_t s1, size_t s2,
                                     size_t z1, size_t z2)
{
  const size_t s[] = {s0, s1, s2};
  const size_t z[] = {1, z1, z2};
  cover(c, u, s, z);
}

static void cb_4d(void *c, size_t s0, size_t s1, size_t s2, size_t s3)
{
  const size_t s[] = {s0, s1, s2, s3};
  const size_t z[] = {1, 1, 1, 1};
  cover(c, NO_UARCH, s, z);
}

static void cb_4d_tile_1d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t z3)
{
  const size_t s[] = {s0, s1, s2, s3};
  const size_t z[] = {1, 1, 1, z3};
  cover(c, NO_UARCH, s, z);
}

static void cb_4d_tile_2d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t z2, size_t z3)
{
  const size_t s[] = {s0, s1, s2, s3};
  const size_t z[] = {1, 1, z2, z3};
  cover(c, NO_UARCH, s, z);
}

static void cb_4d_tile_2d_with_uarch(void *c, uint32_t u, size_t s0, size_t s1, size_t s2,
                                     size_t s3, size_t z2, size_t z3)
{
  const size_t s[] = {s0, s1, s2, s3};
  const size_t z[] = {1, 1, z2, z3};
  cover(c, u, s, z);
}

static void cb_5d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t s4)
{
  const size_t s[] = {s0, s1, s2, s3, s4};
  const size_t z[] = {1, 1, 1, 1, 1};
  cover(c, NO_UARCH, s, z);
}

static void cb_5d_tile_1d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t s4, size_t z4)
{
  const size_t s[] = {s0, s1, s2, s3, s4};
  const size_t z[] = {1, 1, 1, 1, z4};
  cover(c, NO_UARCH, s, z);
}

static void cb_5d_tile_2d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t s4, size_t z3,
                          size_t z4)
{
  const size_t s[] = {s0, s1, s2, s3, s4};
  const size_t z[] = {1, 1, 1, z3, z4};
  cover(c, NO_UARCH, s, z);
}

static void cb_6d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t s4, size_t s5)
{
  const size_t s[] = {s0, s1, s2, s3, s4, s5};
  const size_t z[] = {1, 1, 1, 1, 1, 1};
  cover(c, NO_UARCH, s, z);
}

static void cb_6d_tile_1d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t s4, size_t s5,
                          size_t z5)
{
  const size_t s[] = {s0, s1, s2, s3, s4, s5};
  const size_t z[] = {1, 1, 1, 1, 1, z5};
  cover(c, NO_UARCH, s, z);
}

static void cb_6d_tile_2d(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t s4, size_t s5,
                          size_t z4, size_t z5)
{
  const size_t s[] = {s0, s1, s2, s3, s4, s5};
  const size_t z[] = {1, 1, 1, 1, z4, z5};
  cover(c, NO_UARCH, s, z);
}

static void cb_3d_tiled(void *c, size_t s0, size_t s1, size_t s2, size_t z0, size_t z1, size_t z2)
{
  const size_t s[] = {s0, s1, s2}, z[] = {z0, z1, z2};
  cover(c, NO_UARCH, s, z);
}

static void cb_4d_tiled(void *c, size_t s0, size_t s1, size_t s2, size_t s3, size_t z0, size_t z1,
                        size_t z2, size_t z3)
{
  const size_t s[] = {s0, s1, s2, s3}, z[] = {z0, z1, z2, z3};
  cover(c, NO_UARCH, s, z);
}

typedef struct variant {
  const char *name;
  int nd, ntiled, uarch;
} variant;

static const variant variants[] = {
    {"1d", 1, 0, 0},
    {"1d_with_uarch", 1, 0, 1},
    {"1d_tile_1d", 1, 1, 0},
    {"2d", 2, 0, 0},
    {"2d_tile_1d", 2, 1, 0},
    {"2d_tile_2d", 2, 2, 0},
    {"2d_tile_2d_with_uarch", 2, 2, 1},
    {"3d", 3, 0, 0},
    {"3d_tile_1d", 3, 1, 0},
    {"3d_tile_2d", 3, 2, 0},
    {"3d_tile_2d_with_uarch", 3, 2, 1},
    {"4d", 4, 0, 0},
    {"4d_tile_1d", 4, 1, 0},
    {"4d_tile_2d", 4, 2, 0},
    {"4d_tile_2d_with_uarch", 4, 2, 1},
    {"5d", 5, 0, 0},
    {"5d_tile_1d", 5, 1, 0},
    {"5d_tile_2d", 5, 2, 0},
    {"6d", 6, 0, 0},
    {"6d_tile_1d", 6, 1, 0},
    {"6d_tile_2d", 6, 2, 0},
    {"compute_1d", 1, 0, 0},
    {"compute_1d_tiled", 1, 1, 0},
    {"compute_2d", 2, 0, 0},
    {"compute_2d_tiled", 2, 2, 0},
    {"compute_3d_tiled", 3, 3, 0},
    {"compute_4d_tiled", 4, 4, 0},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

static const size_t ranges[MAX_DIMS + 1][MAX_DIMS] = {
    {0}, {1003}, {13, 17}, {5, 7, 9}, {3, 4, 5, 6}, {2, 3, 4, 5, 3}, {2, 3, 2, 3, 4, 5},
};
static const size_t tiles[MAX_DIMS + 1][MAX_DIMS] = {
    {0}, {7}, {3, 5}, {2, 3, 4}, {2, 3, 2, 4}, {1, 2, 3, 2, 2}, {1, 2, 1, 2, 3, 2},
};

/* The grid of variant v with the given ranges and tiles (a tile is used
 * only along the dimensions the variant tiles). */
static void check_init_shape(grid_check *g, const variant *v, const size_t *range,
                             const size_t *tile)
{
  memset(g, 0, sizeof *g);
  g->nd = v->nd;
  g->ntiled = v->ntiled;
  g->total = 1;
  for (int d = 0; d < v->nd; d++) {
    g->range[d] = range[d];
    g->tile[d] = d >= v->nd - v->ntiled ? tile[d] : 1;
    g->total *= g->range[d];
  }
  g->hits = calloc(g->total, sizeof *g->hits);
  cr_assert(g->hits);
  g->caller = pthread_self();
}

static void check_init(grid_check *g, const variant *v)
{
  check_init_shape(g, v, ranges[v->nd], tiles[v->nd]);
}

static void call_variant(pthreadpool_t tp, int i, grid_check *gp, uint32_t flags)
{
#define g (*gp) /* the calls below name g */
  switch (i) {
  case 0:
    pthreadpool_parallelize_1d(tp, cb_1d, &g, g.range[0], flags);
    break;
  case 1:
    pthreadpool_parallelize_1d_with_uarch(tp, cb_1d_with_uarch, &g, DEFAULT_UARCH, MAX_UARCH,
                                          g.range[0], flags);
    break;
  case 2:
    pthreadpool_parallelize_1d_tile_1d(tp, cb_1d_tile_1d, &g, g.range[0], g.tile[0], flags);
    break;
  case 3:
    pthreadpool_parallelize_2d(tp, cb_2d, &g, g.range[0], g.range[1], flags);
    break;
  case 4:
    pthreadpool_parallelize_2d_tile_1d(tp, cb_2d_tile_1d, &g, g.range[0], g.range[1], g.tile[1],
                                       flags);
    break;
  case 5:
    pthreadpool_parallelize_2d_tile_2d(tp, cb_2d_tile_2d, &g, g.range[0], g.range[1], g.tile[0],
                                       g.tile[1], flags);
    break;
  case 6:
    pthreadpool_parallelize_2d_tile_2d_with_uarch(tp, cb_2d_tile_2d_with_uarch, &g, DEFAULT_UARCH,
                                                  MAX_UARCH, g.range[0], g.range[1], g.tile[0],
                                                  g.tile[1], flags);
    break;
  case 7:
    pthreadpool_parallelize_3d(tp, cb_3d, &g, g.range[0], g.range[1], g.range[2], flags);
    break;
  case 8:
    pthreadpool_parallelize_3d_tile_1d(tp, cb_3d_tile_1d, &g, g.range[0], g.range[1], g.range[2],
                                       g.tile[2], flags);
    break;
  case 9:
    pthreadpool_parallelize_3d_tile_2d(tp, cb_3d_tile_2d, &g, g.range[0], g.range[1], g.range[2],
                                       g.tile[1], g.tile[2], flags);
    break;
  case 10:
    pthreadpool_parallelize_3d_tile_2d_with_uarch(tp, cb_3d_tile_2d_with_uarch, &g, DEFAULT_UARCH,
                                                  MAX_UARCH, g.range[0], g.range[1], g.range[2],
                                                  g.tile[1], g.tile[2], flags);
    break;
  case 11:
    pthreadpool_parallelize_4d(tp, cb_4d, &g, g.range[0], g.range[1], g.range[2], g.range[3],
                               flags);
    break;
  case 12:
    pthreadpool_parallelize_4d_tile_1d(tp, cb_4d_tile_1d, &g, g.range[0], g.range[1], g.range[2],
                                       g.range[3], g.tile[3], flags);
    break;
  case 13:
    pthreadpool_parallelize_4d_tile_2d(tp, cb_4d_tile_2d, &g, g.range[0], g.range[1], g.range[2],
                                       g.range[3], g.tile[2], g.tile[3], flags);
    break;
  case 14:
    pthreadpool_parallelize_4d_tile_2d_with_uarch(tp, cb_4d_tile_2d_with_uarch, &g, DEFAULT_UARCH,
                                                  MAX_UARCH, g.range[0], g.range[1], g.range[2],
                                                  g.range[3], g.tile[2], g.tile[3], flags);
    break;
  case 15:
    pthreadpool_parallelize_5d(tp, cb_5d, &g, g.range[0], g.range[1], g.range[2], g.range[3],
                               g.range[4], flags);
    break;
  case 16:
    pthreadpool_parallelize_5d_tile_1d(tp, cb_5d_tile_1d, &g, g.range[0], g.range[1], g.range[2],
                                       g.range[3], g.range[4], g.tile[4], flags);
    break;
  case 17:
    pthreadpool_parallelize_5d_tile_2d(tp, cb_5d_tile_2d, &g, g.range[0], g.range[1], g.range[2],
                                       g.range[3], g.range[4], g.tile[3], g.tile[4], flags);
    break;
  case 18:
    pthreadpool_parallelize_6d(tp, cb_6d, &g, g.range[0], g.range[1], g.range[2], g.range[3],
                               g.range[4], g.range[5], flags);
    break;
  case 19:
    pthreadpool_parallelize_6d_tile_1d(tp, cb_6d_tile_1d, &g, g.range[0], g.range[1], g.range[2],
                                       g.range[3], g.range[4], g.range[5], g.tile[5], flags);
    break;
  case 20:
    pthreadpool_parallelize_6d_tile_2d(tp, cb_6d_tile_2d, &g, g.range[0], g.range[1], g.range[2],
                                       g.range[3], g.range[4], g.range[5], g.tile[4], g.tile[5],
                                       flags);
    break;
  case 21:
    pthreadpool_compute_1d(tp, cb_1d, &g, g.range[0]);
    break;
  case 22:
    pthreadpool_compute_1d_tiled(tp, cb_1d_tile_1d, &g, g.range[0], g.tile[0]);
    break;
  case 23:
    pthreadpool_compute_2d(tp, cb_2d, &g, g.range[0], g.range[1]);
    break;
  case 24:
    pthreadpool_compute_2d_tiled(tp, cb_2d_tile_2d, &g, g.range[0], g.range[1], g.tile[0],
                                 g.tile[1]);
    break;
  case 25:
    pthreadpool_compute_3d_tiled(tp, cb_3d_tiled, &g, g.range[0], g.range[1], g.range[2], g.tile[0],
                                 g.tile[1], g.tile[2]);
    break;
  case 26:
    pthreadpool_compute_4d_tiled(tp, cb_4d_tiled, &g, g.range[0], g.range[1], g.range[2],
                                 g.range[3], g.tile[0], g.tile[1], g.tile[2], g.tile[3]);
    break;
  default:
    cr_assert_fail("no variant %d", i);
  }
#undef g
}

/* Runs variant i on tp over g (check_init*); every item must be covered
 * exactly once. */
static void run_checked(pthreadpool_t tp, int i, uint32_t flags, grid_check *gp)
{
  grid_check g = *gp;
  call_variant(tp, i, &g, flags);
  tu_assert_no_errors();
  for (size_t k = 0; k < g.total; k++)
    cr_assert_eq(atomic_load(&g.hits[k]), 1,
                 "%s on %zu threads, flags 0x%x, ranges %zu %zu %zu %zu %zu %zu, tiles %zu %zu "
                 "%zu %zu %zu %zu: item %zu covered %d times",
                 variants[i].name, pthreadpool_get_threads_count(tp), (unsigned)flags,
                 g.range[0], g.range[1], g.range[2], g.range[3], g.range[4], g.range[5],
                 g.tile[0], g.tile[1], g.tile[2], g.tile[3], g.tile[4], g.tile[5], k,
                 (int)atomic_load(&g.hits[k]));
  *gp = g;
}

/* Runs variant i on tp; every item must be covered exactly once. */
static void run_variant(pthreadpool_t tp, int i, uint32_t flags, bool record_order)
{
  grid_check g;
  check_init(&g, &variants[i]);
  if (record_order)
    g.order = calloc(g.total, sizeof *g.order);
  run_checked(tp, i, flags, &g);
  if (record_order) {
    size_t n = atomic_load(&g.norder);
    for (size_t k = 1; k < n; k++)
      cr_assert_lt(g.order[k - 1], g.order[k], "%s: call %zu out of row-major order",
                   variants[i].name, k);
    free(g.order);
  }
  free(g.hits);
}

/* Each test in its own process (Criterion, or the mini runner under TSan),
 * with no WEFT_* variable from the caller's environment. */
#define COMPAT_TEST(name) Test(compat, name, .init = tu_clear_weft_env, .timeout = TU_TIMEOUT(120))

COMPAT_TEST(every_variant_covers_every_item_once)
{
  cr_assert_eq(NVARIANTS, 27);
  run_variant(NULL, 0, 0, false);
  for (int i = 0; i < NVARIANTS; i++)
    run_variant(NULL, i, 0, true); /* NULL pool: serially, in order */
  const size_t counts[] = {1, 2, 4};
  for (int c = 0; c < 3; c++) {
    pthreadpool_t tp = pthreadpool_create(counts[c]);
    cr_assert(tp);
    cr_assert_eq(pthreadpool_get_threads_count(tp), counts[c]);
    for (int i = 0; i < NVARIANTS; i++)
      run_variant(tp, i, 0, counts[c] == 1);
    pthreadpool_destroy(tp);
  }
}

/* Shapes whose ranges do not divide by their tiles, or are smaller than
 * them, or are 1, per dimension count: each tiled dimension then ends on
 * a short tile, and the tiles of a thread's share start mid-row. */
static const size_t odd_ranges[][MAX_DIMS] = {
    {37, 11, 5, 3, 3, 2}, {5, 1, 9, 2, 7, 3}, {3, 2, 1, 5, 2, 11}, {1, 3, 4, 1, 6, 7},
};
static const size_t odd_tiles[][MAX_DIMS] = {
    {8, 4, 2, 2, 2, 4}, {9, 2, 4, 3, 2, 2}, {2, 3, 1, 2, 5, 4}, {1, 2, 4, 2, 4, 8},
};

/* Every variant over every odd shape at 1, 2 and 3 threads, with no flag,
 * each flag and both: each item exactly once, each tile's start and size
 * as the variant says, denormals flushed in every call that asked. On the
 * pools, tile 0 stalls its thread once per call, so that the others finish
 * their own shares and steal halves of its rest: runs of tiles that start
 * anywhere in the grid. */
COMPAT_TEST(every_variant_over_uneven_ranges_with_each_flag_and_steals)
{
  const uint32_t flag_sets[] = {0, PTHREADPOOL_FLAG_DISABLE_DENORMALS,
                                PTHREADPOOL_FLAG_YIELD_WORKERS,
                                PTHREADPOOL_FLAG_DISABLE_DENORMALS |
                                    PTHREADPOOL_FLAG_YIELD_WORKERS};
  const size_t counts[] = {1, 2, 3};
  const int nshapes = (int)(sizeof odd_ranges / sizeof odd_ranges[0]);
  for (int c = 0; c < 3; c++) {
    pthreadpool_t tp = pthreadpool_create(counts[c]);
    cr_assert(tp);
    for (int i = 0; i < NVARIANTS; i++) {
      for (int sh = 0; sh < nshapes; sh++) {
        for (int f = 0; f < 4; f++) {
          /* The legacy compute_* functions take no flags. */
          if (f && strncmp(variants[i].name, "compute", 7) == 0)
            continue;
          grid_check g;
          check_init_shape(&g, &variants[i], odd_ranges[sh], odd_tiles[sh]);
          g.want_flush = (flag_sets[f] & PTHREADPOOL_FLAG_DISABLE_DENORMALS) != 0;
          g.stall_us = counts[c] > 1 && g.total > 2 ? 300 : 0;
          run_checked(tp, i, flag_sets[f], &g);
          free(g.hits);
          cr_assert_not(flushes_denormals(), "%s: the caller's FPU state was not restored",
                        variants[i].name);
        }
      }
    }
    pthreadpool_destroy(tp);
  }
}

/* ------------------------------------------------------------ threads */

static void sleepy_item(void *arg, size_t i)
{
  (void)i;
  grid_check *g = arg;
  atomic_fetch_add(&g->hits[i], 1);
  if (pthread_equal(pthread_self(), g->caller))
    atomic_fetch_add(&g->on_caller, 1);
  if (g->sleep_us)
    usleep(g->sleep_us);
}

/* Workers of the pools named "pthreadpool" (two at most here), once they
 * have named themselves. */
static int workers_named(int want)
{
  int n = 0;
  TU_WAIT_UNTIL(
      (n = tu_threads_named("pthreadpool-w0") + tu_threads_named("pthreadpool-w1")) == want, 10.0);
  return n;
}

COMPAT_TEST(a_pool_of_n_is_the_caller_and_n_minus_1_workers)
{
  int base = tu_thread_baseline();
  pthreadpool_t tp = pthreadpool_create(3);
  cr_assert(tp);
  cr_assert_eq(pthreadpool_get_threads_count(tp), 3);
  cr_assert_eq(tu_wait_thread_count(base + 2), base + 2, "3 threads: the caller and 2 workers");
  cr_assert_eq(workers_named(2), 2);
  grid_check g = {.caller = pthread_self(), .sleep_us = 300};
  g.hits = calloc(64, sizeof *g.hits);
  pthreadpool_parallelize_1d(tp, sleepy_item, &g, 64, 0);
  for (int i = 0; i < 64; i++)
    cr_assert_eq(atomic_load(&g.hits[i]), 1);
  long mine = atomic_load(&g.on_caller);
  cr_assert(mine > 0 && mine < 64,
            "the caller ran %ld of 64 items: it must take part, and not "
            "alone",
            mine);
  free(g.hits);
  pthreadpool_destroy(tp);
  cr_assert_eq(tu_wait_thread_count(base), base, "threads left after destroy");
  cr_assert_eq(pthreadpool_get_threads_count(NULL), 1);
}

COMPAT_TEST(zero_threads_means_weft_automatic_count)
{
  setenv("WEFT_NUM_THREADS", "3", 1);
  pthreadpool_t tp = pthreadpool_create(0);
  cr_assert(tp);
  cr_assert_eq(pthreadpool_get_threads_count(tp), 3);
  cr_assert_eq(workers_named(2), 2);
  pthreadpool_destroy(tp);

  setenv("WEFT_NUM_THREADS", "1", 1);
  int base = tu_thread_baseline();
  tp = pthreadpool_create(0);
  cr_assert(tp);
  cr_assert_eq(pthreadpool_get_threads_count(tp), 1);
  cr_assert_eq(tu_thread_count(), base, "one thread: the caller alone, no worker");
  run_variant(tp, 0, 0, true);
  pthreadpool_destroy(tp);

  setenv("WEFT_NUM_THREADS", "three", 1);
  tu_capture cap;
  char err[2048];
  tu_capture_begin(&cap);
  tp = pthreadpool_create(0);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_null(tp, "a malformed WEFT_NUM_THREADS must fail the create");
  cr_assert(tu_line_has_all(err, "WEFT_NUM_THREADS", "three", NULL), "stderr: %s", err);
  cr_assert(tu_line_has_all(err, "pthreadpool_create", NULL, NULL), "stderr: %s", err);
}

/* -------------------------------------------------------------- flags */

/* Whether a denormal result is flushed to zero on this thread now. */
static bool flushes_denormals(void)
{
  volatile float tiny = FLT_MIN;
  volatile float half = 0.5f;
  return tiny * half == 0.0f;
}

typedef struct fpu_check {
  atomic_long flushed, kept, on_caller;
  pthread_t caller;
} fpu_check;

static void fpu_item(void *arg, size_t i)
{
  (void)i;
  fpu_check *c = arg;
  atomic_fetch_add(flushes_denormals() ? &c->flushed : &c->kept, 1);
  if (pthread_equal(pthread_self(), c->caller))
    atomic_fetch_add(&c->on_caller, 1);
  usleep(100);
}

COMPAT_TEST(disable_denormals_holds_on_every_thread_for_the_call_only)
{
  cr_assert_not(flushes_denormals(), "the test starts with denormals on");
  pthreadpool_t tp = pthreadpool_create(4);
  cr_assert(tp);
  for (int round = 0; round < 3; round++) {
    fpu_check c = {.caller = pthread_self()};
    pthreadpool_parallelize_1d(tp, fpu_item, &c, 200, PTHREADPOOL_FLAG_DISABLE_DENORMALS);
    cr_assert_eq(atomic_load(&c.flushed), 200, "with the flag: %ld of 200 items saw denormals",
                 atomic_load(&c.kept));
    cr_assert(atomic_load(&c.on_caller) < 200, "the workers took no item: test proves nothing");
    cr_assert_not(flushes_denormals(), "the caller's FPU state was not restored");
    fpu_check d = {.caller = pthread_self()};
    pthreadpool_parallelize_1d(tp, fpu_item, &d, 200, 0);
    cr_assert_eq(atomic_load(&d.kept), 200,
                 "without the flag: %ld of 200 items flushed (a worker kept the state)",
                 atomic_load(&d.flushed));
  }
  /* Serially too (one thread). */
  pthreadpool_t one = pthreadpool_create(1);
  fpu_check e = {.caller = pthread_self()};
  pthreadpool_parallelize_1d(one, fpu_item, &e, 10, PTHREADPOOL_FLAG_DISABLE_DENORMALS);
  cr_assert_eq(atomic_load(&e.flushed), 10);
  cr_assert_not(flushes_denormals());
  pthreadpool_destroy(one);
  pthreadpool_destroy(tp);
}

/* The state letter of thread tid of this process ('R' running or
 * runnable, 'S' asleep, ...), or 0 if it cannot be read. */
static char thread_state(pid_t tid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
  return p && p[1] == ' ' ? p[2] : 0;
}

typedef struct met {
  pthread_t caller;
  atomic_int worker_tid; /* a pool thread that ran an item; 0 before */
  atomic_long ran;
} met;

/* Every item until a pool thread has run one waits for it (the caller
 * takes items too): the call ends with the worker awake and done with it. */
static void meeting_item(void *arg, size_t i)
{
  (void)i;
  met *m = arg;
  if (!pthread_equal(pthread_self(), m->caller))
    atomic_store(&m->worker_tid, (int)syscall(SYS_gettid));
  else
    TU_WAIT_UNTIL(atomic_load(&m->worker_tid) != 0, TU_DEADLINE_S);
  atomic_fetch_add(&m->ran, 1);
}

/* Runs a call with flags and returns the worker that took part in it. */
static pid_t call_with_worker(pthreadpool_t tp, uint32_t flags)
{
  met m = {.caller = pthread_self()};
  pthreadpool_parallelize_1d(tp, meeting_item, &m, 4000, flags);
  cr_assert_eq(atomic_load(&m.ran), 4000);
  pid_t tid = atomic_load(&m.worker_tid);
  cr_assert_neq(tid, 0, "no worker took part in the call");
  return tid;
}

/* Not a timing assertion: the worker's state, which a loaded machine does
 * not change (a spinning worker that yields its CPU stays runnable, R; a
 * parked one sleeps, S). A worker that spins after a call spins 400 ms
 * here; one told to yield parks at once. */
COMPAT_TEST(yield_workers_parks_them_after_the_call)
{
  setenv("WEFT_SPIN_COUNT", "400000", 1); /* workers spin 400 ms unless told */
  pthreadpool_t tp = pthreadpool_create(2);
  cr_assert(tp);
  for (int round = 0; round < 2; round++) {
    /* Control: without the flag the worker spins after the call (the
     * second round: the flag held for one call only). */
    pid_t w = call_with_worker(tp, 0);
    tu_sleep_us(50 * 1000);
    char st = thread_state(w);
    cr_assert_eq(st, 'R', "round %d, without the flag: the worker is in state %c 50 ms after "
                 "the call, not spinning", round, st ? st : '?');
    /* With the flag it parks: asleep well before its spin would end. */
    w = call_with_worker(tp, PTHREADPOOL_FLAG_YIELD_WORKERS);
    cr_assert(TU_WAIT_UNTIL(thread_state(w) == 'S', 0.3),
              "round %d, with YIELD_WORKERS: the worker is still in state %c 300 ms after the "
              "call (it spins 400 ms)", round, thread_state(w));
  }
  pthreadpool_destroy(tp);
}

typedef struct open_call {
  pthread_t caller;
  atomic_int worker_tid; /* the pool thread that ran items */
  atomic_long done;
  atomic_int caller_started;
  long total;
  char worker_state; /* the worker's, 1 ms into the caller's last item */
  _Atomic double worker_done_s; /* when the worker finished its last item */
  double state_s;               /* when worker_state was read */
} open_call;

/* The caller's first item waits until the worker has run every other item
 * (stealing the rest of the caller's share), then sleeps 1 ms with the
 * call still open and reads the worker's state. The worker's items take
 * 100 us, so that the caller has claimed one before the worker gets to
 * steal the caller's share. */
static void open_call_item(void *arg, size_t i)
{
  (void)i;
  open_call *oc = arg;
  if (pthread_equal(pthread_self(), oc->caller) && !atomic_exchange(&oc->caller_started, 1)) {
    TU_WAIT_UNTIL(atomic_load(&oc->done) == oc->total - 1, TU_DEADLINE_S);
    tu_sleep_us(1000);
    oc->worker_state = thread_state(atomic_load(&oc->worker_tid));
    oc->state_s = tu_now();
  } else if (!pthread_equal(pthread_self(), oc->caller)) {
    atomic_store(&oc->worker_tid, (int)syscall(SYS_gettid));
    usleep(100); /* the caller claims its first item before the worker runs short */
    atomic_store(&oc->worker_done_s, tu_now());
  }
  atomic_fetch_add(&oc->done, 1);
}

/* A worker with nothing left of a call that is still open (its caller on a
 * long last item, or preempted in one) keeps lingering for the next call,
 * however long the call stays open (up to 5 ms of its spinning), and parks
 * once no call came for its linger after the close. Idle weft workers park
 * at once here (WEFT_SPIN_COUNT=0), so 'R' 1 ms into the open call is the
 * linger's doing (a linger of 300 us on the clock had parked it). States,
 * not timings (as above); a round where a busy machine kept the caller off
 * its CPU so long that the call stayed open past the worker's 5 ms proves
 * nothing, and is run again. */
COMPAT_TEST(a_worker_lingers_while_its_call_is_open_then_parks)
{
  setenv("WEFT_SPIN_COUNT", "0", 1);
  pthreadpool_t tp = pthreadpool_create(2);
  cr_assert(tp);
  int rounds = 0;
  for (int attempt = 0; attempt < 20 && rounds < 2; attempt++) {
    open_call oc = {.caller = pthread_self(), .total = 64};
    pthreadpool_parallelize_1d(tp, open_call_item, &oc, 64, 0);
    cr_assert_eq(atomic_load(&oc.done), 64);
    pid_t w = atomic_load(&oc.worker_tid);
    cr_assert_neq(w, 0, "no worker took part in the call");
    double open_s = oc.state_s - atomic_load(&oc.worker_done_s);
    if (oc.worker_state != 'R' && open_s > 4e-3)
      continue; /* inconclusive: see above */
    rounds++;
    cr_assert_eq(oc.worker_state, 'R',
                 "attempt %d: the worker is in state %c %.1f ms into its open call, not "
                 "lingering",
                 attempt, oc.worker_state ? oc.worker_state : '?', open_s * 1e3);
    cr_assert(TU_WAIT_UNTIL(thread_state(w) == 'S', 5.0),
              "attempt %d: the worker still in state %c 5 s after the call (it lingers "
              "300 us)",
              attempt, thread_state(w));
  }
  cr_assert_eq(rounds, 2, "only %d of 20 attempts conclusive", rounds);
  pthreadpool_destroy(tp);
}

typedef struct cpu_check {
  pthread_t caller;
  int avoid;                 /* the caller's CPU */
  atomic_long worker_items;  /* items a pool thread ran */
  atomic_long worker_elsewhere; /* of which on a CPU other than the caller's */
} cpu_check;

/* 20 us of work, on the CPU (no sleep: a wake-up would let the scheduler
 * place the thread anew). */
static void cpu_item(void *arg, size_t i)
{
  (void)i;
  cpu_check *c = arg;
  if (!pthread_equal(pthread_self(), c->caller)) {
    atomic_fetch_add(&c->worker_items, 1);
    if (sched_getcpu() != c->avoid)
      atomic_fetch_add(&c->worker_elsewhere, 1);
  }
  double end = tu_now() + 20e-6;
  while (tu_now() < end)
    ;
}

/* A worker on the CPU its caller runs on (the scheduler often puts a worker
 * woken for a call there, and a busy machine can put the two together at
 * any time) moves to another before it takes part: the call's items do not
 * run one after the other on one CPU until the scheduler balances the two.
 * Here the caller is pinned to one CPU and the lingering worker put on it
 * (its affinity that CPU alone for a moment, then all again: it stays
 * there); the next call's items on the worker run elsewhere (the worker
 * moved while it lingered, or as it joined). */
COMPAT_TEST(a_worker_on_the_callers_cpu_moves_off_it)
{
  cpu_set_t all, one;
  cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2)
    cr_skip_test("one CPU: nowhere to move to");
  int a = 0;
  while (!CPU_ISSET(a, &all))
    a++;
  CPU_ZERO(&one);
  CPU_SET(a, &one);
  pthreadpool_t tp = pthreadpool_create(2);
  cr_assert(tp);
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  /* Three calls the worker takes part in (on a machine busy with other work
   * it may miss one: it then ran nowhere). */
  int rounds = 0;
  for (int attempt = 0; attempt < 20 && rounds < 3; attempt++) {
    pid_t w = call_with_worker(tp, 0); /* the worker lingers after it */
    cr_assert_eq(sched_setaffinity(w, sizeof one, &one), 0);
    cr_assert_eq(sched_setaffinity(w, sizeof all, &all), 0);
    /* A pool's members move at most once a millisecond (the first call may
     * have moved this one): the next call after that. */
    tu_sleep_us(2000);
    cpu_check c = {.caller = pthread_self(), .avoid = a};
    pthreadpool_parallelize_1d(tp, cpu_item, &c, 400, 0);
    if (atomic_load(&c.worker_items) == 0)
      continue;
    rounds++;
    cr_assert_gt(atomic_load(&c.worker_elsewhere), 0,
                 "attempt %d: the worker ran its %ld items on the caller's CPU %d", attempt,
                 atomic_load(&c.worker_items), a);
  }
  cr_assert_eq(rounds, 3, "the worker took part in %d of 20 calls", rounds);
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof all, &all), 0);
  pthreadpool_destroy(tp);
}

COMPAT_TEST(unknown_flags_are_reported_once_and_ignored)
{
  pthreadpool_t tp = pthreadpool_create(2);
  tu_capture cap;
  char err[2048];
  tu_capture_begin(&cap);
  run_variant(tp, 0, 0x100, false);
  run_variant(tp, 0, 0x100, false);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert(tu_line_has_all(err, "pthreadpool_parallelize_1d", "unknown flags 0x100", NULL),
            "stderr: %s", err);
  cr_assert_null(strstr(strstr(err, "unknown flags") + 1, "unknown flags"), "said twice: %s", err);
  pthreadpool_destroy(tp);
}

/* ------------------------------------------------------ nesting, threads */

typedef struct nest {
  pthreadpool_t tp;
  atomic_long inner_total, inner_elsewhere;
} nest;

typedef struct nest_inner {
  nest *n;
  pthread_t outer_thread;
} nest_inner;

static void inner_item(void *arg, size_t i)
{
  (void)i;
  nest_inner *in = arg;
  atomic_fetch_add(&in->n->inner_total, 1);
  if (!pthread_equal(pthread_self(), in->outer_thread))
    atomic_fetch_add(&in->n->inner_elsewhere, 1);
}

static void outer_item(void *arg, size_t i)
{
  (void)i;
  nest *n = arg;
  nest_inner in = {n, pthread_self()};
  pthreadpool_parallelize_1d(n->tp, inner_item, &in, 100, 0);
  usleep(200);
}

COMPAT_TEST(a_call_from_inside_a_call_runs_serially_on_its_thread)
{
  pthreadpool_t tp = pthreadpool_create(4);
  nest n = {.tp = tp};
  pthreadpool_parallelize_1d(tp, outer_item, &n, 16, 0);
  cr_assert_eq(atomic_load(&n.inner_total), 1600);
  cr_assert_eq(atomic_load(&n.inner_elsewhere), 0, "an inner item left its outer item's thread");
  pthreadpool_destroy(tp);
}

typedef struct serial_check {
  atomic_int inside[2]; /* items of call 0 / call 1 running now */
  atomic_long overlaps, items;
} serial_check;

typedef struct serial_arg {
  serial_check *c;
  int me;
} serial_arg;

static void serial_item(void *arg, size_t i)
{
  (void)i;
  serial_arg *a = arg;
  atomic_fetch_add(&a->c->inside[a->me], 1);
  if (atomic_load(&a->c->inside[1 - a->me]) > 0)
    atomic_fetch_add(&a->c->overlaps, 1);
  usleep(50);
  atomic_fetch_sub(&a->c->inside[a->me], 1);
  atomic_fetch_add(&a->c->items, 1);
}

typedef struct caller_arg {
  pthreadpool_t tp;
  serial_arg a;
} caller_arg;

static void *caller_thread(void *arg)
{
  caller_arg *ca = arg;
  for (int k = 0; k < 20; k++)
    pthreadpool_parallelize_1d(ca->tp, serial_item, &ca->a, 16, 0);
  return NULL;
}

COMPAT_TEST(calls_from_two_threads_are_serialized)
{
  pthreadpool_t tp = pthreadpool_create(4);
  serial_check c = {0};
  caller_arg a0 = {tp, {&c, 0}}, a1 = {tp, {&c, 1}};
  pthread_t t0, t1;
  pthread_create(&t0, NULL, caller_thread, &a0);
  pthread_create(&t1, NULL, caller_thread, &a1);
  pthread_join(t0, NULL);
  pthread_join(t1, NULL);
  cr_assert_eq(atomic_load(&c.items), 2 * 20 * 16);
  cr_assert_eq(atomic_load(&c.overlaps), 0, "items of two calls ran at once");
  pthreadpool_destroy(tp);
}

typedef struct long_call {
  pthreadpool_t tp;
  grid_check g;
} long_call;

static void *long_call_thread(void *arg)
{
  long_call *lc = arg;
  pthreadpool_parallelize_1d(lc->tp, sleepy_item, &lc->g, 200, 0);
  return NULL;
}

static long items_done(const grid_check *g, size_t n)
{
  long done = 0;
  for (size_t i = 0; i < n; i++)
    done += atomic_load(&g->hits[i]);
  return done;
}

COMPAT_TEST(destroy_during_a_call_frees_the_pool_after_it)
{
  int base = tu_thread_baseline();
  long_call lc = {.tp = pthreadpool_create(2)};
  cr_assert(lc.tp);
  lc.g.hits = calloc(200, sizeof *lc.g.hits);
  lc.g.sleep_us = 500;
  pthread_t t;
  pthread_create(&t, NULL, long_call_thread, &lc);
  TU_WAIT_UNTIL(items_done(&lc.g, 200) >= 10, TU_DEADLINE_S);
  tu_capture cap;
  char err[2048];
  tu_capture_begin(&cap);
  pthreadpool_destroy(lc.tp);
  tu_capture_end(&cap, err, sizeof err);
  long at_destroy = items_done(&lc.g, 200);
  pthread_join(t, NULL);
  cr_assert(at_destroy < 200, "destroy waited for the call (the test needs it not to)");
  cr_assert(tu_line_has_all(err, "pthreadpool_destroy", "while 1 parallelize calls", NULL),
            "stderr: %s", err);
  for (int i = 0; i < 200; i++)
    cr_assert_eq(atomic_load(&lc.g.hits[i]), 1, "item %d", i);
  free(lc.g.hits);
  /* The call's return freed the pool: its workers are gone. */
  cr_assert_eq(tu_wait_thread_count(base), base, "the workers outlived the call");
  tu_assert_no_leaks();
}

/* ----------------------------------------------------------- bad input */

static void never(void *arg, size_t i)
{
  (void)i;
  atomic_fetch_add((atomic_long *)arg, 1);
}

static void never_2d(void *arg, size_t i, size_t j, size_t ti, size_t tj)
{
  (void)i, (void)j, (void)ti, (void)tj;
  atomic_fetch_add((atomic_long *)arg, 1);
}

COMPAT_TEST(bad_input_is_reported_and_runs_nothing)
{
  pthreadpool_t tp = pthreadpool_create(2);
  atomic_long calls = 0;
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  pthreadpool_parallelize_1d(tp, NULL, &calls, 10, 0);
  pthreadpool_parallelize_1d(tp, never, &calls, 0, 0);
  pthreadpool_parallelize_2d_tile_2d(tp, never_2d, &calls, 10, 0, 3, 3, 0); /* empty: fine */
  pthreadpool_parallelize_2d_tile_2d(tp, never_2d, &calls, 10, 10, 0, 3, 0);
  pthreadpool_parallelize_2d_tile_2d(NULL, never_2d, &calls, 10, 10, 3, 0, 0);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(atomic_load(&calls), 0);
  cr_assert(tu_line_has_all(err, "pthreadpool_parallelize_1d", "NULL function", NULL), "%s", err);
  cr_assert(tu_line_has_all(err, "pthreadpool_parallelize_2d_tile_2d", "a tile of 0", NULL), "%s",
            err);
  int lines = 0;
  for (const char *p = err; (p = strchr(p, '\n')); p++)
    lines++;
  cr_assert_eq(lines, 3, "one line per bad call, none for empty ranges: %s", err);
  pthreadpool_destroy(tp);
  pthreadpool_destroy(NULL); /* as pthreadpool: nothing */
}

COMPAT_TEST(a_million_items_on_four_threads)
{
  pthreadpool_t tp = pthreadpool_create(4);
  const size_t n = (size_t)tu_scaled(1 << 20, 1 << 12);
  grid_check g = {.caller = pthread_self()};
  g.hits = calloc(n, sizeof *g.hits);
  pthreadpool_parallelize_1d(tp, sleepy_item, &g, n, 0);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(atomic_load(&g.hits[i]), 1, "item %zu", i);
  free(g.hits);
  pthreadpool_destroy(tp);
}

/* --------------------------------------------------------- stealing */

typedef struct imbalance {
  atomic_long done;
  long total;
  atomic_bool gave_up;
} imbalance;

/* Item 0 waits until every other item is done: each item must be free for
 * other threads while one of them blocks (pthreadpool's work stealing). The
 * deadline only turns a hang into a failure. */
static void wait_for_the_rest(imbalance *im, size_t first)
{
  atomic_fetch_add(&im->done, 1);
  if (first != 0)
    return;
  double deadline = tu_now() + 10.0;
  while (atomic_load(&im->done) != im->total) {
    if (tu_now() > deadline) {
      atomic_store(&im->gave_up, true);
      return;
    }
  }
}

static void imbalance_1d(void *arg, size_t i)
{
  wait_for_the_rest(arg, i);
}

static void imbalance_2d(void *arg, size_t i, size_t j, size_t ti, size_t tj)
{
  (void)ti, (void)tj;
  wait_for_the_rest(arg, i + j);
}

COMPAT_TEST(an_item_that_waits_for_all_others_holds_only_itself)
{
  const size_t counts[] = {2, 4};
  for (int c = 0; c < 2; c++) {
    pthreadpool_t tp = pthreadpool_create(counts[c]);
    imbalance a = {.total = 1000};
    pthreadpool_parallelize_1d(tp, imbalance_1d, &a, 1000, 0);
    cr_assert_not(atomic_load(&a.gave_up), "1d, %zu threads: item 0 waited 10 s for %ld others",
                  counts[c], a.total - atomic_load(&a.done));
    imbalance b = {.total = 40 * 25};
    pthreadpool_parallelize_2d_tile_2d(tp, imbalance_2d, &b, 80, 100, 2, 4, 0);
    cr_assert_not(atomic_load(&b.gave_up), "2d tiles, %zu threads: tile 0 waited 10 s for %ld",
                  counts[c], b.total - atomic_load(&b.done));
    pthreadpool_destroy(tp);
  }
}
