/* SPDX-License-Identifier: MIT */
/*
 * Backend choice (WEFT_GPU_BACKEND), the checked entry points, the creation
 * fault hook, and the `none` backend (zero devices).
 */
#include <stdatomic.h>
#include <string.h>

#include "common/alloc.h"
#include "common/env.h"
#include "common/error.h"
#include "common/tunables.h"
#include "gpu/backend.h"
#include "weft/weft.h"

/* ------------------------------------------------------------ fault hook */

/* Testing only. relaxed: counters, they publish no data. */
static _Atomic long create_fail_at, create_calls;
static _Atomic int create_fail_code;

void weft_gpu_test_fail_create_at(long n, int code)
{
  atomic_store_explicit(&create_calls, 0, memory_order_relaxed);
  atomic_store_explicit(&create_fail_code, code, memory_order_relaxed);
  atomic_store_explicit(&create_fail_at, n, memory_order_relaxed);
}

long weft_gpu_test_create_calls(void)
{
  return atomic_load_explicit(&create_calls, memory_order_relaxed);
}

/* 0, or the injected failure for this creation. */
static int create_fault(void)
{
  long at = atomic_load_explicit(&create_fail_at, memory_order_relaxed);
  long n = atomic_fetch_add_explicit(&create_calls, 1, memory_order_relaxed) + 1;
  if (at > 0 && n >= at) {
    int code = atomic_load_explicit(&create_fail_code, memory_order_relaxed);
    return code ? code : WEFT_EAGAIN;
  }
  return 0;
}

/* ------------------------------------------------------------ none */

static void none_close(weft_gpu_backend *b)
{
  weft_free(b);
}

static const weft_gpu_backend_ops none_ops = {
  .name = "none",
  .close = none_close,
  /* With zero devices the checked entry points never reach the rest. */
};

int weft_gpu_none_open(weft_gpu_backend **out)
{
  weft_gpu_backend *b = weft_calloc(1, sizeof *b);
  if (!b)
    return WEFT_ENOMEM;
  b->ops = &none_ops;
  b->num_devices = 0;
  *out = b;
  return 0;
}

/* ------------------------------------------------------------ open */

void weft_gpu_backend_config_default(weft_gpu_backend_config *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = WEFT_GPU_BACKEND_AUTO;
}

static int parse_kind(weft_gpu_backend_kind *kind)
{
  const char *s = weft_env_str("WEFT_GPU_BACKEND");
  if (!s) {
    /* Without CUDA, no devices unless asked for: emulated devices are for
     * development and tests, and a program must not mistake one for a GPU. */
    *kind = WEFT_HAVE_CUDA ? WEFT_GPU_BACKEND_CUDA : WEFT_GPU_BACKEND_NONE;
    return 0;
  }
  if (strcmp(s, "cuda") == 0)
    *kind = WEFT_GPU_BACKEND_CUDA;
  else if (strcmp(s, "host") == 0)
    *kind = WEFT_GPU_BACKEND_HOST;
  else if (strcmp(s, "none") == 0)
    *kind = WEFT_GPU_BACKEND_NONE;
  else {
    weft_log("malformed WEFT_GPU_BACKEND=\"%s\": expected \"cuda\", \"host\" or \"none\"", s);
    return WEFT_EINVAL;
  }
  return 0;
}

int weft_gpu_backend_open(weft_gpu_backend **out, const weft_gpu_backend_config *cfg)
{
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_gpu_backend_config def;
  if (!cfg) {
    weft_gpu_backend_config_default(&def);
    cfg = &def;
  }
  if (cfg->host_devices < 0 || cfg->host_devices > WEFT_GPU_HOST_DEVICES_MAX ||
      cfg->host_jitter_us > WEFT_GPU_HOST_JITTER_MAX_US)
    return WEFT_EINVAL;

  weft_gpu_backend_kind kind = cfg->kind;
  switch (kind) {
  case WEFT_GPU_BACKEND_AUTO: {
    int rc = parse_kind(&kind);
    if (rc)
      return rc;
    break;
  }
  case WEFT_GPU_BACKEND_NONE:
  case WEFT_GPU_BACKEND_HOST:
  case WEFT_GPU_BACKEND_CUDA:
    break;
  default:
    return WEFT_EINVAL;
  }

  switch (kind) {
  case WEFT_GPU_BACKEND_HOST: {
    long devices = cfg->host_devices;
    if (devices == 0) {
      devices = 1;
      int rc = weft_env_int("WEFT_GPU_HOST_DEVICES", 1, WEFT_GPU_HOST_DEVICES_MAX, &devices);
      if (rc < 0)
        return rc;
    }
    return weft_gpu_host_open(out, (int)devices, cfg->host_jitter_us);
  }
  case WEFT_GPU_BACKEND_CUDA:
#if WEFT_HAVE_CUDA
    return weft_gpu_cuda_open(out);
#else
    /* Not built with CUDA: like a machine without a driver, no devices. */
    return weft_gpu_none_open(out);
#endif
  default:
    return weft_gpu_none_open(out);
  }
}

void weft_gpu_backend_close(weft_gpu_backend *b)
{
  if (b)
    b->ops->close(b);
}

/* ------------------------------------------------------------ entry points */

static int check_device(const weft_gpu_backend *b, int device)
{
  if (!b)
    return WEFT_EINVAL;
  if (device < 0 || device >= b->num_devices)
    return WEFT_ENODEV;
  return 0;
}

/* What a creation checks first: out, the device, the fault hook. */
static int create_check(const weft_gpu_backend *b, int device, void *out)
{
  if (!out)
    return WEFT_EINVAL;
  int rc = check_device(b, device);
  return rc ? rc : create_fault();
}

int weft_gpu_stream_create(weft_gpu_backend *b, int device, weft_gpu_stream **out)
{
  if (out)
    *out = NULL;
  int rc = create_check(b, device, out);
  return rc ? rc : b->ops->stream_create(b, device, out);
}

int weft_gpu_stream_destroy(weft_gpu_backend *b, weft_gpu_stream *s)
{
  if (!b || !s)
    return WEFT_EINVAL;
  return b->ops->stream_destroy(b, s);
}

void *weft_gpu_stream_native(weft_gpu_backend *b, weft_gpu_stream *s)
{
  if (!b || !s)
    return NULL;
  return b->ops->stream_native(b, s);
}

int weft_gpu_stream_sync(weft_gpu_backend *b, weft_gpu_stream *s)
{
  if (!b || !s)
    return WEFT_EINVAL;
  return b->ops->stream_sync(b, s);
}

int weft_gpu_bind_thread(weft_gpu_backend *b, int device)
{
  int rc = check_device(b, device);
  if (rc)
    return rc;
  return b->ops->bind_thread ? b->ops->bind_thread(b, device) : 0;
}

int weft_gpu_thread_init(weft_gpu_backend *b)
{
  if (!b)
    return WEFT_EINVAL;
  return b->ops->thread_init ? b->ops->thread_init(b) : 0;
}

int weft_gpu_event_create(weft_gpu_backend *b, int device, weft_gpu_event **out)
{
  if (out)
    *out = NULL;
  int rc = create_check(b, device, out);
  return rc ? rc : b->ops->event_create(b, device, out);
}

int weft_gpu_event_destroy(weft_gpu_backend *b, weft_gpu_event *e)
{
  if (!b || !e)
    return WEFT_EINVAL;
  return b->ops->event_destroy(b, e);
}

int weft_gpu_event_record(weft_gpu_backend *b, weft_gpu_event *e, weft_gpu_stream *s)
{
  if (!b || !e || !s)
    return WEFT_EINVAL;
  return b->ops->event_record(b, e, s);
}

int weft_gpu_event_query(weft_gpu_backend *b, weft_gpu_event *e)
{
  if (!b || !e)
    return WEFT_EINVAL;
  return b->ops->event_query(b, e);
}

int weft_gpu_stream_wait_event(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_event *e)
{
  if (!b || !s || !e)
    return WEFT_EINVAL;
  return b->ops->stream_wait_event(b, s, e);
}

int weft_gpu_copy_async(weft_gpu_backend *b, weft_gpu_stream *s, void *dst, const void *src,
                        size_t bytes, weft_gpu_copy_kind kind)
{
  if (!b || !s || (bytes && (!dst || !src)))
    return WEFT_EINVAL;
  if (kind != WEFT_GPU_COPY_H2D && kind != WEFT_GPU_COPY_D2H && kind != WEFT_GPU_COPY_D2D)
    return WEFT_EINVAL;
  if (bytes == 0)
    return 0;
  return b->ops->copy_async(b, s, dst, src, bytes, kind);
}

int weft_gpu_event_sync(weft_gpu_backend *b, weft_gpu_event *e)
{
  if (!b || !e)
    return WEFT_EINVAL;
  return b->ops->event_sync(b, e);
}

int weft_gpu_word_alloc(weft_gpu_backend *b, int device, weft_gpu_word *w)
{
  if (!w)
    return WEFT_EINVAL;
  w->host = NULL;
  w->dev = NULL;
  w->device = -1;
  int rc = check_device(b, device);
  return rc ? rc : b->ops->word_alloc(b, device, w);
}

void weft_gpu_word_free(weft_gpu_backend *b, weft_gpu_word *w)
{
  if (b && w && w->host) {
    b->ops->word_free(b, w);
    w->host = NULL;
    w->dev = NULL;
  }
}

int weft_gpu_stream_write_word(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_word *w,
                               uint32_t value)
{
  if (!b || !s || !w || !w->host)
    return WEFT_EINVAL;
  return b->ops->stream_write_word(b, s, w, value);
}

int weft_gpu_capture_begin(weft_gpu_backend *b, weft_gpu_stream *s)
{
  if (!b || !s)
    return WEFT_EINVAL;
  if (!b->ops->capture_begin)
    return WEFT_ENODEV;
  return b->ops->capture_begin(b, s);
}

int weft_gpu_capture_end(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_graph **out)
{
  if (out)
    *out = NULL;
  if (!b || !s)
    return WEFT_EINVAL;
  if (!b->ops->capture_end)
    return WEFT_ENODEV;
  if (out) {
    /* An instantiation is a creation: an injected failure still ends the
     * capture, as a real one does. */
    int rc = create_fault();
    if (rc) {
      (void)b->ops->capture_end(b, s, NULL);
      return rc;
    }
  }
  return b->ops->capture_end(b, s, out);
}

int weft_gpu_graph_launch(weft_gpu_backend *b, weft_gpu_graph *g, weft_gpu_stream *s)
{
  if (!b || !g || !s)
    return WEFT_EINVAL;
  if (!b->ops->graph_launch)
    return WEFT_ENODEV;
  return b->ops->graph_launch(b, g, s);
}

void weft_gpu_graph_destroy(weft_gpu_backend *b, weft_gpu_graph *g)
{
  if (b && g && b->ops->graph_destroy)
    b->ops->graph_destroy(b, g);
}
