/* SPDX-License-Identifier: MIT */
/*
 * xnn_mobilenet.h: a MobileNet v1 (1.0, 224x224x3, NHWC fp32) built with
 * XNNPACK's subgraph API, with random weights; shared by the pthreadpool
 * compat test (tests/compat/xnn_mobilenet.c) and the XNNPACK bench
 * (bench/pthreadpool/bench_xnnpack.c). Header of static inline functions only: include
 * it once per program, after defining _GNU_SOURCE (for dladdr).
 *
 * Written against Debian 12's XNNPACK (0.0~git20220216) and pthreadpool
 * (0.0~git20210507), and only their public APIs, so that a program built
 * with it runs unchanged on the stock libpthreadpool.so.0 and on a drop-in
 * replacement picked up through LD_LIBRARY_PATH.
 *
 *   xm_net net;
 *   xm_check(xnn_initialize(NULL), "xnn_initialize");
 *   xm_net_build(&net, pool);       // pool: pthreadpool_create(N), or NULL
 *   xm_net_run(&net);               // net.output: XM_CLASSES floats
 *   xm_net_free(&net);
 *   xm_check(xnn_deinitialize(), "xnn_deinitialize");
 *
 * The network: conv 3x3/2 to 32 channels, 13 depthwise-separable blocks
 * (dw 3x3 + pointwise 1x1, both with ReLU6 as output_min 0 / output_max 6),
 * global average pooling, fully connected 1024 -> 1000, softmax. Padding is
 * TensorFlow "SAME", given explicitly: 1 on every side for stride 1; for
 * stride 2 on an even size, 0 top/left and 1 bottom/right. Weights, biases
 * and the input come from a fixed-seed xorshift64* generator, weights
 * He-uniform (variance 2/fan_in), so the output is the same in every run and
 * every process, and stays finite.
 *
 * Every XNNPACK call is checked: a failure prints the call's name and the
 * status and exits with status 1.
 */
#ifndef WEFT_TESTS_COMPAT_XNN_MOBILENET_H
#define WEFT_TESTS_COMPAT_XNN_MOBILENET_H

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthreadpool.h>
#include <xnnpack.h>

enum {
  XM_IN_HW = 224,
  XM_IN_C = 3,
  XM_CLASSES = 1000,
  XM_IN_SIZE = XM_IN_HW * XM_IN_HW * XM_IN_C,
  XM_EXT_INPUT = 0, /* external value IDs */
  XM_EXT_OUTPUT = 1,
};

/* Exits with a message naming `what` unless `status` is success. */
static inline void xm_check(enum xnn_status status, const char *what)
{
  if (status != xnn_status_success) {
    fprintf(stderr, "error: %s failed (xnn_status %d)\n", what, (int)status);
    exit(1);
  }
}

/* malloc that exits on failure. */
/* A positive decimal count up to max; anything else calls usage() (the two
 * programs' command lines). */
static inline size_t xm_parse_count(const char *s, unsigned long long max, void (*usage)(void))
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v == 0 || s[0] == '-' || v > max)
    usage();
  return (size_t)v;
}

static inline void *xm_alloc(size_t bytes)
{
  void *p = malloc(bytes);
  if (p == NULL) {
    fprintf(stderr, "error: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* ---- deterministic random numbers: xorshift64* ---- */

typedef struct {
  uint64_t s;
} xm_rng;

static inline xm_rng xm_rng_seeded(uint64_t seed)
{
  xm_rng r = {seed ? seed : 0x9E3779B97F4A7C15u};
  return r;
}

/* Uniform in [-1, 1), from the top 24 bits (exact in a float). */
static inline float xm_rng_next(xm_rng *r)
{
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  uint64_t x = r->s * 0x2545F4914F6CDD1Du;
  return (float)(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* Fills p[0..n) with uniform values in [-scale, scale). */
static inline void xm_fill(xm_rng *r, float *p, size_t n, float scale)
{
  for (size_t i = 0; i < n; i++)
    p[i] = xm_rng_next(r) * scale;
}

/* He-uniform bound: uniform in [-a, a) has variance a^2/3 = 2/fan_in. */
static inline float xm_he_scale(size_t fan_in)
{
  return sqrtf(6.0f / (float)fan_in);
}

static inline int xm_all_finite(const float *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!isfinite(p[i]))
      return 0;
  return 1;
}

/* ---- which shared object provides pthreadpool ---- */

/* Path of the object that defines pthreadpool_create, as the dynamic linker
 * resolved it for this process (dladdr on the function's address; with the
 * PIE executables Debian's gcc makes by default that is the library's own
 * definition). Never NULL. */
static inline const char *xm_pool_lib(void)
{
  pthreadpool_t (*fn)(size_t) = pthreadpool_create;
  void *addr;
  Dl_info info;
  memcpy(&addr, &fn, sizeof addr); /* ISO C has no function->object cast */
  if (dladdr(addr, &info) == 0 || info.dli_fname == NULL)
    return "(unknown)";
  return info.dli_fname;
}

/* ---- the network ---- */

typedef struct {
  xnn_subgraph_t subgraph;
  xnn_runtime_t runtime;
  float **blobs; /* static weights; must outlive the runtime */
  size_t nblobs, capblobs;
  float *input;  /* 1 x 224 x 224 x 3 */
  float *output; /* 1 x 1000 */
  xm_rng rng;
} xm_net;

/* Current activation: value ID and NHWC shape (N = 1). */
typedef struct {
  uint32_t id;
  size_t h, w, c;
} xm_act;

/* A new blob of n random values in [-scale, scale), owned by the net. */
static inline const float *xm_blob(xm_net *net, size_t n, float scale)
{
  if (net->nblobs == net->capblobs) {
    size_t cap = net->capblobs ? 2 * net->capblobs : 64;
    float **b = realloc(net->blobs, cap * sizeof *b);
    if (b == NULL) {
      fprintf(stderr, "error: out of memory\n");
      exit(1);
    }
    net->blobs = b;
    net->capblobs = cap;
  }
  float *p = xm_alloc(n * sizeof *p);
  xm_fill(&net->rng, p, n, scale);
  net->blobs[net->nblobs++] = p;
  return p;
}

static inline uint32_t xm_value(xm_net *net, size_t ndims, const size_t *dims, const float *data,
                                uint32_t ext_id, uint32_t flags)
{
  uint32_t id;
  xm_check(xnn_define_tensor_value(net->subgraph, xnn_datatype_fp32, ndims, dims, data, ext_id,
                                   flags, &id),
           "xnn_define_tensor_value");
  return id;
}

/* An internal 1 x h x w x c activation value. */
static inline uint32_t xm_act_value(xm_net *net, size_t h, size_t w, size_t c)
{
  const size_t dims[4] = {1, h, w, c};
  return xm_value(net, 4, dims, NULL, XNN_INVALID_VALUE_ID, 0);
}

/* A static filter of the given dims, He-scaled for fan_in, and its bias. */
static inline uint32_t xm_filter(xm_net *net, size_t ndims, const size_t *dims, size_t fan_in)
{
  size_t n = 1;
  for (size_t i = 0; i < ndims; i++)
    n *= dims[i];
  return xm_value(net, ndims, dims, xm_blob(net, n, xm_he_scale(fan_in)), XNN_INVALID_VALUE_ID, 0);
}

static inline uint32_t xm_bias(xm_net *net, size_t n)
{
  const size_t dims[1] = {n};
  return xm_value(net, 1, dims, xm_blob(net, n, 0.05f), XNN_INVALID_VALUE_ID, 0);
}

/* TensorFlow SAME padding for one dimension of size `in`. */
typedef struct {
  uint32_t before, after;
  size_t out;
} xm_pad;

static inline xm_pad xm_same(size_t in, uint32_t k, uint32_t stride)
{
  xm_pad p;
  p.out = (in + stride - 1) / stride;
  size_t need = (p.out - 1) * stride + k;
  size_t total = need > in ? need - in : 0;
  p.before = (uint32_t)(total / 2);
  p.after = (uint32_t)(total - total / 2);
  return p;
}

/* Dense k x k convolution with ReLU6; returns the output activation. */
static inline xm_act xm_conv(xm_net *net, xm_act in, size_t cout, uint32_t k, uint32_t stride)
{
  xm_pad ph = xm_same(in.h, k, stride), pw = xm_same(in.w, k, stride);
  const size_t fdims[4] = {cout, k, k, in.c};
  uint32_t filter = xm_filter(net, 4, fdims, (size_t)k * k * in.c);
  uint32_t bias = xm_bias(net, cout);
  xm_act out = {xm_act_value(net, ph.out, pw.out, cout), ph.out, pw.out, cout};
  xm_check(xnn_define_convolution_2d(net->subgraph, ph.before, pw.after, ph.after, pw.before, k, k,
                                     stride, stride, 1, 1, 1, in.c, cout, 0.0f, 6.0f, in.id, filter,
                                     bias, out.id, 0),
           "xnn_define_convolution_2d");
  return out;
}

/* Depthwise 3x3 convolution (multiplier 1) with ReLU6. */
static inline xm_act xm_dwconv(xm_net *net, xm_act in, uint32_t stride)
{
  xm_pad ph = xm_same(in.h, 3, stride), pw = xm_same(in.w, 3, stride);
  const size_t fdims[4] = {1, 3, 3, in.c};
  uint32_t filter = xm_filter(net, 4, fdims, 9);
  uint32_t bias = xm_bias(net, in.c);
  xm_act out = {xm_act_value(net, ph.out, pw.out, in.c), ph.out, pw.out, in.c};
  xm_check(xnn_define_depthwise_convolution_2d(net->subgraph, ph.before, pw.after, ph.after,
                                               pw.before, 3, 3, stride, stride, 1, 1, 1, in.c, 0.0f,
                                               6.0f, in.id, filter, bias, out.id, 0),
           "xnn_define_depthwise_convolution_2d");
  return out;
}

/* Global average pooling, fully connected to XM_CLASSES, softmax into the
 * external output. */
static inline void xm_head(xm_net *net, xm_act in)
{
  uint32_t pooled = xm_act_value(net, 1, 1, in.c);
  xm_check(
      xnn_define_global_average_pooling_2d(net->subgraph, -INFINITY, INFINITY, in.id, pooled, 0),
      "xnn_define_global_average_pooling_2d");
  const size_t fdims[2] = {XM_CLASSES, in.c};
  const size_t odims[2] = {1, XM_CLASSES};
  uint32_t filter = xm_filter(net, 2, fdims, in.c);
  uint32_t bias = xm_bias(net, XM_CLASSES);
  uint32_t logits = xm_value(net, 2, odims, NULL, XNN_INVALID_VALUE_ID, 0);
  xm_check(xnn_define_fully_connected(net->subgraph, -INFINITY, INFINITY, pooled, filter, bias,
                                      logits, XNN_FLAG_TENSORFLOW_RESHAPE_2D),
           "xnn_define_fully_connected");
  uint32_t out = xm_value(net, 2, odims, NULL, XM_EXT_OUTPUT, XNN_VALUE_FLAG_EXTERNAL_OUTPUT);
  xm_check(xnn_define_softmax(net->subgraph, logits, out, 0), "xnn_define_softmax");
}

/* Defines the whole network in net->subgraph. */
static inline void xm_define(xm_net *net)
{
  static const struct {
    uint32_t stride;
    size_t cout;
  } blocks[13] = {{1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256},  {2, 512}, {1, 512},
                  {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};
  const size_t idims[4] = {1, XM_IN_HW, XM_IN_HW, XM_IN_C};
  xm_act a = {xm_value(net, 4, idims, NULL, XM_EXT_INPUT, XNN_VALUE_FLAG_EXTERNAL_INPUT), XM_IN_HW,
              XM_IN_HW, XM_IN_C};
  a = xm_conv(net, a, 32, 3, 2);
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    a = xm_dwconv(net, a, blocks[i].stride);
    a = xm_conv(net, a, blocks[i].cout, 1, 1);
  }
  xm_head(net, a);
}

/* Builds the network and a runtime on `pool` (NULL: caller's thread only),
 * with its input filled and the external buffers bound. XNNPACK must
 * already be initialized. */
static inline void xm_net_build(xm_net *net, pthreadpool_t pool)
{
  memset(net, 0, sizeof *net);
  net->rng = xm_rng_seeded(0x5EEDF00DCAFEBABEu);
  net->input = xm_alloc(XM_IN_SIZE * sizeof *net->input);
  net->output = xm_alloc(XM_CLASSES * sizeof *net->output);
  xm_fill(&net->rng, net->input, XM_IN_SIZE, 1.0f);
  xm_check(xnn_create_subgraph(2, 0, &net->subgraph), "xnn_create_subgraph");
  xm_define(net);
  xm_check(xnn_create_runtime_v2(net->subgraph, pool, 0, &net->runtime), "xnn_create_runtime_v2");
  const struct xnn_external_value ext[2] = {{XM_EXT_INPUT, net->input},
                                            {XM_EXT_OUTPUT, net->output}};
  xm_check(xnn_setup_runtime(net->runtime, 2, ext), "xnn_setup_runtime");
}

/* One inference: net->input -> net->output. */
static inline void xm_net_run(xm_net *net)
{
  xm_check(xnn_invoke_runtime(net->runtime), "xnn_invoke_runtime");
}

static inline void xm_net_free(xm_net *net)
{
  if (net->runtime != NULL)
    xm_check(xnn_delete_runtime(net->runtime), "xnn_delete_runtime");
  if (net->subgraph != NULL)
    xm_check(xnn_delete_subgraph(net->subgraph), "xnn_delete_subgraph");
  for (size_t i = 0; i < net->nblobs; i++)
    free(net->blobs[i]);
  free(net->blobs);
  free(net->input);
  free(net->output);
  memset(net, 0, sizeof *net);
}

#endif /* WEFT_TESTS_COMPAT_XNN_MOBILENET_H */
