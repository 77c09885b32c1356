/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend's host-word writer of last resort (word_kernel.cu): a
 * one-thread kernel that makes every earlier write of the stream visible
 * system-wide, then stores value into the mapped host word. Used where the
 * driver offers no cuStreamWriteValue32, and by the CUDA tests
 * (weft_gpu_cuda_test_word_kernel) so that both writers are checked.
 */
#ifndef WEFT_GPU_CUDA_WORD_H
#define WEFT_GPU_CUDA_WORD_H
#include "gpu/layer.h" /* layer guard: no include from a lower layer */

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the kernel on stream; the launch's result (cudaLaunchKernel's,
 * not an earlier error left on the thread). */
cudaError_t weft_cuda_word_kernel_launch(cudaStream_t stream, void *dev_word, uint32_t value);
/* Loads the kernel on the calling thread's current device now
 * (cudaFuncGetAttributes), so that its first launch does not: under lazy
 * module loading (the default since CUDA 12.2) a first launch loads its
 * kernel, which may synchronise the context, i.e. wait for the kernels
 * running on the device. cudaFuncGetAttributes's result. */
cudaError_t weft_cuda_word_kernel_load(void);

/* Testing (not public): nonzero makes every host-word write use the
 * kernel, also where the driver offers cuStreamWriteValue32. */
void weft_gpu_cuda_test_word_kernel(int on);
/* Testing (not public): the host-word writes the kernel enqueued so far. */
long weft_gpu_cuda_test_word_kernel_writes(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_GPU_CUDA_WORD_H */
