/*
 * The host-word kernel (cuda_word.h): one thread, after every earlier
 * kernel and copy of its stream (stream order), fences system-wide so that
 * their writes reach host memory before the word does, then writes the
 * word. Compiled by nvcc for -Dgpu_archs (meson.build).
 */
#include "gpu/cuda_word.h"

static __global__ void weft_word_kernel(volatile uint32_t *word, uint32_t value)
{
  __threadfence_system();
  *word = value;
}

extern "C" cudaError_t weft_cuda_word_kernel_launch(cudaStream_t stream, void *dev_word,
                                                     uint32_t value)
{
  weft_word_kernel<<<1, 1, 0, stream>>>((volatile uint32_t *)dev_word, value);
  return cudaGetLastError();
}
