/* SPDX-License-Identifier: MIT */
/*
 * Fork-join: a parallel quicksort with weft groups.
 *
 * Each call partitions its range, spawns the sort of one half into a group
 * (another worker may steal it), sorts the other half itself, and waits for
 * the group. Below a cutoff the range is sorted serially: a task costs far
 * more than sorting a few thousand ints in cache.
 *
 * usage: forkjoin_quicksort [N]   (N ints, default 4000000)
 * Checks that the result is sorted and holds the same multiset of values.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <weft/weft.h>

enum {
  INSERTION_CUTOFF = 24,  /* below this, insertion sort */
  PARALLEL_CUTOFF = 8192, /* below this, no more tasks: sort serially */
};

/* ------------------------------------------------------------ serial parts */

static void insertion_sort(int *a, size_t n)
{
  for (size_t i = 1; i < n; i++) {
    int v = a[i];
    size_t j = i;
    for (; j > 0 && a[j - 1] > v; j--)
      a[j] = a[j - 1];
    a[j] = v;
  }
}

static void swap(int *x, int *y)
{
  int t = *x;
  *x = *y;
  *y = t;
}

/* Hoare partition around the median of three; returns m with every a[0..m)
 * <= every a[m..n), and 0 < m < n (needs n >= 3). */
static size_t partition(int *a, size_t n)
{
  size_t mid = n / 2;
  if (a[mid] < a[0])
    swap(&a[mid], &a[0]);
  if (a[n - 1] < a[0])
    swap(&a[n - 1], &a[0]);
  if (a[n - 1] < a[mid])
    swap(&a[n - 1], &a[mid]);
  int pivot = a[mid];
  size_t i = 0, j = n - 1;
  for (;;) {
    while (a[i] < pivot)
      i++;
    while (a[j] > pivot)
      j--;
    if (i >= j)
      return j + 1;
    swap(&a[i++], &a[j--]);
  }
}

static void serial_sort(int *a, size_t n)
{
  while (n > INSERTION_CUTOFF) {
    size_t m = partition(a, n);
    /* Recurse into the smaller half, loop on the larger: O(log n) stack. */
    if (m < n - m) {
      serial_sort(a, m);
      a += m;
      n -= m;
    } else {
      serial_sort(a + m, n - m);
      n = m;
    }
  }
  insertion_sort(a, n);
}

/* ----------------------------------------------------------- parallel part */

typedef struct sort_task {
  weft_pool *pool;
  int *a;
  size_t n;
} sort_task;

/* A weft_task_fn: sorts t->a[0..n). */
static int parallel_sort(void *arg)
{
  sort_task *t = arg;
  if (t->n <= PARALLEL_CUTOFF) {
    serial_sort(t->a, t->n);
    return 0;
  }
  size_t m = partition(t->a, t->n);
  sort_task left = {t->pool, t->a, m};
  sort_task right = {t->pool, t->a + m, t->n - m};

  /* The group lives on this stack frame, and so do left and right: wait
   * returns only once the spawned task has finished with them. */
  weft_group g;
  weft_group_init(&g, t->pool);
  int rc = weft_group_spawn(&g, parallel_sort, &left);
  if (rc)
    return rc; /* nothing was spawned: nothing to wait for */
  int mine = parallel_sort(&right); /* meanwhile, sort the other half here */
  rc = weft_group_wait(&g);         /* runs other tasks while it waits */
  return rc ? rc : mine;
}

/* --------------------------------------------------------------- checking */

static uint64_t xorshift(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* An order-independent fingerprint of the multiset: the sum of a hash of
 * each value (wrapping), plus the plain sum. */
static void fingerprint(const int *a, size_t n, uint64_t out[2])
{
  out[0] = out[1] = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t h = (uint64_t)(uint32_t)a[i] * 0x9e3779b97f4a7c15u;
    out[0] += h ^ (h >> 29);
    out[1] += (uint64_t)(int64_t)a[i];
  }
}

static double now(void)
{
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000000;
  int *a = malloc((n ? n : 1) * sizeof *a);
  if (!a) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  uint64_t seed = 0x2545f4914f6cdd1du;
  for (size_t i = 0; i < n; i++)
    a[i] = (int)(xorshift(&seed) % 1000000007u) - 500000000; /* with duplicates */
  uint64_t before[2], after[2];
  fingerprint(a, n, before);

  weft_pool *pool;
  int rc = weft_pool_create(&pool, NULL); /* one worker per CPU we may use */
  if (rc) {
    fprintf(stderr, "weft_pool_create: %s\n", weft_strerror(rc));
    return 1;
  }
  double t0 = now();
  sort_task root = {pool, a, n};
  rc = parallel_sort(&root); /* the main thread takes part, too */
  double t1 = now();
  weft_pool_destroy(pool);
  if (rc) {
    fprintf(stderr, "sort failed: %s\n", weft_strerror(rc));
    return 1;
  }

  size_t unsorted = 0;
  for (size_t i = 1; i < n; i++)
    unsorted += a[i - 1] > a[i];
  fingerprint(a, n, after);
  int ok = unsorted == 0 && before[0] == after[0] && before[1] == after[1];
  printf("forkjoin_quicksort: %zu ints in %.1f ms: %s\n", n, (t1 - t0) * 1e3,
         ok ? "sorted, same values" : "WRONG");
  free(a);
  return ok ? 0 : 1;
}
