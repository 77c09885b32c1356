/* SPDX-License-Identifier: MIT */
/*
 * The early-release scenario's shared words (early_release.h): what a
 * reading "kernel" and the host both reach. On CUDA they live in pinned host
 * memory mapped into the device, so the host sees each of the kernel's
 * observations as it makes it, and a CPU operator's overwrite of the buffer
 * reaches the kernel's next read. Seen by C (the tests: C11 atomics, which
 * TSan understands in the host variant) and by nvcc's C++ (fault_kernels.cu:
 * volatile words, each access a fresh load or store over the bus); an
 * _Atomic int or unsigned long long has the size and alignment of the plain
 * type on the ABIs we build for (checked below).
 */
#ifndef WEFT_TESTS_GPU_EARLY_RELEASE_WORDS_H
#define WEFT_TESTS_GPU_EARLY_RELEASE_WORDS_H

#ifdef __cplusplus
#define ER_WORD(T) volatile T
#else
#include <stdatomic.h>
#define ER_WORD(T) _Atomic T
#endif

/* The buffer's value while its reader may read it, and its writer's value. */
#define ER_CANARY 42
#define ER_OVERWRITTEN 7

typedef struct er_reader {
  ER_WORD(int) canary;   /* the buffer: ER_CANARY until its writer overwrites it */
  ER_WORD(int) started;  /* the reader set it on entry */
  ER_WORD(int) finished; /* set on a normal exit (its time was up, or stop): a
                            kernel killed by the device error never sets it */
  ER_WORD(int) stop;     /* the host asks the reader to end now */
  ER_WORD(int) bad;      /* reads that saw a canary other than ER_CANARY */
  int pad;
  ER_WORD(unsigned long long) beats;     /* reads so far: the reader's heartbeat */
  ER_WORD(unsigned long long) first_bad; /* beats at the first bad read */
} er_reader;

typedef struct er_trap {
  ER_WORD(int) ran; /* the failing work started (set just before it fails) */
  int pad;
} er_trap;

#ifndef __cplusplus
_Static_assert(sizeof(er_reader) == 40 && sizeof(er_trap) == 8,
               "early_release_words.h: C and nvcc's C++ must lay the words out alike");
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* fault_kernels.cu's launchers: each enqueues one single-thread kernel on
 * stream s (a cudaStream_t) and returns the launch's cudaError_t (0: done).
 * r and t are device addresses of mapped host memory. */
int weft_test_er_read(er_reader *r, long long max_ns, void *s);
int weft_test_er_trap(er_trap *t, void *s);
/* Loads both kernels on the current device (cudaFuncGetAttributes): the
 * first cudaError_t, or 0. */
int weft_test_er_load(void);
#ifdef __cplusplus
}
#endif

#endif /* WEFT_TESTS_GPU_EARLY_RELEASE_WORDS_H */
