/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu's kernels, with C-callable launchers (bench_gpu_shared.h). Each
 * launcher enqueues on the given stream and returns the launch's
 * cudaError_t as an int (0: launched).
 *
 * Durations are spun on %globaltimer (nanoseconds of the GPU's wall clock)
 * rather than clock64 (cycles), so that a length does not depend on the
 * clock the GPU happens to run at.
 */
#include <cuda_runtime.h>

#include "bench_gpu_shared.h"

static __device__ __forceinline__ unsigned long long gb_globaltimer(void)
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* One thread: the chain's link i of n (see gb_cuda_step). */
__global__ void gb_step_kernel(unsigned *counter, unsigned *errors, unsigned i, unsigned n)
{
  unsigned v = *counter;
  if (v % n != i)
    *errors += 1;
  *counter = v + 1;
}

/* One thread: spins ns, then writes seq to the mapped host word (if any)
 * as its last act, so that a CPU watching the word sees the kernel's end. */
__global__ void gb_spin_kernel(unsigned long long ns, volatile unsigned *flag, unsigned seq)
{
  unsigned long long t0 = gb_globaltimer();
  while (gb_globaltimer() - t0 < ns) {
  }
  if (flag) {
    __threadfence_system();
    *flag = seq;
  }
}

/* One thread: see gb_cuda_hold. */
__global__ void gb_hold_kernel(const volatile unsigned *release, volatile unsigned *timed_out,
                               unsigned long long timeout_ns)
{
  unsigned long long t0 = gb_globaltimer();
  while (*release == 0)
    if (gb_globaltimer() - t0 > timeout_ns) {
      *timed_out = 1;
      return;
    }
}

/* C4's compute stage: transforms the chunk (grid-stride) while thread 0
 * of block 0 holds the kernel open for ns, so that the stage lasts about
 * ns whatever the chunk's size. */
__global__ void gb_stage_kernel(const unsigned *in, unsigned *out, size_t n, unsigned key,
                                unsigned long long ns)
{
  bool timer = blockIdx.x == 0 && threadIdx.x == 0;
  unsigned long long t0 = timer ? gb_globaltimer() : 0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = GB_STAGE_VALUE(in[i], key);
  if (timer)
    while (gb_globaltimer() - t0 < ns) {
    }
}

extern "C" int gb_cuda_step(void *stream, unsigned *counter, unsigned *errors, unsigned i,
                            unsigned n)
{
  gb_step_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(counter, errors, i, n);
  return (int)cudaGetLastError();
}

extern "C" int gb_cuda_spin(void *stream, uint64_t ns, unsigned *flag, unsigned seq)
{
  gb_spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns, flag, seq);
  return (int)cudaGetLastError();
}

extern "C" int gb_cuda_hold(void *stream, const unsigned *release, unsigned *timed_out,
                            uint64_t timeout_ns)
{
  gb_hold_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(release, timed_out, timeout_ns);
  return (int)cudaGetLastError();
}

extern "C" int gb_cuda_stage(void *stream, const unsigned *in, unsigned *out, size_t n,
                             unsigned key, uint64_t ns)
{
  gb_stage_kernel<<<1024, 256, 0, (cudaStream_t)stream>>>(in, out, n, key, ns);
  return (int)cudaGetLastError();
}
