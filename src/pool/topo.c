/* SPDX-License-Identifier: MIT */
#include "pool/topo.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/env.h"
#include "common/error.h"
#include "weft/weft.h"
#include "weft_config.h"

#if WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

int weft_topo_init(weft_topo *t)
{
  t->hw = NULL;
  t->nallowed = 0;
  t->allowed = NULL;
  cpu_set_t *set = NULL;
  size_t setsize = 0;
  /* The mask may be wider than cpu_set_t's default: grow until it fits. */
  for (int ncpu = 1024; ncpu <= (1 << 20); ncpu *= 2) {
    set = CPU_ALLOC((size_t)ncpu);
    if (!set)
      return WEFT_ENOMEM;
    setsize = CPU_ALLOC_SIZE((size_t)ncpu);
    if (sched_getaffinity(0, setsize, set) == 0)
      break;
    CPU_FREE(set);
    set = NULL;
    if (errno != EINVAL)
      break;
  }
  int count = set ? CPU_COUNT_S(setsize, set) : 0;
  t->allowed = weft_malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
  if (!t->allowed) {
    if (set)
      CPU_FREE(set);
    return WEFT_ENOMEM;
  }
  if (count > 0) {
    for (int cpu = 0; t->nallowed < count; cpu++)
      if (CPU_ISSET_S((size_t)cpu, setsize, set))
        t->allowed[t->nallowed++] = cpu;
  } else { /* no mask readable: assume CPU 0 only rather than fail */
    t->allowed[0] = 0;
    t->nallowed = 1;
  }
  if (set)
    CPU_FREE(set);
  return 0;
}

void weft_topo_destroy(weft_topo *t)
{
#if WEFT_HAVE_HWLOC
  if (t->hw)
    hwloc_topology_destroy((hwloc_topology_t)t->hw);
#endif
  t->hw = NULL;
  weft_free(t->allowed);
  t->allowed = NULL;
  t->nallowed = 0;
}

/* cgroup v2 "cpu.max" ("max 100000" or "QUOTA PERIOD") or v1's pair of files:
 * the quota in CPUs, rounded up; 0 when unlimited or unknown. */
static int quota_v2(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  char q[32];
  long period = 0;
  int n = fscanf(f, "%31s %ld", q, &period);
  fclose(f);
  if (n != 2 || period <= 0 || strcmp(q, "max") == 0)
    return 0;
  long quota = atol(q);
  return quota > 0 ? (int)((quota + period - 1) / period) : 0;
}

static int quota_v1(const char *dir)
{
  char p[256];
  long quota = -1, period = 0;
  snprintf(p, sizeof p, "%s/cpu.cfs_quota_us", dir);
  FILE *f = fopen(p, "r");
  if (!f)
    return 0;
  if (fscanf(f, "%ld", &quota) != 1)
    quota = -1;
  fclose(f);
  snprintf(p, sizeof p, "%s/cpu.cfs_period_us", dir);
  f = fopen(p, "r");
  if (!f)
    return 0;
  if (fscanf(f, "%ld", &period) != 1)
    period = 0;
  fclose(f);
  return (quota > 0 && period > 0) ? (int)((quota + period - 1) / period) : 0;
}

static int cgroup_quota(void)
{
  int best = 0;
  /* Our own cgroup v2 path and each of its ancestors: the smallest limit wins. */
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "0::", 3) != 0)
        continue;
      char *path = line + 3;
      path[strcspn(path, "\n")] = '\0';
      for (;;) {
        char file[640];
        snprintf(file, sizeof file, "/sys/fs/cgroup%s/cpu.max", strcmp(path, "/") ? path : "");
        int q = quota_v2(file);
        if (q > 0 && (best == 0 || q < best))
          best = q;
        char *slash = strrchr(path, '/');
        if (!slash || slash == path)
          break;
        *slash = '\0';
      }
    }
    fclose(f);
  }
  int q = quota_v2("/sys/fs/cgroup/cpu.max");
  if (q > 0 && (best == 0 || q < best))
    best = q;
  const char *v1[] = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"};
  for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
    q = quota_v1(v1[i]);
    if (q > 0 && (best == 0 || q < best))
      best = q;
  }
  return best;
}

int weft_topo_default_threads(const weft_topo *t)
{
  int n = t->nallowed;
  int q = cgroup_quota();
  if (q > 0 && q < n)
    n = q;
  return n > 0 ? n : 1;
}

static bool is_allowed(const weft_topo *t, long cpu)
{
  for (int i = 0; i < t->nallowed; i++)
    if (t->allowed[i] == cpu)
      return true;
  return false;
}

/* "0,2,4-7" -> cpus (repeated cyclically over n workers). */
static int parse_list(weft_topo *t, const char *spec, const char *origin, int n, int *cpus)
{
  int *list = weft_malloc(sizeof(int) * (size_t)t->nallowed);
  if (!list)
    return WEFT_ENOMEM;
  int len = 0;
  const char *p = spec;
  const char *why = NULL;
  long bad = -1;
  while (*p && !why) {
    char *end;
    if (*p < '0' || *p > '9') {
      why = "expected a CPU number";
      break;
    }
    long lo = strtol(p, &end, 10), hi = lo;
    p = end;
    if (*p == '-') {
      p++;
      if (*p < '0' || *p > '9') {
        why = "a range needs an upper bound";
        break;
      }
      hi = strtol(p, &end, 10);
      p = end;
      if (hi < lo) {
        why = "a range's upper bound is below its lower bound";
        break;
      }
    }
    for (long c = lo; c <= hi && !why; c++) {
      if (!is_allowed(t, c)) {
        why = "CPU not in this process's affinity mask";
        bad = c;
      } else {
        bool dup = false;
        for (int i = 0; i < len; i++)
          dup |= list[i] == (int)c;
        if (!dup)
          list[len++] = (int)c;
      }
    }
    if (why)
      break;
    if (*p == ',') {
      p++;
      if (!*p)
        why = "trailing comma";
    } else if (*p) {
      why = "unexpected character";
    }
  }
  if (!why && len == 0)
    why = "empty CPU list";
  if (why) {
    if (bad >= 0)
      weft_log("malformed %s=\"%s\": %s (CPU %ld)", origin, spec, why, bad);
    else
      weft_log("malformed %s=\"%s\": %s; expected none, compact, scatter or a cpu list like 0,2,4-7",
               origin, spec, why);
    weft_free(list);
    return WEFT_EINVAL;
  }
  for (int i = 0; i < n; i++)
    cpus[i] = list[i % len];
  weft_free(list);
  return 0;
}

#if WEFT_HAVE_HWLOC
static hwloc_topology_t load_hwloc(weft_topo *t)
{
  if (!t->hw) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
      return NULL;
    if (hwloc_topology_load(topo)) {
      hwloc_topology_destroy(topo);
      return NULL;
    }
    t->hw = topo;
  }
  return (hwloc_topology_t)t->hw;
}

/* Allowed CPUs in topology order: compact fills core after core; scatter
 * takes the k-th PU of every core before any (k+1)-th, interleaving packages. */
static int order_hwloc(weft_topo *t, bool scatter, int *order)
{
  hwloc_topology_t topo = load_hwloc(t);
  if (!topo)
    return 0;
  int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  int len = 0;
  if (!scatter) {
    for (int i = 0; i < npu && len < t->nallowed; i++) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
      if (pu && is_allowed(t, (long)pu->os_index))
        order[len++] = (int)pu->os_index;
    }
    return len;
  }
  int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  if (ncores <= 0)
    return 0;
  if (npkg <= 0)
    npkg = 1;
  for (int k = 0; len < t->nallowed && k < npu; k++) {       /* k-th PU of a core */
    for (int slot = 0; slot < ncores && len < t->nallowed; slot++) { /* core within package */
      for (int p = 0; p < npkg && len < t->nallowed; p++) {
        hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned)p);
        hwloc_obj_t core = pkg ? hwloc_get_obj_inside_cpuset_by_type(topo, pkg->cpuset,
                                                                     HWLOC_OBJ_CORE, (unsigned)slot)
                               : hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)slot);
        if (!core)
          continue;
        hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, core->cpuset, HWLOC_OBJ_PU,
                                                             (unsigned)k);
        if (pu && is_allowed(t, (long)pu->os_index))
          order[len++] = (int)pu->os_index;
      }
    }
  }
  return len;
}
#endif

int weft_topo_plan(weft_topo *t, const char *spec, const char *origin, int n, int *cpus)
{
  bool compact = strcmp(spec, "compact") == 0, scatter = strcmp(spec, "scatter") == 0;
  if (strcmp(spec, "none") == 0) {
    for (int i = 0; i < n; i++)
      cpus[i] = -1;
    return 0;
  }
  if (!compact && !scatter)
    return parse_list(t, spec, origin, n, cpus);
  int *order = weft_malloc(sizeof(int) * (size_t)t->nallowed);
  if (!order)
    return WEFT_ENOMEM;
  int len = 0;
#if WEFT_HAVE_HWLOC
  len = order_hwloc(t, scatter, order);
#endif
  if (len == 0) { /* no topology: the mask's order */
    for (int i = 0; i < t->nallowed; i++)
      order[i] = t->allowed[i];
    len = t->nallowed;
  }
  for (int i = 0; i < n; i++)
    cpus[i] = order[i % len];
  weft_free(order);
  return 0;
}

int weft_topo_bind_self(weft_topo *t, int cpu)
{
#if WEFT_HAVE_HWLOC
  if (t->hw) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
      return ENOMEM;
    hwloc_bitmap_only(set, (unsigned)cpu);
    int rc = hwloc_set_cpubind((hwloc_topology_t)t->hw, set, HWLOC_CPUBIND_THREAD);
    int err = rc ? (errno ? errno : EINVAL) : 0;
    hwloc_bitmap_free(set);
    return err;
  }
#else
  (void)t;
#endif
  cpu_set_t *set = CPU_ALLOC((size_t)cpu + 1);
  if (!set)
    return ENOMEM;
  size_t sz = CPU_ALLOC_SIZE((size_t)cpu + 1);
  CPU_ZERO_S(sz, set);
  CPU_SET_S((size_t)cpu, sz, set);
  int rc = pthread_setaffinity_np(pthread_self(), sz, set);
  CPU_FREE(set);
  return rc;
}

bool weft_topo_share_cache(weft_topo *t, int a, int b)
{
#if WEFT_HAVE_HWLOC
  hwloc_topology_t topo = load_hwloc(t);
  if (!topo || a < 0 || b < 0)
    return false;
  hwloc_obj_t pa = hwloc_get_pu_obj_by_os_index(topo, (unsigned)a);
  hwloc_obj_t pb = hwloc_get_pu_obj_by_os_index(topo, (unsigned)b);
  if (!pa || !pb)
    return false;
  hwloc_obj_t anc = hwloc_get_common_ancestor_obj(topo, pa, pb);
  return anc && (hwloc_obj_type_is_cache(anc->type) || anc->type == HWLOC_OBJ_CORE ||
                 anc->type == HWLOC_OBJ_PU);
#else
  (void)t;
  (void)a;
  (void)b;
  return false;
#endif
}
