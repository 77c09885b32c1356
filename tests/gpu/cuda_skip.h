/*
 * The CUDA suites' skip (test_cuda.c, test_cuda_faults.c): without a
 * device the whole executable reports itself skipped (exit 77, which meson
 * counts as SKIP), because Criterion leaves skipped tests out of its
 * closing "Synthesis" count, so per-test skips alone would count as
 * nothing. A constructor: it runs before the runner's main, in the parent
 * and in each test's child alike. Any failure other than "no driver, no
 * device" is left to the tests to report.
 */
#ifndef WEFT_TESTS_GPU_CUDA_SKIP_H
#define WEFT_TESTS_GPU_CUDA_SKIP_H

#include <stdio.h>
#include <unistd.h>

#include "gpu/backend.h"

#define WEFT_CUDA_SKIP_WITHOUT_DEVICES(suite)                                                     \
  __attribute__((constructor)) static void skip_without_devices(void)                            \
  {                                                                                               \
    weft_gpu_backend_config cfg;                                                                  \
    weft_gpu_backend_config_default(&cfg);                                                        \
    cfg.kind = WEFT_GPU_BACKEND_CUDA;                                                             \
    weft_gpu_backend *b = NULL;                                                                   \
    if (weft_gpu_backend_open(&b, &cfg) != 0)                                                     \
      return;                                                                                     \
    int n = weft_gpu_device_count(b);                                                             \
    weft_gpu_backend_close(b);                                                                    \
    if (n == 0) {                                                                                 \
      fprintf(stderr, suite ": no CUDA device (or no driver) on this machine: skipped\n");        \
      fflush(stderr);                                                                             \
      _exit(77);                                                                                  \
    }                                                                                             \
  }

#endif /* WEFT_TESTS_GPU_CUDA_SKIP_H */
