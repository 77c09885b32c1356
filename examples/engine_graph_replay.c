/* SPDX-License-Identifier: MIT */
/*
 * A training step captured once and replayed: the operators of one step
 * (a forward pass through L layers, a loss, a backward pass that updates
 * each layer's weights) are recorded with weft_graph_begin_capture /
 * weft_graph_end_capture; every step then launches that graph, after an
 * ordinary push that loads the step's input. The launch is ordered with
 * that push (and with the next step's) through the vars, like any operator.
 * The weights are checked bit for bit against a serial run.
 *
 *   engine_graph_replay [steps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

enum { L = 6, N = 4096 };

typedef struct model {
  double x[L + 1][N]; /* activations: x[0] the input */
  double w[L][N];     /* weights */
  double loss;
  int step;           /* the input's step */
} model;

typedef struct layer_arg {
  model *m;
  int l;
} layer_arg;

static void load(model *m, int step)
{
  for (int i = 0; i < N; i++)
    m->x[0][i] = (double)((i * 7 + step * 13) % 101) / 101.0;
}

static void forward(model *m, int l)
{
  for (int i = 0; i < N; i++) {
    double v = m->w[l][i] * m->x[l][i] + 0.25;
    m->x[l + 1][i] = v / (1.0 + (v < 0 ? -v : v));
  }
}

static void loss(model *m)
{
  double s = 0;
  for (int i = 0; i < N; i++)
    s += m->x[L][i] * m->x[L][i];
  m->loss = s / N;
}

static void backward(model *m, int l)
{
  for (int i = 0; i < N; i++)
    m->w[l][i] -= 0.01 * m->loss * m->x[l + 1][i] * m->x[l][i];
}

static int load_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  model *m = arg;
  load(m, m->step);
  return 0;
}

static int forward_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  layer_arg *a = arg;
  forward(a->m, a->l);
  return 0;
}

static int loss_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  loss(arg);
  return 0;
}

static int backward_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  layer_arg *a = arg;
  backward(a->m, a->l);
  return 0;
}

static int push(weft_engine *e, weft_op_fn fn, void *arg, weft_var **r, size_t nr, weft_var **w,
                size_t nw)
{
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = fn;
  d.arg = arg;
  d.reads = r;
  d.num_reads = nr;
  d.writes = w;
  d.num_writes = nw;
  return weft_push(e, &d);
}

int main(int argc, char **argv)
{
  int steps = argc > 1 ? atoi(argv[1]) : 200;
  if (steps < 1)
    return 2;
  static model m, ref;
  for (int l = 0; l < L; l++)
    for (int i = 0; i < N; i++)
      m.w[l][i] = ref.w[l][i] = 1.0 + (double)((i + l) % 17) / 17.0;

  weft_engine *e;
  int rc = weft_engine_create(&e, NULL);
  if (rc) {
    fprintf(stderr, "weft_engine_create: %s\n", weft_strerror(rc));
    return 1;
  }
  weft_var *x[L + 1], *w[L], *lossv, *stepv;
  for (int l = 0; l <= L; l++)
    rc |= weft_var_new(e, &x[l]);
  for (int l = 0; l < L; l++)
    rc |= weft_var_new(e, &w[l]);
  rc |= weft_var_new(e, &lossv);
  rc |= weft_var_new(e, &stepv);

  /* One step's operators, recorded once. */
  layer_arg args[L];
  rc |= weft_graph_begin_capture(e);
  for (int l = 0; l < L; l++) {
    args[l] = (layer_arg){&m, l};
    weft_var *r[2] = {x[l], w[l]};
    rc |= push(e, forward_op, &args[l], r, 2, &x[l + 1], 1);
  }
  rc |= push(e, loss_op, &m, &x[L], 1, &lossv, 1);
  for (int l = L - 1; l >= 0; l--) {
    weft_var *r[3] = {lossv, x[l + 1], x[l]};
    rc |= push(e, backward_op, &args[l], r, 3, &w[l], 1);
  }
  weft_graph *g = NULL;
  rc |= weft_graph_end_capture(e, &g);
  if (rc) {
    fprintf(stderr, "setting up the graph failed: %s\n", weft_strerror(rc));
    return 1;
  }

  for (int s = 0; s < steps && !rc; s++) {
    /* The input of step s: an ordinary push, after the previous step's
     * backward pass read x[0] (the var orders it) and before this step's
     * launch. */
    weft_var *wr[2] = {x[0], stepv};
    m.step = s; /* read by load_op; the previous load ran (var_wait below) */
    rc = push(e, load_op, &m, NULL, 0, wr, 2);
    if (!rc) /* queued behind the previous step's launch while that one runs */
      rc = weft_graph_launch(g);
    if (!rc)
      rc = weft_var_wait(e, stepv); /* this step's load ran: m.step may change */
  }
  int rc2 = weft_wait_all(e);
  if (!rc)
    rc = rc2;
  if (!rc)
    rc = weft_graph_destroy(g);
  rc2 = weft_engine_destroy(e);
  if (!rc)
    rc = rc2;
  if (rc) {
    fprintf(stderr, "engine_graph_replay: %s\n", weft_strerror(rc));
    return 1;
  }

  for (int s = 0; s < steps; s++) {
    load(&ref, s);
    for (int l = 0; l < L; l++)
      forward(&ref, l);
    loss(&ref);
    for (int l = L - 1; l >= 0; l--)
      backward(&ref, l);
  }
  if (memcmp(ref.w, m.w, sizeof ref.w) != 0 || ref.loss != m.loss) {
    fprintf(stderr, "engine_graph_replay: the weights differ from the serial run's\n");
    return 1;
  }
  printf("%d steps replayed, loss %.6f\n", steps, m.loss);
  return 0;
}
