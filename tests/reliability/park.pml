/* SPDX-License-Identifier: MIT */
/*
 * The parking protocol of src/pool/park.c and src/pool/idle.c (the
 * eventcount with the searching-worker handshake) as a Promela model for
 * spin. Promela is sequentially consistent: each C atomic operation is one
 * statement, and the seq_cst fences are implicit, so this model checks the
 * protocol's logic over every interleaving (the relacy harness rl_park.cpp
 * checks the same protocol under the C11 memory model, fences included).
 *
 * A submitter pushes NTASKS tasks on the injection queue, each followed by
 * weft_pool_wake_exact, waits until they have run, then stops the workers
 * (stop_workers: EXITING, notify all). NWORKERS workers run
 * weft_worker_main's loop and weft_worker_idle (spin_count 0: one sweep).
 *
 * Checked by tests/reliability/spin_check.sh:
 *  - safety: assertions and invalid end states. Every process must reach
 *    its end: a worker asleep in commit with work pending and no wake to
 *    come leaves the submitter blocked on `done` and itself blocked in
 *    futex_wait, an invalid end state (a lost wake-up);
 *  - non-progress cycles (pan -l, weak fairness): no run loops forever
 *    without a task running or a process finishing.
 *
 * Mutants (spin -D..., run by mutants.sh; each must be caught):
 *   NO_RECHECK     park without the re-check after prewait
 *   RECHECK_FIRST  the re-check before the prewait (the classic lost wake-up)
 */
#ifndef NWORKERS
#define NWORKERS 2
#endif
#ifndef NTASKS
#define NTASKS 2
#endif
#define RUNNING 0
#define EXITING 2

/* weft_ec (park.h) */
byte seq;          /* the futex word */
byte waiters;
/* weft_pool */
byte nsearching;
bit wake_pending;
byte state = RUNNING;
/* the injection queue's count (the list itself is under a mutex: a pop or
 * push is one atomic step) */
byte inject_count;
/* the futex: which workers sleep on seq */
bit asleep[NWORKERS];
/* harness */
byte done;
byte exited;

/* weft_futex_wait(&seq, key): compare and sleep atomically */
inline futex_wait(key) {
  atomic { if :: seq == key -> asleep[me] = 1 :: else -> skip fi };
  (asleep[me] == 0)
}

/* weft_futex_wake(&seq, 1 or all) */
inline futex_wake(all) {
  atomic {
    if
    :: all -> k = 0; do :: k < NWORKERS -> asleep[k] = 0; k++ :: else -> k = 0; break od
    :: !all ->
       if
       :: asleep[0] -> asleep[0] = 0
       :: asleep[1] -> asleep[1] = 0
       :: !asleep[0] && !asleep[1] -> skip
       fi
    fi
  }
}

/* weft_ec_notify (park.c): result in `notified` */
inline ec_notify(all) {
  if
  :: waiters == 0 -> notified = 0
  :: else -> seq = seq + 1; futex_wake(all); notified = 1
  fi
}

/* wake_one (idle.c) */
inline wake_one() {
  if
  :: wake_pending -> skip
  :: else ->
     atomic { old = wake_pending; wake_pending = 1 };
     if
     :: old -> skip
     :: else ->
        ec_notify(0);
        if :: !notified -> wake_pending = 0 :: else -> notified = 0 fi
     fi;
     old = 0
  fi
}

/* start_searching (idle.c) */
inline start_searching() {
  nsearching++;
  wake_pending = 0
}

/* weft_inject_pop: one step under the queue's mutex */
inline inject_pop() {
  atomic { if :: inject_count > 0 -> inject_count--; t = 1 :: else -> t = 0 fi }
}

proctype worker(byte me) {
  bit t, searching, old, notified, last;
  byte key, n, k;
loop:                                   /* weft_worker_main (worker.c) */
  atomic { inject_pop(); if :: t -> t = 0; goto run_task :: else -> skip fi };
  /* weft_worker_idle (idle.c) */
  start_searching();
search:
  atomic {                              /* weft_find_nonlocal */
    searching = 1;
    inject_pop();
    if :: t -> t = 0 :: else -> goto not_found fi
  };
  atomic { nsearching--; last = (nsearching == 0) };    /* stop_searching (idle.c) */
  if
  :: last -> last = 0;
     if
     :: waiters > 0 ->
        if :: inject_count > 0 -> wake_one() :: else -> skip fi
     :: else -> skip
     fi
  :: else -> skip
  fi;
  goto run_task;
not_found:
  if                                    /* only the last searcher spins (idle.c) */
  :: state == RUNNING ->
     n = nsearching;
     if
     :: n > 1 -> atomic { if :: nsearching == n -> nsearching--; searching = 0 :: else -> skip fi; n = 0 }
     :: else -> n = 0
     fi
  :: else -> skip
  fi;
#ifdef RECHECK_FIRST
  /* MUTANT: the re-check before the announcement */
  if
  :: inject_count > 0 -> goto search_again_unannounced
  :: else -> skip
  fi;
#endif
  waiters++;                            /* weft_ec_prewait (idle.c) */
  key = seq;
  wake_pending = 0;                     /* idle.c */
  if :: searching -> nsearching-- :: else -> skip fi;   /* idle.c */
#if !defined(NO_RECHECK) && !defined(RECHECK_FIRST)
  if                                    /* the re-check (idle.c) */
  :: inject_count > 0 ->
     key = 0; waiters--;                /* weft_ec_cancel */
     start_searching();
     goto search
  :: else -> skip
  fi;
#endif
  if                                    /* idle.c */
  :: state == EXITING -> key = 0; waiters--; goto exit
  :: else -> skip
  fi;
  do                                    /* weft_ec_commit (park.c) */
  :: seq == key -> futex_wait(key)
  :: else -> key = 0; break
  od;
  waiters--;
  start_searching();
  goto search;
#ifdef RECHECK_FIRST
search_again_unannounced:
  if :: searching -> nsearching-- :: else -> skip fi;
  start_searching();
  goto search;
#endif
run_task:
progress_run:
  done++;                               /* the task */
  goto loop;
exit:
  exited++
}

proctype submitter() {
  byte i, k;
  bit old, notified;
  do
  :: i < NTASKS ->
     atomic { inject_count++ };         /* weft_inject_push */
     /* weft_pool_wake_exact (idle.c): after the fence */
     if
     :: nsearching == 0 ->
        if :: waiters > 0 -> wake_one() :: else -> skip fi
     :: else -> skip
     fi;
     i++
  :: else -> break
  od;
  (done == NTASKS);                     /* the drain */
  state = EXITING;                      /* stop_workers (pool.c) */
  ec_notify(1);
  (exited == NWORKERS);
  assert(inject_count == 0 && done == NTASKS)
}

init {
  atomic {
    run worker(0);
    run worker(1);
    run submitter()
  }
}
