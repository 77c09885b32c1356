/* SPDX-License-Identifier: MIT */
/*
 * Topology and affinity: how many CPUs the process may use, where each worker
 * is pinned (WEFT_AFFINITY), and which workers share a cache. hwloc when
 * built with it; the affinity mask and sysfs otherwise.
 */
#ifndef WEFT_POOL_TOPO_H
#define WEFT_POOL_TOPO_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

typedef struct weft_topo {
  void *hw;      /* hwloc_topology_t, loaded only when workers are pinned */
  int nallowed;  /* CPUs in the affinity mask */
  int *allowed;  /* their OS indices, ascending */
} weft_topo;

/* Reads the affinity mask. Returns 0 or WEFT_ENOMEM. */
int weft_topo_init(weft_topo *t);
void weft_topo_destroy(weft_topo *t);

/* The default worker count: CPUs in the affinity mask, capped by the cgroup
 * CPU quota (rounded up), at least 1. */
int weft_topo_default_threads(const weft_topo *t);

/* Plans where each of n workers runs: cpus[i] = OS CPU index, or -1 for
 * unbound. spec: "none" | "compact" | "scatter" | a cpu list "0,2,4-7" whose
 * CPUs must all be in the affinity mask. origin names the source for the
 * error message (e.g. "WEFT_AFFINITY"). Returns 0, WEFT_EINVAL (after one
 * line on stderr) or WEFT_ENOMEM. */
int weft_topo_plan(weft_topo *t, const char *spec, const char *origin, int n, int *cpus);

/* Pins the calling thread to cpu. Returns 0 or an errno value. */
int weft_topo_bind_self(weft_topo *t, int cpu);

/* Whether two CPUs share a cache (or a core). False when unknown. */
bool weft_topo_share_cache(weft_topo *t, int a, int b);

#endif /* WEFT_POOL_TOPO_H */
