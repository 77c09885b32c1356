/* SPDX-License-Identifier: MIT */
/*
 * Device fences on vars: a launched device operator's pending work, which
 * its successors respect on the device (same device) or on the host
 * (anything else). The protocol is described in src/deps/executor.h;
 * launch and device completion, which add and remove fences, are in
 * src/deps/executor.c.
 */
#ifndef WEFT_DEPS_FENCE_H
#define WEFT_DEPS_FENCE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "deps/opr.h"
#include "deps/var.h"

/* Under v's lock, for request r just granted on v: makes r's operator
 * respect v's fences, on the device or (one more on its wait counter;
 * returns true) on the host. */
bool weft_fence_check(weft_var_impl *v, weft_var_req *r);

#endif /* WEFT_DEPS_FENCE_H */
