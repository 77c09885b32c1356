/* SPDX-License-Identifier: MIT */
/*
 * Retiring launched operators: one pass over every lane (weft_gpu_sweep),
 * in the engine's completion mode. The completion thread only (poller.c
 * decides when to sweep, spin, sleep or block).
 *
 * A lane's operators complete in launch order (one stream), so only its
 * head can be next, and a word that says n retires every operator up to
 * seq n at once.
 *
 * hostword: the head is done when its lane's word (backend.h) reached its
 * seq: a plain load, no driver call. A head whose word is overdue
 * (WEFT_GPU_WORD_OVERDUE_NS after it was first seen pending, and again
 * every as long) gets its event queried: complete retires it (the word is
 * late), an error fails it (a device error stops the words), pending goes
 * on waiting under the watchdog.
 * event, blocking: the head's event is queried, as before host words.
 *
 * A device error fails only the operators whose own events report it (and
 * those not yet launched, at their worker): one on another stream of the
 * failed device completes when its own work does, never early.
 *
 * Watchdog: once an operator is pending for the executor's watchdog_ns, its
 * device fails at once (later operators on it fail at their worker without
 * running: WEFT_EDEVICE), and the lane is given up: that operator and every
 * one behind it on its stream fail with WEFT_EDEVICE. But each still retires
 * only when its own word or event says its work stopped (completed, or
 * failed), as any other: its fences stay on its vars until then, so no CPU
 * successor and no weft_var_wait gets past them while the stream may still
 * read or write their buffers. Work that never stops keeps them for good
 * (the engine's destroy waits for it too, as it waits for every stream to
 * drain).
 */
#include <inttypes.h>

#include "common/assert.h"
#include "common/error.h"
#include "common/tunables.h"
#include "gpu/gpu.h"

/* Takes st (lane's head) off its lane and reports its device work done
 * with status. */
static void retire(weft_gpu_exec *x, weft_gpu_device *d, weft_gpu_lane *lane,
                   weft_gpu_opstate *st, int status)
{
  weft_exec_op *op = st->op;
  lane->head_since_ns = 0;
  lane->queried_ns = 0;
  lane->overdue = false;
  if (lane->given_up) /* behind (or itself) work the watchdog gave up on */
    status = WEFT_EDEVICE;
  if (lane->track) {
    /* The stream's span for op: from its launch (or the stream's previous
     * completion, if later: the stream runs one operator at a time) to the
     * completion seen here. */
    int64_t t1 = weft_prof_now(), t0 = st->launched > lane->last_end ? st->launched : lane->last_end;
    weft_prof_span(lane->track, weft_exec_op_name(op), t0 < t1 ? t0 : t1, t1);
    lane->last_end = t1;
  }
  if (status) /* release: pairs with the workers' acquire loads */
    atomic_store_explicit(&d->failed, 1, memory_order_release);
  weft_gpu_mpsc_pop(&lane->launched, &st->lnode);
  st->in_lane = false;
  /* relaxed: a count; the completion thread parks on its doorbell, not this */
  atomic_fetch_sub_explicit(&x->nlaunched, 1, memory_order_relaxed);
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_LAUNCHED); /* device done once per launch */
  st->phase = WEFT_GPU_OP_DONE;
  weft_exec_op_device_done(op, status);
}

/* The watchdog, on a head still pending since lane->head_since_ns: once it
 * waited too long, fails the device and gives the lane up (logged once per
 * head). The head stays on its lane: it retires when its work stops. */
static void watchdog(weft_gpu_exec *x, weft_gpu_device *d, weft_gpu_lane *lane,
                     weft_gpu_opstate *st, int device, int64_t now)
{
  if (!x->watchdog_ns || lane->overdue || now - lane->head_since_ns < x->watchdog_ns)
    return;
  lane->overdue = true;
  lane->given_up = true;
  /* release: pairs with the workers' acquire loads of failed (nothing to
   * publish beyond the flag; as in retire). */
  atomic_store_explicit(&d->failed, 1, memory_order_release);
  weft_log("GPU %d: operator %s did not complete within %" PRId64
           " ms (WEFT_GPU_WATCHDOG_MS); the device is failed: that operator and those behind "
           "it on its stream fail with WEFT_EDEVICE, and what uses their vars waits until "
           "their work stops",
           device, weft_exec_op_name(st->op), x->watchdog_ns / 1000000);
}

/* One lane: retires what completed; returns how many, and whether work is
 * still pending (*pending) with the head's event (*head). */
static int sweep_lane(weft_gpu_exec *x, weft_gpu_device *d, int device, weft_gpu_lane *lane,
                      int64_t now, bool *pending, weft_gpu_event **head)
{
  int done = 0;
  bool words = x->completion == WEFT_GPU_COMPLETION_HOSTWORD;
  /* acquire: pairs with the stream's release of the word (the device's
   * fence before its write; the host backend's release store), so the
   * retired operators' effects on host memory are visible here. */
  uint32_t word = words ? atomic_load_explicit(lane->word.host, memory_order_acquire) : 0;
  weft_gpu_link *node;
  while ((node = weft_gpu_mpsc_peek(&lane->launched))) {
    weft_gpu_opstate *st = (weft_gpu_opstate *)((char *)node - offsetof(weft_gpu_opstate, lnode));
    WEFT_ASSERT(st->in_lane && st->lane == lane);
    if (words && (int32_t)(word - st->seq) >= 0) {
      retire(x, d, lane, st, 0);
      done++;
      continue;
    }
    if (!lane->head_since_ns)
      lane->head_since_ns = now;
    if (words && now - lane->head_since_ns < WEFT_GPU_WORD_OVERDUE_NS)
      goto still_pending; /* its word will come */
    if (words && lane->queried_ns && now - lane->queried_ns < WEFT_GPU_WORD_OVERDUE_NS)
      goto still_pending; /* queried not long ago */
    lane->queried_ns = now;
    /* Its own event decides, also on a failed device: an operator of
     * another stream may still run there (its kernel reading a buffer a CPU
     * successor would overwrite), so it completes only once its event says
     * its work stopped: done, or failed (after a device error the backends
     * fail what is queued behind it: CUDA's errors are sticky, the host
     * backend's failed stream completes its later events as failed). Work
     * that runs too long is the watchdog's, which fails it but leaves it
     * here until then, so its successors never run early. */
    int q = weft_gpu_event_query(x->b, st->ev);
    if (q == WEFT_GPU_EVENT_PENDING) {
      watchdog(x, d, lane, st, device, now);
      goto still_pending;
    }
    retire(x, d, lane, st, q == WEFT_GPU_EVENT_COMPLETE ? 0 : WEFT_EDEVICE);
    done++;
  }
  return done;
still_pending:
  *pending = true;
  if (!*head)
    *head = ((weft_gpu_opstate *)((char *)node - offsetof(weft_gpu_opstate, lnode)))->ev;
  return done;
}

int weft_gpu_sweep(weft_gpu_exec *x, int *pending, weft_gpu_event **head)
{
  int64_t now = weft_now_ns();
  int done = 0;
  *pending = 0;
  *head = NULL;
  for (int i = 0; i < x->ndev; i++) {
    weft_gpu_device *d = &x->dev[i];
    /* acquire: pairs with the release that publishes a started device's
     * workers (executor.c, device_ready). */
    if (!atomic_load_explicit(&d->started, memory_order_acquire))
      continue;
    for (int k = 0; k < x->ncompute + x->ncopy; k++) {
      weft_gpu_worker *w = k < x->ncompute ? &d->compute[k] : &d->copy[k - x->ncompute];
      for (int l = 0; l < (w->kind == WEFT_GPU_COPY ? 2 : 1); l++) {
        bool p = false;
        done += sweep_lane(x, d, i, &w->lane[l], now, &p, head);
        *pending += p;
      }
    }
  }
  return done;
}
