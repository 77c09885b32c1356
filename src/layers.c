/*
 * The composition root: the one place that knows every layer. The engine
 * (src/deps/) defines the executor interface and asks here for the device
 * executor; the GPU layer (src/gpu/) provides it. Keeping this outside both
 * layers keeps src/deps/ free of any reference to src/gpu/ (design.md §1),
 * and a static link pulls the GPU layer in through this file.
 */
#include "deps/executor.h"
#include "gpu/gpu.h"

const weft_executor_ops *weft_engine_device_executor(void)
{
  return &weft_gpu_executor_ops;
}
