/* SPDX-License-Identifier: MIT */
/*
 * The fork registry (fork.h): one set of pthread_atfork handlers for the
 * library, calling each subsystem's handlers in slot order. The registry's
 * own lock is taken first in prepare and released last, so concurrent
 * forks and registrations are serialised and a slot filled meanwhile is
 * never released without having been taken.
 */
#include "common/fork.h"

#include <pthread.h>
#include <stdbool.h>

_Atomic unsigned long weft_fork_gen_;

typedef struct fork_slot {
  void (*prepare)(void);
  void (*parent)(void);
  void (*child)(void);
} fork_slot;

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static fork_slot slots[WEFT_FORK_NSLOTS]; /* under reg_lock */
static bool prepared[WEFT_FORK_NSLOTS];   /* under reg_lock: prepare ran */

static void on_prepare(void)
{
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < WEFT_FORK_NSLOTS; i++) {
    prepared[i] = slots[i].prepare != NULL;
    if (prepared[i])
      slots[i].prepare();
  }
}

static void on_parent(void)
{
  for (int i = WEFT_FORK_NSLOTS - 1; i >= 0; i--)
    if (prepared[i] && slots[i].parent)
      slots[i].parent();
  pthread_mutex_unlock(&reg_lock);
}

static void on_child(void)
{
  /* relaxed: the child has one thread now (fork.h). */
  atomic_fetch_add_explicit(&weft_fork_gen_, 1, memory_order_relaxed);
  for (int i = WEFT_FORK_NSLOTS - 1; i >= 0; i--)
    if (prepared[i] && slots[i].child)
      slots[i].child();
  /* The forking thread took it in on_prepare and is the child's thread. */
  pthread_mutex_unlock(&reg_lock);
}

static void install(void)
{
  /* Fails only with ENOMEM; the library then works as before, without
   * fork handling (a child must not use inherited objects, as documented). */
  (void)pthread_atfork(on_prepare, on_parent, on_child);
}

void weft_fork_init(void)
{
  pthread_once(&install_once, install);
}

void weft_fork_register(int slot, void (*prepare)(void), void (*parent)(void),
                        void (*child)(void))
{
  weft_fork_init();
  pthread_mutex_lock(&reg_lock);
  slots[slot].prepare = prepare;
  slots[slot].parent = parent;
  slots[slot].child = child;
  pthread_mutex_unlock(&reg_lock);
}
