/* SPDX-License-Identifier: MIT */
/*
 * weft across MPI ranks (libweft_mpi; README "Running on several machines").
 *
 * The model is StarPU-MPI's. Every rank creates its own engine and attaches
 * it to the same communicator. Every var is registered on every rank, in the
 * same order, with the rank that owns it; only the owner's buffer holds the
 * var's value between operators. Every rank then submits the same sequence
 * of operators (weft_mpi_push), each with the rank that executes it: by
 * default the owner of the first var it writes. On each rank the library
 * pushes only what concerns that rank:
 *
 *   - the operator itself on its executing rank;
 *   - for each var it uses that the executing rank has no valid copy of: an
 *     asynchronous send operator on the owner (it reads the var) and an
 *     asynchronous receive operator on the executing rank (it writes the
 *     var, into a cache buffer the library allocates);
 *   - for each var it writes that another rank owns: the same pair back, so
 *     the owner's buffer holds the new value.
 *
 * All of them go through the var queues of each rank's engine, so local work
 * overlaps communication and every transfer is ordered with the operators
 * around it. A cached copy is reused by later reads on its rank until some
 * rank writes the var again (it is then invalid everywhere but on the writer
 * and the owner), and freed by weft_mpi_var_delete or weft_mpi_detach.
 *
 * Threads: each attachment has one progress thread, which makes the MPI
 * calls on the attachment's communicator (a duplicate of the one given) from
 * attach to detach; other threads of the library call MPI only under a lock
 * it holds while it calls MPI, so no two calls ever overlap. MPI must
 * therefore be initialized with at least
 * MPI_THREAD_SERIALIZED (weft_mpi_attach checks: WEFT_EINVAL with a
 * message otherwise). Under MPI_THREAD_SERIALIZED that lock is one for the
 * whole process, shared by every attachment and by attach and detach's own
 * calls, so several engines may be attached at once (attach's collectives
 * let the other attachments' threads call MPI while they wait for the other
 * ranks); under MPI_THREAD_MULTIPLE each attachment has its own. With
 * MPI_THREAD_SERIALIZED the application must not make MPI calls of its own
 * while an attachment is live; with MPI_THREAD_MULTIPLE it may.
 *
 * Every call below is made by one application thread of each rank (the
 * submitting thread), never from inside an operator, and the calls marked
 * "sequence" must be made by every rank of the communicator in the same
 * order with the same arguments (buffers and the execution of operators
 * aside; a datatype is the same argument when it is built alike, see
 * weft_mpi_var_register). Ranks that submit different sequences are
 * detected at the next collective wait (WEFT_EMISMATCH on every rank), not
 * left hanging, also when the difference broke a transfer first (a count
 * that differs truncates a receive) or broke none (MPI_FLOAT for MPI_INT).
 *
 * Engines with max_inflight (WEFT_MAX_INFLIGHT) must not be attached: a
 * rank blocked at its cap can wait for a transfer that another rank, blocked
 * at its own cap, has not pushed yet.
 *
 * Operators pushed with weft_mpi_push are CPU operators with fn (not
 * async_fn, not GPU; WEFT_EINVAL otherwise) that use registered vars only.
 * Inside one, weft_mpi_var_data gives the local buffer of each var it uses.
 * A failure (non-zero status) marks the vars it writes failed on every rank
 * that later receives them: operators that use them are skipped there too
 * (unless WEFT_OP_NOSKIP), and weft_mpi_wait_all reports it on every rank.
 */
#ifndef WEFT_WEFT_MPI_H
#define WEFT_WEFT_MPI_H

/* <mpi.h> is not on the default include path on Debian (pkg-config
 * --cflags weft-mpi adds its directory). The header compiles on its own all
 * the same: the two calls that take MPI types (weft_mpi_attach,
 * weft_mpi_var_register) are declared when <mpi.h> was included before this
 * header or can be included here; everything else always is. */
#ifndef MPI_VERSION
#if defined(__has_include)
#if __has_include(<mpi.h>)
#include <mpi.h>
#endif
#else
#include <mpi.h>
#endif
#endif

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_mpi weft_mpi;

/* weft_mpi_push's exec_rank: the owner of the first var the operator
 * writes (its first write if it writes none: WEFT_EINVAL). */
#define WEFT_MPI_OWNER (-1)

typedef struct weft_mpi_config {
  int timeout_ms; /* -1: automatic (WEFT_MPI_TIMEOUT_MS, default 60000); 0: none.
                     A collective wait fails with WEFT_ETIMEDOUT on a rank
                     that heard nothing from a rank it waits on for this
                     long. Every live rank's progress thread answers for it
                     (a heartbeat every timeout/4), also while its operators
                     compute, so only a dead, stopped or hung process trips it. */
  /* Room to grow without breaking binaries: must be zero, as
   * weft_mpi_config_default leaves it (WEFT_EINVAL otherwise). */
  void *reserved[8];
} weft_mpi_config;

/* Sets every field to "automatic". */
WEFT_API void weft_mpi_config_default(weft_mpi_config *cfg);

#ifdef MPI_VERSION
/* Sequence, collective. Attaches eng to comm (which is duplicated; comm may
 * be freed afterwards) and starts the progress thread. cfg NULL: all
 * automatic. The ranks agree on the outcome: if attach fails on one rank, it
 * fails on every rank (with that rank's code and a message), and nothing is
 * left attached anywhere. WEFT_EINVAL: a bad field or environment value,
 * NULL eng or out, MPI not initialized or below MPI_THREAD_SERIALIZED (each
 * with a message; the last three are found before any collective call, so
 * they must be alike on every rank); WEFT_ENOMEM; WEFT_EAGAIN (no thread);
 * WEFT_ECOMM (an MPI call failed). */
WEFT_API int weft_mpi_attach(weft_engine *eng, MPI_Comm comm, const weft_mpi_config *cfg,
                             weft_mpi **out);
#endif /* MPI_VERSION */

/* Sequence, collective. Waits as weft_mpi_wait_all does, stops the progress
 * thread, frees the cached copies and the communicator's duplicate, and
 * frees mpi (whatever it returns). The engine and its vars stay the
 * application's. Returns what that wait returns. After an error that broke
 * the attachment (see weft_mpi_wait_all) the duplicate is left unfreed (a
 * dead rank cannot take part in freeing it), and so are buffers MPI may
 * still use. */
WEFT_API int weft_mpi_detach(weft_mpi *mpi);

/* This rank and the communicator's size (not error codes); WEFT_EINVAL for
 * NULL. */
WEFT_API int weft_mpi_rank(const weft_mpi *mpi);
WEFT_API int weft_mpi_size(const weft_mpi *mpi);

#ifdef MPI_VERSION
/* Sequence. Registers var (a live var of the attached engine) as owned by
 * rank owner, with count elements of type. buf: on the owner, the var's
 * value (count elements of type; the application's, never freed by weft);
 * elsewhere NULL, and the library allocates a cache buffer when one is first
 * needed (or a buffer of the application's, used as that cache). Any
 * committed MPI datatype with a positive extent works, derived types
 * included (vectors, indexed, resized, structs with holes, negative lower
 * bounds): the buffer spans every byte the count elements touch, from
 * buf + min(0, true_lb) to buf + true_lb + (count - 1) * extent +
 * true_extent (MPI_Type_get_true_extent; a matrix column resized to one
 * element reaches well past count * extent), and a cache weft allocates
 * covers all of it.
 *
 * Every rank passes the same owner and count and a datatype built alike.
 * What the ranks compare (at the next collective wait: WEFT_EMISMATCH) is
 * the datatype's size, lower bound and extent, and its construction as
 * MPI_Type_get_envelope and MPI_Type_get_contents give it: each
 * constructor down to the named types, with every count, block length,
 * stride, displacement, bound and subtype it was built with. So MPI_FLOAT
 * for MPI_INT, a vector for a contiguous type of the same size, a resized
 * type for its original, a struct whose holes lie elsewhere are all
 * mismatches; types built by the same calls on every rank match (handles
 * are never compared). A named type matches only itself (MPI_INT32_T is
 * not MPI_INT) or its synonym (MPI_LONG_LONG, MPI_LONG_LONG_INT); a dup
 * (MPI_Type_dup) matches its original; the same type map built with other
 * constructors (a contiguous type, and the one-block vector equal to it)
 * does not match. The walk is made once, here, and bounded: a datatype
 * built from more than 16384 constructors, or whose constructors take more
 * than 2^26 integers, addresses and subtypes in all (a subtype counts each
 * time it is used, as every field of a struct), is refused.
 *
 * WEFT_EINVAL: a bad owner, count <= 0, a datatype of size 0 or extent <=
 * 0, a span beyond the address space, a datatype past the walk's bounds or
 * one MPI cannot describe, no buffer on the owner, a var registered already, or more vars than the
 * communicator has tags (MPI_TAG_UB); WEFT_ENOMEM. A registration that
 * fails counts for nothing in the sequence. */
WEFT_API int weft_mpi_var_register(weft_mpi *mpi, weft_var *var, int owner, void *buf, int count,
                                   MPI_Datatype type);
#endif /* MPI_VERSION */

/* The var's owner rank, or WEFT_EINVAL (not registered). */
WEFT_API int weft_mpi_var_owner(const weft_mpi *mpi, const weft_var *var);

/* The local buffer of a registered var: the owner's buffer on its owner,
 * elsewhere this rank's cache (NULL before the first transfer to it). For
 * use inside operators that use the var, and after a wait. NULL if var is
 * not registered (or was deleted and its last operator has run). */
WEFT_API void *weft_mpi_var_data(const weft_mpi *mpi, const weft_var *var);

/* Sequence. Deletes a registered var on this rank once every operator pushed
 * before on it has finished (weft_var_delete), and frees its cache buffer
 * then. The handle is dead when it returns 0. */
WEFT_API int weft_mpi_var_delete(weft_mpi *mpi, weft_var *var);

/* Sequence. Pushes the operator desc on rank exec_rank (WEFT_MPI_OWNER: the
 * owner of its first written var), with the transfers it needs (see above).
 * desc is copied; on other ranks its fn and arg are not used, but every
 * rank passes the same vars in the same order. WEFT_EINVAL: a bad
 * descriptor (as weft_push), async_fn, a GPU ctx, an unregistered var (the
 * message names it), a bad exec_rank; WEFT_ENOMEM; WEFT_ETIMEDOUT,
 * WEFT_EMISMATCH or WEFT_ECOMM once an earlier wait returned it (nothing
 * is pushed from then on). */
WEFT_API int weft_mpi_push(weft_mpi *mpi, const weft_op_desc *desc, int exec_rank);

/* Sequence, collective. Waits until every operator and transfer pushed so
 * far has finished on every rank. Returns, on every rank, the same result:
 *   0                 nothing failed;
 *   an operator's status (or a local engine error) when one failed on some
 *                     rank (the first by rank order; a message names it on
 *                     the other ranks), failures cleared as weft_wait_all does;
 *   WEFT_EMISMATCH    the ranks' sequences since attach differ (a message
 *                     gives each rank's count); the transfers left waiting
 *                     for a partner are cancelled;
 *   WEFT_ETIMEDOUT    a rank stopped answering (it is named);
 *   WEFT_ECOMM        an MPI call failed on some rank (the message there
 *                     gives MPI's error; the others name that rank).
 * After the last three the attachment is unusable: every later call
 * returns the same code at once (detach too, after freeing what it can);
 * the application should then MPI_Abort. A transfer that fails in MPI on
 * one rank (a truncated receive, say) breaks the attachment there and, by
 * a message, on every other rank, whose transfers then fail at once, so
 * that no wait is left hanging, whatever the timeout; every rank reports
 * the break in the same wait (the next one to compare the ranks' states
 * after it), with WEFT_EMISMATCH if the sequences differ, else WEFT_ECOMM.
 * Until then the other calls go on, their transfers failing at once. A
 * rank that timed out, or where MPI failed outside a transfer (in the
 * wait's own collectives, say), falls silent instead (its heartbeats stop),
 * so ranks still waiting on it end with WEFT_ETIMEDOUT.
 * A wait that reports an operator's
 * failure also drops every cached copy (a copy that received a failure kept
 * its old bytes), so the next reads fetch again. 
 * WEFT_EINVAL for NULL. */
WEFT_API int weft_mpi_wait_all(weft_mpi *mpi);

typedef struct weft_mpi_stats {
  uint64_t ops_pushed;   /* operators this rank executes */
  uint64_t sends;        /* transfers this rank sent (data or a failure) */
  uint64_t recvs;        /* transfers this rank received */
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t cache_hits;   /* reads served by a valid cached copy */
} weft_mpi_stats;

/* This rank's counts since attach (exact once a wait returned). WEFT_EINVAL
 * for NULL. */
WEFT_API int weft_mpi_get_stats(const weft_mpi *mpi, weft_mpi_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_MPI_H */
