/* SPDX-License-Identifier: MIT */
/*
 * The dependency engine: a training loop as a pipeline of operators.
 *
 * Every step is five operators, and each declares the vars it reads and
 * writes; the engine runs an operator as soon as the ones it depends on are
 * done:
 *
 *   load(s)       writes raw[b]            a batch: features and targets
 *   preprocess(s) reads raw[b],  writes x[b]        features scaled to [-1, 1]
 *   forward(s)    reads x[b], weights, writes act[b]   residuals, loss
 *   backward(s)   reads x[b], act[b], writes grad[b]   the gradient
 *   update(s)     reads grad[b], writes weights        one SGD step
 *
 * with b = s % 2: every stage has two buffers, so the loader can fill the
 * next batch while the current one is being used, and while update(s) runs,
 * the engine may already load and preprocess step s + 1 (and s + 2, once
 * preprocess(s) has read raw[b]). forward(s + 1) waits for update(s): it
 * reads the weights update(s) writes. No locks, no explicit ordering.
 *
 * Back pressure: the engine is created with max_inflight, so the push loop
 * waits when that many operators are pushed but not finished, instead of
 * queueing every epoch at once (the environment's WEFT_MAX_INFLIGHT does the
 * same for engines left automatic).
 *
 * The model is a linear regression, y = w . x, trained on a synthetic data
 * set. usage: engine_training_step [EPOCHS]   (default 8)
 * Checks the final weights against a serial run of the same arithmetic, bit
 * for bit, and that the loss of the last step is a tenth of the first's or less.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <weft/weft.h>

enum {
  DIM = 64,             /* features per sample */
  BATCH = 256,          /* samples per batch */
  STEPS_PER_EPOCH = 64, /* batches in the data set */
  NBUF = 2,             /* buffers per stage */
  MAX_INFLIGHT = 16,    /* operators pushed but not finished, at most */
};
static const double LEARNING_RATE = 0.05;
/* The weights the data set is made from, which training should find. */
#define TRUE_WEIGHT(j) (0.125 * ((j) % 9) - 0.5)

/* The data of one run. The buffers are plain memory; the vars only tell the
 * engine who uses which buffer. */
typedef struct trainer {
  double raw[NBUF][BATCH][DIM + 1]; /* features in [0, 1), then the target */
  double x[NBUF][BATCH][DIM];
  double target[NBUF][BATCH];
  double act[NBUF][BATCH]; /* the residuals, prediction - target */
  double grad[NBUF][DIM];
  double weights[DIM];
  double *loss; /* loss[s]: the mean squared residual of step s */
} trainer;

/* An operator's argument: which run, which step. */
typedef struct step_arg {
  trainer *t;
  int step;
} step_arg;

static uint64_t splitmix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) /* [0, 1) */
{
  return (double)(splitmix(s) >> 11) * 0x1p-53;
}

/* ---------------------------------------------------------------- operators */

static int load(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step_arg *a = arg;
  int b = a->step % NBUF;
  /* Batch number step % STEPS_PER_EPOCH: every epoch sees the same data. */
  uint64_t seed = 1000 + (uint64_t)(a->step % STEPS_PER_EPOCH);
  for (int i = 0; i < BATCH; i++) {
    double y = 0;
    for (int j = 0; j < DIM; j++) {
      double f = uniform(&seed);
      a->t->raw[b][i][j] = f;
      y += TRUE_WEIGHT(j) * (2 * f - 1);
    }
    a->t->raw[b][i][DIM] = y + 0.01 * (uniform(&seed) - 0.5); /* some noise */
  }
  return 0;
}

static int preprocess(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step_arg *a = arg;
  int b = a->step % NBUF;
  for (int i = 0; i < BATCH; i++) {
    for (int j = 0; j < DIM; j++)
      a->t->x[b][i][j] = 2 * a->t->raw[b][i][j] - 1;
    a->t->target[b][i] = a->t->raw[b][i][DIM];
  }
  return 0;
}

static int forward(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step_arg *a = arg;
  int b = a->step % NBUF;
  double loss = 0;
  for (int i = 0; i < BATCH; i++) {
    double y = 0;
    for (int j = 0; j < DIM; j++)
      y += a->t->weights[j] * a->t->x[b][i][j];
    a->t->act[b][i] = y - a->t->target[b][i];
    loss += a->t->act[b][i] * a->t->act[b][i];
  }
  a->t->loss[a->step] = loss / BATCH;
  return 0;
}

static int backward(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step_arg *a = arg;
  int b = a->step % NBUF;
  for (int j = 0; j < DIM; j++) {
    double g = 0;
    for (int i = 0; i < BATCH; i++)
      g += a->t->act[b][i] * a->t->x[b][i][j];
    a->t->grad[b][j] = 2 * g / BATCH; /* d(mean squared residual)/dw */
  }
  return 0;
}

static int update(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step_arg *a = arg;
  int b = a->step % NBUF;
  for (int j = 0; j < DIM; j++)
    a->t->weights[j] -= LEARNING_RATE * a->t->grad[b][j];
  return 0;
}

/* ------------------------------------------------------------------ driver */

static trainer *trainer_new(int steps)
{
  trainer *t = calloc(1, sizeof *t); /* weights start at 0 */
  if (t && !(t->loss = calloc((size_t)steps, sizeof(double)))) {
    free(t);
    t = NULL;
  }
  return t;
}

static void trainer_free(trainer *t)
{
  if (t) {
    free(t->loss);
    free(t);
  }
}

/* Pushes step s's five operators. The descriptors are copied by weft_push;
 * only the argument, args[s], must outlive the operators. */
static int push_step(weft_engine *eng, step_arg *arg, weft_var *raw[], weft_var *x[],
                     weft_var *act[], weft_var *grad[], weft_var *weights)
{
  int b = arg->step % NBUF;
  weft_var *fwd_reads[] = {x[b], weights}, *bwd_reads[] = {x[b], act[b]};
  struct {
    weft_op_fn fn;
    const char *name;
    weft_var *const *reads;
    size_t num_reads;
    weft_var *write;
  } ops[] = {
    {load, "load", NULL, 0, raw[b]},
    {preprocess, "preprocess", &raw[b], 1, x[b]},
    {forward, "forward", fwd_reads, 2, act[b]},
    {backward, "backward", bwd_reads, 2, grad[b]},
    {update, "update", &grad[b], 1, weights},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    weft_op_desc d = {0}; /* a CPU operator, normal priority */
    d.fn = ops[i].fn;
    d.arg = arg;
    d.reads = ops[i].reads;
    d.num_reads = ops[i].num_reads;
    d.writes = &ops[i].write;
    d.num_writes = 1;
    d.name = ops[i].name;
    int rc = weft_push(eng, &d); /* waits while MAX_INFLIGHT are in flight */
    if (rc)
      return rc;
  }
  return 0;
}

static double epoch_loss(const trainer *t, int epoch)
{
  double sum = 0;
  for (int s = 0; s < STEPS_PER_EPOCH; s++)
    sum += t->loss[epoch * STEPS_PER_EPOCH + s];
  return sum / STEPS_PER_EPOCH;
}

int main(int argc, char **argv)
{
  int epochs = argc > 1 ? atoi(argv[1]) : 8;
  if (epochs < 1) {
    fprintf(stderr, "usage: %s [EPOCHS >= 1]\n", argv[0]);
    return 2;
  }
  int steps = epochs * STEPS_PER_EPOCH;
  trainer *t = trainer_new(steps), *ref = trainer_new(steps);
  step_arg *args = malloc((size_t)steps * sizeof *args);
  if (!t || !ref || !args) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }

  weft_engine_config cfg;
  weft_engine_config_default(&cfg); /* its own pool, one worker per CPU */
  cfg.max_inflight = MAX_INFLIGHT;
  weft_engine *eng;
  int rc = weft_engine_create(&eng, &cfg);
  if (rc) {
    fprintf(stderr, "weft_engine_create: %s\n", weft_strerror(rc));
    return 1;
  }
  weft_var *raw[NBUF], *x[NBUF], *act[NBUF], *grad[NBUF], *weights;
  rc = weft_var_new(eng, &weights);
  for (int b = 0; b < NBUF && !rc; b++)
    if ((rc = weft_var_new(eng, &raw[b])) || (rc = weft_var_new(eng, &x[b])) ||
        (rc = weft_var_new(eng, &act[b])) || (rc = weft_var_new(eng, &grad[b])))
      break;
  if (rc) {
    fprintf(stderr, "weft_var_new: %s\n", weft_strerror(rc));
    weft_engine_destroy(eng); /* frees the vars made so far, too */
    return 1;
  }

  for (int e = 0; e < epochs && !rc; e++) {
    for (int s = e * STEPS_PER_EPOCH; s < (e + 1) * STEPS_PER_EPOCH && !rc; s++) {
      args[s] = (step_arg){t, s};
      rc = push_step(eng, &args[s], raw, x, act, grad, weights);
    }
    /* Wait for this epoch's last update: then the weights are final for the
     * epoch and every forward of the epoch has stored its loss. The next
     * epoch is not pushed yet, so nothing writes the weights meanwhile. */
    if (!rc)
      rc = weft_var_wait(eng, weights);
    if (!rc)
      printf("epoch %d: loss %.6f\n", e, epoch_loss(t, e));
  }
  int wait_rc = weft_wait_all(eng); /* everything pushed, and any failure */
  rc = rc ? rc : wait_rc;
  /* Deleting a var is deferred until its operators are done (all are). */
  weft_var_delete(eng, weights);
  for (int b = 0; b < NBUF; b++) {
    weft_var_delete(eng, raw[b]);
    weft_var_delete(eng, x[b]);
    weft_var_delete(eng, act[b]);
    weft_var_delete(eng, grad[b]);
  }
  int destroy_rc = weft_engine_destroy(eng);
  rc = rc ? rc : destroy_rc;
  if (rc) {
    fprintf(stderr, "engine: %s\n", weft_strerror(rc));
    return 1;
  }

  /* The same steps, in order, on one thread. */
  for (int s = 0; s < steps; s++) {
    step_arg a = {ref, s};
    load(NULL, &a);
    preprocess(NULL, &a);
    forward(NULL, &a);
    backward(NULL, &a);
    update(NULL, &a);
  }
  int same = memcmp(t->weights, ref->weights, sizeof t->weights) == 0 &&
             memcmp(t->loss, ref->loss, (size_t)steps * sizeof(double)) == 0;
  int learned = t->loss[steps - 1] < t->loss[0] / 10;
  printf("engine_training_step: %d epochs of %d steps: weights %s the serial run's; loss %s\n",
         epochs, STEPS_PER_EPOCH, same ? "identical to" : "DIFFERENT from",
         learned ? "down tenfold or more" : "NOT DOWN ENOUGH");
  trainer_free(t);
  trainer_free(ref);
  free(args);
  return same && learned ? 0 : 1;
}
