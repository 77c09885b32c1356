/*
 * Test kernels for the cuda suite, with C-callable launchers. Each launcher
 * enqueues on the given stream and returns the launch's cudaError_t (0 on
 * success) as an int.
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
