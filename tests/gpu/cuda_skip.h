/* SPDX-License-Identifier: MIT */
/*
 * The CUDA suites' skip (test_cuda.c, test_cuda_faults.c): without a
 * device the whole executable reports itself skipped (exit 77, which meson
 * counts as SKIP), because Criterion leaves skipped tests out of its
 * closing "Synthesis" count, so per-test skips alone would count as
 * nothing. A constructor: it runs before the runner's main, in the parent
 * and in each test's child alike.
 *
 * Only where no GPU is present (gpu_present.h: /dev/nvidia<N>, or an entry
 * of /proc/driver/nvidia/gpus): on a machine with a GPU that the CUDA
 * backend cannot use (no device from a driver too old for this build's
 * runtime, a broken install, CUDA_VISIBLE_DEVICES hiding it) the
 * executable fails (exit 1) with one line naming the GPU found, the CUDA
 * version the driver supports and the one the runtime needs, so that a run
 * on a GPU machine never reads a skip as a pass. WEFT_TEST_GPU_ROOT, when
 * set, is the directory looked in instead of "/" (testing this rule:
 * tests/gpu/cuda_skip_check.sh). Where CUDA finds a device, or no GPU is
 * present but the backend failed to open, the tests run (and report that
 * failure).
 */
#ifndef WEFT_TESTS_GPU_CUDA_SKIP_H
#define WEFT_TESTS_GPU_CUDA_SKIP_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/backend.h"
#include "gpu_present.h"

/* A GPU is present (what: gpu_present's evidence) but the backend has no
 * device (open_rc: its open's result): says why, exits 1. */
static inline void weft_cuda_unusable_(const char *suite, const char *what, int open_rc)
{
  int drv = 0, rt = CUDART_VERSION;
  if (cudaDriverGetVersion(&drv) != cudaSuccess)
    drv = -1;
  (void)cudaRuntimeGetVersion(&rt);
  (void)cudaGetLastError();
  char driver[96];
  if (drv > 0)
    snprintf(driver, sizeof driver, "supports CUDA %d.%d (cudaDriverGetVersion %d)", drv / 1000,
             drv % 1000 / 10, drv);
  else
    snprintf(driver, sizeof driver, "could not be loaded (cudaDriverGetVersion %d)", drv);
  const char *hidden = getenv("CUDA_VISIBLE_DEVICES");
  fprintf(stderr,
          "%s: FAILED, not skipped: a GPU is present (%s) but the CUDA backend %s; the driver "
          "%s, this build's runtime is CUDA %d.%d and needs a driver for CUDA %d.0 or "
          "newer%s%s%s\n",
          suite, what, open_rc ? "did not open" : "found no device", driver, rt / 1000,
          rt % 1000 / 10, rt / 1000, hidden ? "; CUDA_VISIBLE_DEVICES=\"" : "",
          hidden ? hidden : "", hidden ? "\"" : "");
  fflush(stderr);
  _exit(1);
}

#define WEFT_CUDA_SKIP_WITHOUT_DEVICES(suite)                                                     \
  __attribute__((constructor)) static void skip_without_devices(void)                            \
  {                                                                                               \
    weft_gpu_backend_config cfg;                                                                  \
    weft_gpu_backend_config_default(&cfg);                                                        \
    cfg.kind = WEFT_GPU_BACKEND_CUDA;                                                             \
    weft_gpu_backend *b = NULL;                                                                   \
    int rc = weft_gpu_backend_open(&b, &cfg);                                                     \
    int n = rc ? 0 : weft_gpu_device_count(b);                                                    \
    weft_gpu_backend_close(b);                                                                    \
    if (n > 0)                                                                                    \
      return;                                                                                     \
    const char *root = getenv("WEFT_TEST_GPU_ROOT");                                              \
    char what[512];                                                                               \
    if (gpu_present(root && *root ? root : "/", what, sizeof what))                               \
      weft_cuda_unusable_(suite, what, rc);                                                       \
    if (rc != 0)                                                                                  \
      return; /* the tests report it */                                                          \
    fprintf(stderr, suite ": no GPU on this machine (no /dev/nvidia<N>, no CUDA device): "       \
                    "skipped\n");                                                                 \
    fflush(stderr);                                                                               \
    _exit(77);                                                                                    \
  }

#endif /* WEFT_TESTS_GPU_CUDA_SKIP_H */
