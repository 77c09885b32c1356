/*
 * A call's crew: the pool's workers that join the call under way (crew.c).
 *
 * The caller opens the crew, runs its own share, then closes it and waits
 * for those who joined to leave; it never waits for a worker that has not
 * joined. Joining is what a member task does when it runs (run.c submits
 * them); one that runs after the close, or late into a later call, finds a
 * closed crew (or that later call's open one) and simply joins or leaves.
 *
 * The word (struct pthreadpool.crew): bit 31 closed; bits 16-30 members
 * joined since the open; bits 0-15 members inside now.
 */
#ifndef PTP_CREW_H
#define PTP_CREW_H

#include <stdatomic.h>
#include <stdint.h>

#define PTP_CREW_CLOSED 0x80000000u
#define PTP_CREW_JOINED_ONE 0x10000u
#define PTP_CREW_MAX 0x7fffu /* joiners per call: more than WEFT_MAX_THREADS */

struct pthreadpool;

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
