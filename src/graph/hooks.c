/*
 * The graph layer's entry points for the engine (hooks.h, deps/ext.h): a
 * graph's nodes are the engine's held operators, a launch's gate their
 * holder, a capture the thread's push sink. Each entry is a function of
 * the file that does the work; this one only lists them, and lets go of
 * an engine's graphs and captures at its destroy.
 */
#include "graph/capture.h"
#include "graph/devrun.h"
#include "graph/hooks.h"
#include "graph/keep.h"
#include "graph/registry.h"
#include "graph/replay.h"
#include "graph/run.h"

/* eng's destroy drained it: its graphs lose their nodes and what their
 * gates keep (no launch runs), its captures left open are orphaned (their
 * end answers WEFT_ESHUTDOWN). */
static void engine_closing(weft_engine *eng)
{
  weft_graph_orphan_all(eng);
  weft_capture_orphan_all(eng);
}

const weft_opr_ext_ops weft_graph_ext_ops = {
  .run = weft_gnode_run,
  .start = weft_gnode_start,
  .inherited = weft_gnode_inherited,
  .finish = weft_devrun_finish, /* a node's, or a whole run's */
  .launched = weft_gnode_launched,
  .run_of = weft_devrun_of,
  .run_launched = weft_devrun_launched,
  .holder = weft_gnode_holder,
  .hold = weft_gate_hold,
  .register_locked = weft_keep_run_locked,
  .appended = weft_keep_mark,
  .put = weft_gate_put,
  .yield = weft_keep_yield,
  .record = weft_capture_push,
  .closing = engine_closing,
};
