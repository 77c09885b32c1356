/* SPDX-License-Identifier: MIT */
/*
 * A call's crew: the pool's workers that join the call under way (crew.c).
 *
 * The caller opens the crew, runs its own share, then closes it and waits
 * for those who joined to leave; it never waits for a worker that has not
 * joined. Joining is what a member task does when it runs (call.c submits
 * them); one that runs after the close, or late into a later call, finds a
 * closed crew (or that later call's open one) and simply joins or leaves.
 *
 * The word (struct pthreadpool.crew): bit 31 closed; bits 16-30 members
 * joined since the open; bits 0-15 members inside now.
 */
#ifndef PTP_CREW_H
#define PTP_CREW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define PTP_CREW_CLOSED 0x80000000u
#define PTP_CREW_JOINED_ONE 0x10000u
#define PTP_CREW_MAX 0x7fffu /* joiners per call: more than WEFT_MAX_THREADS */

/* Tunables, ns. The caller spins this long for the members still inside
 * before it sleeps: long enough for a small operator's stragglers (tens of
 * us here), short enough not to burn a core behind a long item. */
#define PTP_JOIN_SPIN_NS 50000
/* A member lingers this long after a call for the next one (call.c), as
 * weft's idle workers spin before they park (WEFT_SPIN_COUNT's default is
 * 300 rounds of 1 us). */
#define PTP_LINGER_NS 300000
/* Of which only the time spent spinning counts: two looks at the clock
 * (256 pauses apart, a few us) further apart than this mean the member was
 * not running in between (call.c). */
#define PTP_LINGER_GAP_NS 50000
/* Nor the time the call it served is still open (its caller still running
 * items, or preempted in one), up to this much. */
#define PTP_LINGER_OPEN_NS 5000000
/* A member on the caller's CPU moves off it at most this often a pool
 * (call.c): where the scheduler keeps putting the two together, it yields. */
#define PTP_MOVE_GAP_NS 1000000

struct pthreadpool;

/* A spin-wait hint (pause), and CLOCK_MONOTONIC in ns. */
void ptp_cpu_relax(void);
int64_t ptp_now_ns(void);

/* Moves the calling thread off CPU `cpu`, to another of the CPUs it may run
 * on: its affinity without that CPU for a moment, then as it was (the
 * thread stays where the first change put it). Returns false, with nothing
 * changed, when it may run on no other CPU or its affinity cannot be read
 * or set. */
bool ptp_move_off_cpu(int cpu);

/* The crew is closed at create. Open: the call (tp->call, the slots) was
 * written before; every joiner sees it. Caller only, under call_lock. */
void ptp_crew_open(struct pthreadpool *tp);

/* Joins the open crew: returns the member id (1, 2, ...), or 0 when it is
 * closed (then nothing of the call may be touched). */
unsigned ptp_crew_join(struct pthreadpool *tp);

/* Leaves after a successful join: nothing of the call is touched after. */
void ptp_crew_leave(struct pthreadpool *tp);

/* Closes the crew and waits until every member that joined has left:
 * spinning a while, then sleeping on the word. Caller only. */
void ptp_crew_close_and_wait(struct pthreadpool *tp);

#endif /* PTP_CREW_H */
