/* SPDX-License-Identifier: MIT */
/*
 * Every tunable of the library, with its unit. Environment variables and
 * config fields override some of these at create time (docs/config.md,
 * "Environment").
 */
#ifndef WEFT_COMMON_TUNABLES_H
#define WEFT_COMMON_TUNABLES_H

/* Cache line size assumed for padding, bytes. */
#define WEFT_CACHE_LINE 64

/* Idle rounds a worker spins before it parks (WEFT_SPIN_COUNT), rounds. One
 * round is a sweep of every queue; rounds start WEFT_SPIN_ROUND_NS apart. */
#define WEFT_SPIN_COUNT_DEFAULT 300
/* Length of one spin round, nanoseconds (measured on the clock). */
#define WEFT_SPIN_ROUND_NS 1000
/* Only the last searching worker spins the full count; the others park after
 * this many rounds, so a burst's end costs one core's spin, not all of them. */
#define WEFT_SPIN_COUNT_EXTRA_WORKERS 8
/* A worker takes from the injection queues before its own deque after this
 * many pops of its deque in a row, so that a stream of work of its own (a
 * task that submits its successor, popped newest first) cannot hold up
 * what other threads submitted; as Go's scheduler looks at its global
 * queue every 61 ticks. Above WEFT_INJECT_BATCH, so that a batch taken
 * from the injection queue runs in its order. Tasks. */
#define WEFT_FAIR_TICKS 61
/* Kept successors an engine operator's task runs in a row before it asks
 * the pool whether other work waits for this worker (weft_pool_yield_due:
 * a queue nobody took from since it last asked), and if so hands the next
 * one back, behind that work: what waits on a busy worker waits for at
 * most about twice this many operators. Operators. */
#define WEFT_KEEP_RUN_MAX 1024
/* A graph's build that orders its nodes (src/graph/build.c, an explicit
 * edge backward in the order of adding) gathers its records in that order,
 * prefetching this many ahead, records. */
#define WEFT_GRAPH_GATHER_AHEAD 16
/* A swept graph's sweeper (src/graph/graph.h) walks this many nodes between
 * its looks for other work waiting on its worker (weft_pool_yield_due),
 * nodes: a look costs a few loads, and what waits waits for at most this
 * many operators more. */
#define WEFT_GRAPH_SWEEP_CHUNK 32
/* ... and prefetches the blocks of the node this many ahead of the one it
 * takes, nodes (VM, dag replayed at 1 thread: 31.6 -> 26.6 ns/op with the
 * successors' blocks no longer prefetched, indep 17.7 -> 14.8). */
#define WEFT_GRAPH_SWEEP_AHEAD 16
/* A graph on one worker that cannot run in order (graph.h) is swept when
 * fewer than this share of the steps of one worker's edge order (build.c)
 * go on to the next operator in capture order, percent:
 * a chain, or a wavefront pushed row by row, runs in capture order anyway
 * and keeps the cheaper release (a node with one predecessor needs no
 * count); operators on interleaved vars jump about (bench: dag 1%, indep
 * 0%, chain and wave over 99.9%). */
#define WEFT_GRAPH_SWEEP_IN_ORDER_PCT 50
/* Lanes of a graph run in lanes (src/graph/lanes.h), at most, lanes: a
 * lane's waiters are the bits of one 64-bit word. */
#define WEFT_GRAPH_LANES_MAX 64
/* weft_graph_destroy racing its engine's destroy waits for the engine to let
 * go of the graph: this many yields, then sleeps of this long, ns. */
#define WEFT_ORPHAN_WAIT_YIELDS 64
#define WEFT_ORPHAN_WAIT_SLEEP_NS 100000
/* The plan of lanes (lane_plan.c) simulates a launch: a node takes its
 * measured time (the first launch of every WEFT_GRAPH_LANE_PERIOD times
 * each node, and the next one plans again), or before any measure
 * WEFT_GRAPH_LANE_NODE_NS; plus WEFT_GRAPH_LANE_CROSS_NS for each
 * predecessor in another lane (its data moves between cores); and may start
 * WEFT_GRAPH_LANE_XFER_NS after such a predecessor ends, ns. On the VM a
 * bench node takes 8-12 ns, a line moved 40-250 ns. */
#define WEFT_GRAPH_LANE_NODE_NS 10
#define WEFT_GRAPH_LANE_CROSS_NS 3
#define WEFT_GRAPH_LANE_XFER_NS 40
/* ... and puts a node in its latest predecessor's lane (its input in that
 * core's cache) unless that ends it more than this much later than the
 * best lane, ns. */
#define WEFT_GRAPH_LANE_SLACK_NS 20
/* A plan made with measured costs replaces the one in place only if, with
 * those costs, it ends in at most this share of that one's time, percent
 * (the bench's lists measure level, and a plan from their noise scatters
 * the vars' chains over the lanes: indep at 2 threads 6.0 -> 8.2 ns/op). */
#define WEFT_GRAPH_LANE_REPLAN_PCT 80
/* ... and runs a graph in lanes only if the plan finishes in at most this
 * share of one lane's time, percent; the fewest lanes within
 * WEFT_GRAPH_LANE_NEAR_PCT of the best plan's time are used. */
#define WEFT_GRAPH_LANES_GAIN_PCT 75
#define WEFT_GRAPH_LANE_NEAR_PCT 110
/* A graph run in order on several workers whose nodes took this long
 * each, on average, when a launch timed them (lanes.h), and whose plan
 * from those costs has lanes, is built again released along its edges, as
 * pushed operators are (src/graph/graph.h, released), ns: beside such
 * nodes a release's cost (40-50 ns a node on 2 workers) is nothing, and
 * idle workers take whatever node is ready, where a lane whose worker is
 * descheduled (a machine shared with other work) holds up every lane that
 * waits for it, and one lane (which the probes' times may pick for
 * noise) runs the graph one node at a time. The plan at capture, when
 * nodes of WEFT_GRAPH_LANE_NODE_NS find no lanes, tries nodes of this
 * cost (lane_plan.h). */
#define WEFT_GRAPH_RELEASE_NS 5000
/* A lane's sweeper waiting for another lane spins this many pauses (a few
 * microseconds) before it stops and hands its run to that lane (lanes.c),
 * pauses: lanes in step mostly wait for one node of the other. */
#define WEFT_GRAPH_LANE_SPIN 2048
/* ... or this many for a lane whose sweeper is queued, not running
 * (another worker takes it in a microsecond or so, if one is awake),
 * pauses. */
#define WEFT_GRAPH_LANE_SPIN_QUEUED 128
/* A launch (or destroy) of a graph whose previous launch is ending
 * (graph.h, WEFT_GRAPH_ENDING: a few dozen instructions left) spins this
 * many pauses before it yields the CPU between looks, pauses. */
#define WEFT_GRAPH_END_SPINS 256
/* A graph that may run in lanes tries lanes and one lane in turn for the
 * first 2 x WEFT_GRAPH_LANE_PROBES launches of every WEFT_GRAPH_LANE_PERIOD,
 * and runs the rest the way whose fastest launch was faster, launches:
 * four probes are 1.6% of a period. */
#define WEFT_GRAPH_LANE_PROBES 2
#define WEFT_GRAPH_LANE_PERIOD 256
/* Timing the nodes (two clock reads a node) and planning again (about
 * n x 2 x workers steps: 200,000 nodes on 16 workers, 17 ms on the VM)
 * cost: when the plan's time plus what the timing added to its launch
 * exceeds 1/WEFT_GRAPH_LANE_REPLAN_SHARE of a period's launches (the
 * period before's fastest launch x WEFT_GRAPH_LANE_PERIOD), the periods
 * between two timings double (0, 1, 3, 7, ...), up to
 * WEFT_GRAPH_LANE_REPLAN_GAP_MAX; one that fits brings them back to 0. */
#define WEFT_GRAPH_LANE_REPLAN_SHARE 64
#define WEFT_GRAPH_LANE_REPLAN_GAP_MAX 63
/* Largest WEFT_SPIN_COUNT accepted, rounds. */
#define WEFT_SPIN_COUNT_MAX 100000000L

/* A handle table (src/deps/handles.h) initialises its slots this many at a
 * time, as its free list runs dry; its first chunk holds this many, chunk k
 * this many times 2^k. A power of two; slots. An engine with a few vars
 * holds one such chunk of vars (128 bytes each). */
#define WEFT_HANDLE_BATCH_SLOTS 1024u

/* Tallies of an engine's in-flight counts that threads outside its pool
 * (a user's thread pushing operators) can each own, so that such a thread
 * counts a push with a plain store instead of a locked add; threads past
 * this many share one tally, updated by read-modify-writes (deps/inflight.h),
 * threads. */
#define WEFT_OUTSIDE_TALLIES 4
/* Engines a thread outside the pools may hold an own tally in at once (its
 * exit gives them back; past this many it shares), engines. */
#define WEFT_OUTSIDE_CLAIMS 8

/* Pools a thread outside them may own a solo injection queue of at once
 * (pool/solo.h; its exit gives them back; past this many it uses the
 * shared queue), pools. */
#define WEFT_SOLO_CLAIMS 8
/* Solo injection queues in a pool: that many threads outside it (users'
 * threads pushing operators) each fill one of their own, with no CAS and
 * no line another producer writes; the threads past them share the
 * injection queue. As many as the engine's outside tallies, queues (each
 * ~16 KiB: WEFT_INJECT_RING cells). */
#define WEFT_SOLO_QUEUES 4

/* Largest WEFT_NUM_THREADS accepted, threads. */
#define WEFT_MAX_THREADS 4096

/* Initial capacity of each worker's deque, items (power of two). */
#define WEFT_DEQUE_INITIAL_CAPACITY 1024

/* Recycled objects (task records, operator blocks) are carved from slabs of
 * this size, bytes. */
#define WEFT_OBJ_SLAB_BYTES (64 * 1024)
/* With jemalloc, allocations of at least this many bytes (a large graph's
 * node blocks and arrays, an engine's grown tables) come from an arena of
 * the library's own that keeps their freed pages for reuse as it keeps
 * smaller ones' (its dirty decay), where jemalloc's default hands pages of
 * 8 MiB and more back to the system at once (common/alloc.c), bytes. */
#define WEFT_BULK_ALLOC_BYTES (4u << 20)
/* Bytes of the next free object that an allocation prefetches for writing:
 * an operator block's lines that a push fills (its header, its queue line
 * when it is ready at once, its inline requests; not the device fields). */
#define WEFT_OBJ_PREFETCH_BYTES (4 * WEFT_CACHE_LINE)
/* Objects a magazine holds (a worker's cache holds up to two): recycled
 * blocks move between a worker and the shared store a magazine at a time.
 * Task records: for fork-join's spawn path; operator blocks: allocated by a
 * pusher, freed by the workers that complete them, objects. */
#define WEFT_TASK_BATCH 1024
#define WEFT_OPR_BATCH 128
/* A worker taking tasks off the injection queue takes its share (the
 * queue's length over the workers, plus one) under one lock, up to this
 * many: the rest go onto its own deque, tasks. */
#define WEFT_INJECT_BATCH 32
/* The injection queue's ring of task pointers, inside the pool's block
 * (tasks beyond it wait in a list through their own links), tasks. */
#define WEFT_INJECT_RING 1024
/* Operators with more vars than fit inline take their var and request
 * arrays from a second store, up to this many vars (more: the heap), vars. */
#define WEFT_OPR_BIG_VARS 64
/* An operator registering on more vars than this releases each var's lock
 * as soon as its request is queued there (deps/push.c), rather than
 * holding them all to the end: vars. */
#define WEFT_REGISTER_HOLD_VARS 8
/* An operator with more vars than that (a graph launch's gate) walks vars
 * most likely not in cache: it starts moving the lines of the var this
 * many ahead of the one it locks (deps/var.h), vars. */
#define WEFT_VAR_PREFETCH_AHEAD 32
/* Guards (common/guard.h) a thread can be inside at once and still enter
 * the fast way (deeper nesting counts the slow way), guards. */
#define WEFT_GUARD_DEPTH 4
/* A hand-over along a claimed run of writes (src/deps/var_queue.h)
 * prefetches this many requests ahead, requests. */
#define WEFT_VARQ_AHEAD 16

/* Pacing of a pusher inside the pool (an operator pushing operators): once
 * this many operators are pushed and not finished, it stops to let the
 * others catch up (helping with work it finds, and never once they make no
 * progress) until half as many are left, so that the blocks it pushed are
 * still in cache when they run; operators. It checks every PACE_EVERY
 * pushes, pushes; and goes on pushing once PACE_STALL_NS pass without the
 * count reaching a new low, nanoseconds (what is left may wait for its own
 * operator, while other work comes and goes). Not a cap: WEFT_MAX_INFLIGHT
 * is that (design.md). */
#define WEFT_PACE_OPS 16384
#define WEFT_PACE_EVERY 256
/* The same mark in a pool of one worker: nothing else runs what that
 * worker pushes, so a longer backlog only leaves the blocks it pushed to
 * go cold before it runs them itself; operators. (VM, an operator pushing
 * the bench's lists at 1 thread, side by side against 16384: dag 131 ->
 * 112 ns/op, wave 98 -> 87, indep 53 -> 51. With two workers a lower mark
 * cost indep 10%.) */
#define WEFT_PACE_OPS_ALONE 4096
#define WEFT_PACE_STALL_NS (20 * 1000)
/* While it paces, the count of what is left (a read of every tally) is
 * taken again after at most this many operators helped, operators. (VM,
 * indep at 1 thread: the read once per operator was 40 instructions of
 * about 1,050 an operator, callgrind.) */
#define WEFT_PACE_HELP_BATCH 8
/* The same for a thread outside the pool (a user's own thread pushing,
 * weft_engine_pace_outside), operators: lower, since every block such a
 * thread pushes crosses to another core anyway and should still be in the
 * shared cache when it arrives. It sleeps meanwhile (it is no worker) in
 * slices this long, checking for progress after each, nanoseconds. */
#define WEFT_PACE_OUTSIDE_OPS 4096
#define WEFT_PACE_OUTSIDE_SLEEP_NS (50 * 1000)
/* ... and pushes on once this long passes without a new low while nothing
 * ready is queued in the pool (what is left may wait for that very thread),
 * nanoseconds; with ready work queued, once the workers have together run
 * this much CPU time since then and still got nowhere (an operator holds
 * its worker, maybe until this very thread goes on), CPU nanoseconds: time
 * they spent waiting for a CPU on a loaded machine, a time slice or many,
 * is not a stall (VM, the suite's runs two at a time: the wall clock's 5
 * ms read as stalls a run in three, letting 55000 operators ahead instead
 * of 4096); or once the longest time passes whatever they ran (starved, or
 * blocked in an operator), nanoseconds. */
#define WEFT_PACE_OUTSIDE_STALL_NS (200 * 1000)
#define WEFT_PACE_OUTSIDE_STALL_CPU_NS (5 * 1000 * 1000)
#define WEFT_PACE_OUTSIDE_STALL_MAX_NS (200 * 1000 * 1000)

/* A push from inside an operator at max_inflight helps run operators; one
 * of those may push at the cap and help in turn. Nested helps on one thread
 * stop at this depth (deeper pushes go over the cap at once), levels: the
 * stack stays bounded whatever the operators push. */
#define WEFT_HELP_DEPTH_MAX 8
/* A push from a thread outside the engine's operators at max_inflight
 * waits for a place; once none has freed for this long while an async
 * operator of the engine waits for its weft_done_signal (which may be
 * meant to come from an operator not pushed yet, such as the one this
 * very push carries), it takes one over the cap, nanoseconds. Without such
 * an operator it waits as long as it takes (what runs finishes by itself),
 * so the cap holds exactly; an async operator signalled late from
 * elsewhere costs one operator over the cap per this long. It looks again
 * every WEFT_CAP_STALL_NS / WEFT_CAP_STALL_LOOKS at least, looks. */
#define WEFT_CAP_STALL_NS (100 * 1000 * 1000)
#define WEFT_CAP_STALL_LOOKS 4

/* Device-side waits (predecessors' events on the same device) a GPU
 * operator carries; beyond that it waits for the rest on the host. */
#define WEFT_OPR_DEV_WAITS 8

/* group wait: search rounds (each about WEFT_SPIN_ROUND_NS) before the
 * waiter sleeps on the group, rounds; then it sleeps with a timeout that
 * doubles from MIN to MAX, waking to help with new work, nanoseconds. */
#define WEFT_HELP_SPIN_ROUNDS 256
#define WEFT_HELP_SLEEP_MIN_NS (50 * 1000)
#define WEFT_HELP_SLEEP_MAX_NS (1000 * 1000)

/* A worker waiting on a group runs other workers' tasks only while less
 * than this share of its stack is used, percent. */
#define WEFT_HELP_STACK_PERCENT 50

/* parallel_for automatic grain: the smallest chunk is the range divided by
 * this many chunks per worker, chunks. */
#define WEFT_PFOR_CHUNKS_PER_WORKER 1024
/* A loop piece runs chunks of 1/DIVISOR of what is left of it, parts. */
#define WEFT_PFOR_CHUNK_DIVISOR 8

/* Profiling (WEFT_PROFILE): a track (one per worker) keeps at most this many
 * events, then drops and counts the rest, events (about 32 bytes each, so
 * 32 MiB per track at most). */
#define WEFT_PROF_MAX_EVENTS (1L << 20)
/* A track's buffer grows by chunks of this many events, events. */
#define WEFT_PROF_CHUNK_EVENTS 4096

/* GPU host backend (emulated devices): the most WEFT_GPU_HOST_DEVICES
 * accepted, devices; the largest per-item jitter a test may ask for,
 * microseconds. */
#define WEFT_GPU_HOST_DEVICES_MAX 64
#define WEFT_GPU_HOST_JITTER_MAX_US 100000

/* GPU device workers per device (WEFT_GPU_WORKERS, WEFT_GPU_COPY_WORKERS):
 * defaults and the most accepted, workers. */
#define WEFT_GPU_WORKERS_DEFAULT 2
#define WEFT_GPU_COPY_WORKERS_DEFAULT 1
#define WEFT_GPU_WORKERS_MAX 64
/* The completion thread (src/gpu/poller.c; WEFT_GPU_COMPLETION): it spins
 * WEFT_GPU_SPIN_US after its last progress (a retired operator, a launch
 * after a park), us (default, most accepted). Then: hostword mode blocks
 * (one busy lane: its waiter's event_sync; several: sleeps from
 * WEFT_GPU_WORD_SLEEP_MIN_NS doubling to _MAX_NS, woken early by a launch
 * or the waiter); event mode sleeps from WEFT_GPU_POLL_SLEEP_MIN_NS
 * doubling to _MAX_NS; blocking mode does not spin. ns. */
#define WEFT_GPU_SPIN_US_DEFAULT 50
#define WEFT_GPU_SPIN_US_MAX 1000000
#define WEFT_GPU_WORD_SLEEP_MIN_NS 1000
#define WEFT_GPU_WORD_SLEEP_MAX_NS 50000
#define WEFT_GPU_POLL_SLEEP_MIN_NS 2000
#define WEFT_GPU_POLL_SLEEP_MAX_NS 500000
/* hostword: a head operator whose word has not come this long after the
 * completion thread first saw it pending gets its event queried (a device
 * error stops the words), and again every as long, ns. */
#define WEFT_GPU_WORD_OVERDUE_NS 1000000
/* hostword: a stream worker enqueues its lane's word write when its queue
 * runs empty, or after this many launches without one. */
#define WEFT_GPU_WORD_BATCH 16
/* cuda backend: an event_sync that a stream capture on another thread
 * refuses (backend_cuda.c) polls the event instead, this often, ns. */
#define WEFT_GPU_CAPTURE_POLL_NS 100000
/* An operator's device work pending this long fails it and its device
 * (WEFT_GPU_WATCHDOG_MS; 0 turns it off), ms. Its vars stay held until the
 * work stops (retire.c). */
#define WEFT_GPU_WATCHDOG_MS_DEFAULT 600000
#define WEFT_GPU_WATCHDOG_MS_MAX 86400000

/* weft_mpi (src/mpi): a collective wait fails after this long without a word
 * from a rank it waits on (WEFT_MPI_TIMEOUT_MS; 0: never), ms. Heartbeats
 * go out every timeout / WEFT_MPI_HEARTBEATS_PER_TIMEOUT. */
#define WEFT_MPI_TIMEOUT_MS_DEFAULT 60000
#define WEFT_MPI_TIMEOUT_MS_MAX 86400000
#define WEFT_MPI_HEARTBEATS_PER_TIMEOUT 4
/* While transfers are pending, the progress thread polls MPI without pause
 * (yielding its core between polls) for this long after its last post or
 * completion, ns; then it sleeps from MIN doubling to MAX between polls, ns
 * (its timer slack is set to MIN). Measured on a 2-vCPU VM, 8-byte round
 * trip through two ranks' engines: 74 us polling, 450 us with a 50 us spin. */
#define WEFT_MPI_POLL_SPIN_NS 1000000
#define WEFT_MPI_POLL_SLEEP_MIN_NS 5000
#define WEFT_MPI_POLL_SLEEP_MAX_NS 50000
/* weft_mpi_var_register hashes its datatype's construction (src/mpi/
 * typesig.c), walking at most this many constructors, constructors, and
 * this many words of their arguments in all (integers, addresses and
 * subtypes, plus one per constructor), words; a subtype counts each time it
 * is used (every field of a struct). A datatype past either is refused
 * (WEFT_EINVAL). Far past any type built by hand, and cheap to reach on the
 * 2-vCPU VM with Open MPI: 65536 constructors took 0.06-0.3 s, 65 million
 * words in 8001 constructors 0.09 s (a one-int type: 3 us the whole
 * registration). */
#define WEFT_MPI_TYPE_CONSTRUCTORS_MAX 16384
#define WEFT_MPI_TYPE_WORDS_MAX (1LL << 26)

#endif /* WEFT_COMMON_TUNABLES_H */
