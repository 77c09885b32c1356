#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "weft_config.h"

#if WEFT_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
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

void *weft_malloc(size_t size)
{
  if (inject(&alloc_fail_at, &alloc_calls))
    return NULL;
#if WEFT_HAVE_JEMALLOC
  return mallocx(size ? size : 1, 0);
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
  return mallocx(bytes ? bytes : 1, MALLOCX_ZERO);
#else
  return calloc(n, size);
#endif
}

void *weft_aligned_alloc(size_t align, size_t size)
{
  if (inject(&alloc_fail_at, &alloc_calls))
    return NULL;
#if WEFT_HAVE_JEMALLOC
  return mallocx(size ? size : 1, MALLOCX_ALIGN(align));
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
