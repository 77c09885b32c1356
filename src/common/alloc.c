#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "weft_config.h"

#if WEFT_HAVE_JEMALLOC
#include <pthread.h>
#include <stdio.h>

#include <jemalloc/jemalloc.h>

#include "common/tunables.h"
#endif

/* Fault injection (tests only). atomic, relaxed: counters, no data published. */
static _Atomic long alloc_fail_at, alloc_calls;
static _Atomic long thread_fail_at, thread_calls;

static int inject(_Atomic long *fail_at, _Atomic long *calls)
{
  long at = atomic_load_explicit(fail_at, memory_order_relaxed);
  long n = atomic_fetch_add_explicit(calls, 1, memory_order_relaxed) + 1;
  return at > 0 && n >= at;
}

void weft_test_fail_alloc_at(long n)
{
  atomic_store_explicit(&alloc_calls, 0, memory_order_relaxed);
  atomic_store_explicit(&alloc_fail_at, n, memory_order_relaxed);
}
void weft_test_fail_thread_at(long n)
{
  atomic_store_explicit(&thread_calls, 0, memory_order_relaxed);
  atomic_store_explicit(&thread_fail_at, n, memory_order_relaxed);
}
long weft_test_alloc_calls(void) { return atomic_load_explicit(&alloc_calls, memory_order_relaxed); }
long weft_test_thread_calls(void) { return atomic_load_explicit(&thread_calls, memory_order_relaxed); }

#if WEFT_HAVE_JEMALLOC
/* Large blocks (WEFT_BULK_ALLOC_BYTES and up): jemalloc purges a freed
 * extent of its oversize threshold (8 MiB by default) or more at once, in
 * every arena, so the next block of that size is fresh memory, a page
 * fault for every 4 KiB of it when it is first written. A graph built,
 * launched once and destroyed again and again (its node blocks pass 8 MiB
 * from 65,536 nodes on) paid about as much for those faults as for the
 * rest of its build. They come from an arena of the library's own instead,
 * whose oversize threshold is out of reach: its freed pages are kept and
 * purged with its dirty decay, as smaller blocks' are (jemalloc's
 * dirty_decay_ms). weft_free needs no flag for them (jemalloc finds a
 * block's arena). If the arena cannot be made (an older jemalloc without
 * the per-arena threshold), large blocks go where the others go. */
static int bulk_flags;
static pthread_once_t bulk_once = PTHREAD_ONCE_INIT;

static void bulk_init(void)
{
  unsigned arena;
  size_t len = sizeof arena;
  if (mallctl("arenas.create", &arena, &len, NULL, 0))
    return;
  char name[64];
  snprintf(name, sizeof name, "arena.%u.oversize_threshold", arena);
  size_t never = SIZE_MAX;
  if (mallctl(name, NULL, NULL, &never, sizeof never))
    return; /* the arena stays unused: a few pages of metadata */
  bulk_flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
}

/* The flags of a block of size bytes. */
static inline int bulk(size_t size)
{
  if (size < WEFT_BULK_ALLOC_BYTES)
    return 0;
  pthread_once(&bulk_once, bulk_init);
  return bulk_flags;
}
#endif

void *weft_malloc(size_t size)
{
  if (inject(&alloc_fail_at, &alloc_calls))
    return NULL;
#if WEFT_HAVE_JEMALLOC
  return mallocx(size ? size : 1, bulk(size));
#else
  return malloc(size);
#endif
}

void *weft_calloc(size_t n, size_t size)
{
  if (size && n > SIZE_MAX / size)
    return NULL;
  if (inject(&alloc_fail_at, &alloc_calls))
    return NULL;
#if WEFT_HAVE_JEMALLOC
  size_t bytes = n * size;
  return mallocx(bytes ? bytes : 1, MALLOCX_ZERO | bulk(bytes));
#else
  return calloc(n, size);
#endif
}

void *weft_aligned_alloc(size_t align, size_t size)
{
  if (inject(&alloc_fail_at, &alloc_calls))
    return NULL;
#if WEFT_HAVE_JEMALLOC
  return mallocx(size ? size : 1, MALLOCX_ALIGN(align) | bulk(size));
#else
  void *p = NULL;
  return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
#endif
}

void weft_free(void *p)
{
  if (!p)
    return;
#if WEFT_HAVE_JEMALLOC
  dallocx(p, 0);
#else
  free(p);
#endif
}

int weft_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
  if (inject(&thread_fail_at, &thread_calls))
    return 11; /* EAGAIN */
  return pthread_create(t, attr, fn, arg);
}
