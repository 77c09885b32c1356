/*
 * The composition root: the one place that knows every layer. The engine
 * (src/deps/) defines the executor interface; the GPU layer (src/gpu/)
 * provides one; here the public weft_engine_create hands it to each engine.
 * Keeping this above both layers keeps src/deps/ free of any reference to
 * src/gpu/ (design.md §1) with every call running downward, and a static
 * link pulls the GPU layer in through this file.
 */
#include "deps/executor.h"
#include "gpu/gpu.h"

int weft_engine_create(weft_engine **out, const weft_engine_config *cfg)
{
  return weft_engine_create_with(out, cfg, &weft_gpu_executor_ops);
}
