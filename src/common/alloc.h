/* SPDX-License-Identifier: MIT */
/*
 * Internal allocation. Every allocation the library makes goes through here:
 * jemalloc's mallocx/sdallocx when built with it, libc otherwise; and a
 * fault-injection hook lets tests fail the n-th allocation or thread start.
 */
#ifndef WEFT_COMMON_ALLOC_H
#define WEFT_COMMON_ALLOC_H

#include <pthread.h>
#include <stddef.h>

/* NULL on failure (or on an injected failure). */
void *weft_malloc(size_t size);
void *weft_calloc(size_t n, size_t size);
/* align: a power of two, at least sizeof(void *). Memory is not zeroed. */
void *weft_aligned_alloc(size_t align, size_t size);
void weft_free(void *p);

/* pthread_create through the same fault-injection hook; returns 0 or errno. */
int weft_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* Testing hooks (not part of the public API). n >= 1: the n-th allocation
 * (thread start) from now fails, and every one after it until reset; 0: off.
 * Return how many calls went through the hook since the last reset. */
void weft_test_fail_alloc_at(long n);
void weft_test_fail_thread_at(long n);
long weft_test_alloc_calls(void);
long weft_test_thread_calls(void);

#endif /* WEFT_COMMON_ALLOC_H */
