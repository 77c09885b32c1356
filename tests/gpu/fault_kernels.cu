/* SPDX-License-Identifier: MIT */
/*
 * Kernels of the CUDA fault suite (test_cuda_faults.c, early_release.h,
 * watchdog.h): a reader that keeps reading a buffer (a canary in mapped host memory) and
 * records every observation, spinning until its host-mapped stop flag or
 * its time limit (the watchdog's scenarios hold it past
 * WEFT_GPU_WATCHDOG_MS that way), and a kernel that fails the device
 * (__trap: a sticky error, which aborts every kernel of the context, the
 * other streams' included).
 */
#include <cuda_runtime.h>

#include "early_release_words.h"

static __device__ unsigned long long er_ns(void)
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Reads r->canary until r->stop or max_ns of the GPU's global timer: each
 * read counts a beat, a read that sees the buffer overwritten counts as
 * bad. The fences push each record out to host memory at once, so the
 * host sees the kernel alive (beats moving) for as long as it runs. */
__global__ void weft_test_er_read_kernel(er_reader *r, long long max_ns)
{
  unsigned long long t0 = er_ns(), beats = 0;
  r->started = 1;
  __threadfence_system();
  for (;;) {
    int c = r->canary;
    beats++;
    if (c != ER_CANARY) {
      int bad = r->bad;
      if (bad == 0)
        r->first_bad = beats;
      r->bad = bad + 1;
    }
    r->beats = beats;
    __threadfence_system();
    if (r->stop || (long long)(er_ns() - t0) > max_ns)
      break;
  }
  r->finished = 1;
  __threadfence_system();
}

/* Says it ran, then fails the device: the trap is a sticky error of the
 * context (every later CUDA call of the process reports it). */
__global__ void weft_test_er_trap_kernel(er_trap *t)
{
  t->ran = 1;
  __threadfence_system();
  __trap();
}

extern "C" int weft_test_er_read(er_reader *r, long long max_ns, void *s)
{
  weft_test_er_read_kernel<<<1, 1, 0, (cudaStream_t)s>>>(r, max_ns);
  return (int)cudaGetLastError();
}

extern "C" int weft_test_er_trap(er_trap *t, void *s)
{
  weft_test_er_trap_kernel<<<1, 1, 0, (cudaStream_t)s>>>(t);
  return (int)cudaGetLastError();
}

/* Loads both kernels on the current device now (cudaFuncGetAttributes); the
 * first failure, or 0. Under lazy module loading a first launch loads its
 * kernel, which may synchronise the context: the trap's first launch while
 * the readers run would wait for them to finish reading, and the scenario
 * would test nothing. */
extern "C" int weft_test_er_load(void)
{
  cudaFuncAttributes attr;
  cudaError_t err = cudaFuncGetAttributes(&attr, (const void *)weft_test_er_read_kernel);
  if (err == cudaSuccess)
    err = cudaFuncGetAttributes(&attr, (const void *)weft_test_er_trap_kernel);
  return (int)err;
}
