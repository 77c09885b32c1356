/* SPDX-License-Identifier: MIT */
/*
 * Whether this machine has an NVIDIA GPU, judged without CUDA (header only,
 * C): the CUDA suites (cuda_skip.h) and bench_gpu must fail, not skip,
 * where a GPU is present but CUDA finds no device (a driver too old for
 * the toolkit's runtime, say), or a device run of them reads green.
 *
 * A GPU is present when root/dev has a node nvidia<N> (N a number: the
 * driver makes one per GPU, and a container is given those of its GPUs;
 * nvidiactl, nvidia-uvm and nvidia-modeset are not GPUs), or when
 * root/proc/driver/nvidia/gpus has an entry (the kernel module's, one per
 * GPU). root is "/" but for tests of this rule (WEFT_TEST_GPU_ROOT, see
 * cuda_skip.h).
 */
#ifndef WEFT_TESTS_GPU_GPU_PRESENT_H
#define WEFT_TESTS_GPU_GPU_PRESENT_H

#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The first entry of dir (under root) that names a GPU, into what
 * ("dev/nvidia0"); false if none (or no such directory). prefix "": any
 * entry counts; else only prefix followed by digits alone. */
static inline bool gpu_present_entry_(const char *root, const char *dir, const char *prefix,
                                      char *what, size_t cap)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, dir);
  DIR *d = opendir(path);
  if (!d)
    return false;
  bool found = false;
  size_t n = strlen(prefix);
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    const char *name = e->d_name;
    if (name[0] == '.' || strncmp(name, prefix, n) != 0)
      continue;
    bool gpu = n == 0 || name[n] != '\0';
    for (const char *p = name + n; n && *p && gpu; p++)
      gpu = isdigit((unsigned char)*p) != 0;
    if (gpu) {
      snprintf(what, cap, "%s/%s", dir, name);
      found = true;
    }
  }
  closedir(d);
  return found;
}

/* Whether root has an NVIDIA GPU (above). If so, what names the evidence:
 * the node or entry found and, when the kernel module says it, its version
 * line (root/proc/driver/nvidia/version: "NVRM version: ... 570.124.06
 * ..."). */
static inline bool gpu_present(const char *root, char *what, size_t cap)
{
  if (!gpu_present_entry_(root, "dev", "nvidia", what, cap) &&
      !gpu_present_entry_(root, "proc/driver/nvidia/gpus", "", what, cap))
    return false;
  char path[4096], line[256] = "";
  snprintf(path, sizeof path, "%s/proc/driver/nvidia/version", root);
  FILE *f = fopen(path, "r");
  if (f) {
    if (!fgets(line, sizeof line, f))
      line[0] = '\0';
    fclose(f);
  }
  line[strcspn(line, "\n")] = '\0';
  size_t k = strlen(what);
  if (line[0] && k + 3 < cap)
    snprintf(what + k, cap - k, "; %s", line);
  return true;
}

#endif /* WEFT_TESTS_GPU_GPU_PRESENT_H */
