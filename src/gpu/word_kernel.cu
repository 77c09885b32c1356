/* SPDX-License-Identifier: MIT */
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
  volatile uint32_t *word = (volatile uint32_t *)dev_word;
  void *args[] = {&word, &value};
  /* The launch's own result: cudaGetLastError after a <<<>>> launch would
   * also return an error an operator's fn left on this thread. */
  return cudaLaunchKernel((const void *)weft_word_kernel, dim3(1), dim3(1), args, 0, stream);
}

extern "C" cudaError_t weft_cuda_word_kernel_load(void)
{
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, (const void *)weft_word_kernel);
}
