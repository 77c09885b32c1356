/* SPDX-License-Identifier: MIT */
/*
 * Test kernels for the cuda suite, with C-callable launchers. Each launcher
 * enqueues on the given stream and returns the launch's cudaError_t (0 on
 * success) as an int. weft_test_kernels_load loads them all first (lazy
 * module loading, below).
 */
#include <cuda_runtime.h>

__global__ void weft_test_add_kernel(float *a, float v, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    a[i] += v;
}

__global__ void weft_test_spin_kernel(long long cycles)
{
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

/* Spins until *open is non-zero (the host writes it: pinned, mapped
 * memory, read afresh by each volatile load), or until timeout_ns of the
 * GPU's global timer have passed: then sets *timed_out and returns. */
__global__ void weft_test_gate_kernel(const volatile int *open, volatile int *timed_out,
                                      long long timeout_ns)
{
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*open == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if ((long long)(now - start) > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

/* a[i] += v for i in [0, n), a in device memory. */
extern "C" int weft_test_kernel_add(float *a, float v, int n, cudaStream_t s)
{
  if (n <= 0)
    return 0;
  weft_test_add_kernel<<<(n + 255) / 256, 256, 0, s>>>(a, v, n);
  return (int)cudaGetLastError();
}

/* Occupies the stream for about `cycles` GPU clock cycles. */
extern "C" int weft_test_kernel_spin(long long cycles, cudaStream_t s)
{
  weft_test_spin_kernel<<<1, 1, 0, s>>>(cycles);
  return (int)cudaGetLastError();
}

/* Holds the stream until the host sets *open (an int in pinned memory
 * mapped into the device; open and timed_out are its device addresses). */
extern "C" int weft_test_kernel_gate(const void *open, void *timed_out, long long timeout_ns,
                                     cudaStream_t s)
{
  weft_test_gate_kernel<<<1, 1, 0, s>>>((const volatile int *)open, (volatile int *)timed_out,
                                        timeout_ns);
  return (int)cudaGetLastError();
}

/* Loads every kernel above on the current device now (cudaFuncGetAttributes)
 * and returns the first failure (0: all loaded). Under lazy module loading
 * (the default since CUDA 12.2) a kernel's first launch loads it, which may
 * synchronise the context: a first launch behind a running gate kernel
 * would wait for it (and the gate waits for the test), and one during a
 * stream capture would load while capturing. The suite loads them before
 * any scenario. */
extern "C" int weft_test_kernels_load(void)
{
  const void *kernels[] = {(const void *)weft_test_add_kernel, (const void *)weft_test_spin_kernel,
                           (const void *)weft_test_gate_kernel};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, kernels[i]);
    if (err != cudaSuccess)
      return (int)err;
  }
  return 0;
}
