/*
 * The dependency engine from C++ (include/weft/weft.hpp): a training loop,
 * MXNet-style. Every step pushes its operators as lambdas, each with the
 * vars it reads and writes; the engine runs one as soon as the operators it
 * depends on are done:
 *
 *   load(s)      writes batch[b]                   a batch: inputs, targets
 *   forward(s)   reads batch[b], w1, w2, writes act    hidden layer, residuals, loss
 *   backward(s)  reads batch[b], act, w2, writes g1, g2   the gradients
 *   update1(s)   reads g1, writes w1               one SGD step per layer:
 *   update2(s)   reads g2, writes w2               the two run side by side
 *
 * with b = s % 2: two batch buffers, so load(s + 1) runs while step s
 * computes. forward(s + 1) waits for both updates of step s (it reads the
 * weights they write); update2(s) waits for backward(s)'s read of w2. No
 * locks, no explicit ordering: the vars say it all. The engine has
 * max_inflight set, so the push loop waits when that many operators are
 * pushed but not finished.
 *
 * The model: a two-layer network (tanh hidden layer, linear output) learning
 * a teacher network of the same shape from synthetic batches, mean squared
 * error, plain SGD. usage: engine_training_step_cpp [STEPS]   (default 400)
 * Checks the weights and every step's loss against a serial run of the same
 * functions, bit for bit, and that the loss came down to a quarter of the
 * first step's or less; exits non-zero otherwise.
 */
#include <weft/weft.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int DIM = 16;     /* inputs per sample */
constexpr int HIDDEN = 32;  /* hidden units */
constexpr int BATCH = 64;   /* samples per batch */
constexpr int BATCHES = 32; /* batches in the data set (a step uses step % BATCHES) */
constexpr int NBUF = 2;     /* batch buffers */
constexpr int MAX_INFLIGHT = 16;
constexpr double LEARNING_RATE = 0.05;

std::uint64_t splitmix(std::uint64_t &s)
{
  std::uint64_t z = (s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

double uniform(std::uint64_t &s) /* [-1, 1) */
{
  return (double)(splitmix(s) >> 11) * 0x1p-52 - 1.0;
}

/* The teacher the data set comes from: the same shape as the model. */
struct Teacher {
  std::vector<double> w1 = std::vector<double>(HIDDEN * DIM), w2 = std::vector<double>(HIDDEN);
  Teacher()
  {
    std::uint64_t seed = 7;
    for (double &w : w1)
      w = uniform(seed);
    for (double &w : w2)
      w = uniform(seed);
  }
};
const Teacher teacher;

struct Batch {
  std::vector<double> x = std::vector<double>(BATCH * DIM), y = std::vector<double>(BATCH);
};

/* Everything one run computes on. The buffers are plain memory; the vars
 * only tell the engine who uses which. */
struct Model {
  std::vector<double> w1 = std::vector<double>(HIDDEN * DIM), w2 = std::vector<double>(HIDDEN);
  std::vector<double> g1 = std::vector<double>(HIDDEN * DIM), g2 = std::vector<double>(HIDDEN);
  Batch batch[NBUF];
  std::vector<double> hidden = std::vector<double>(BATCH * HIDDEN); /* activations */
  std::vector<double> resid = std::vector<double>(BATCH);           /* output - target */
  std::vector<double> loss;                                         /* per step */

  explicit Model(int steps) : loss(steps)
  {
    std::uint64_t seed = 42; /* small random weights, the same for every run */
    for (double &w : w1)
      w = 0.3 * uniform(seed);
    for (double &w : w2)
      w = 0.3 * uniform(seed);
  }
};

/* ---------------------------------------------------------------- operators */

void load(Model &m, int step)
{
  Batch &bt = m.batch[step % NBUF];
  std::uint64_t seed = 1000 + (std::uint64_t)(step % BATCHES); /* every epoch the same data */
  for (int i = 0; i < BATCH; i++) {
    const double *x = &bt.x[i * DIM];
    for (int j = 0; j < DIM; j++)
      bt.x[i * DIM + j] = uniform(seed);
    double y = 0;
    for (int k = 0; k < HIDDEN; k++) {
      double a = 0;
      for (int j = 0; j < DIM; j++)
        a += teacher.w1[k * DIM + j] * x[j];
      y += teacher.w2[k] * std::tanh(a);
    }
    bt.y[i] = y;
  }
}

void forward(Model &m, int step)
{
  const Batch &bt = m.batch[step % NBUF];
  double loss = 0;
  for (int i = 0; i < BATCH; i++) {
    double out = 0;
    for (int k = 0; k < HIDDEN; k++) {
      double a = 0;
      for (int j = 0; j < DIM; j++)
        a += m.w1[k * DIM + j] * bt.x[i * DIM + j];
      double h = std::tanh(a);
      m.hidden[i * HIDDEN + k] = h;
      out += m.w2[k] * h;
    }
    m.resid[i] = out - bt.y[i];
    loss += m.resid[i] * m.resid[i];
  }
  m.loss[step] = loss / BATCH;
}

void backward(Model &m, int step)
{
  const Batch &bt = m.batch[step % NBUF];
  for (int k = 0; k < HIDDEN; k++) {
    double g2 = 0;
    for (int j = 0; j < DIM; j++)
      m.g1[k * DIM + j] = 0;
    for (int i = 0; i < BATCH; i++) {
      double h = m.hidden[i * HIDDEN + k];
      double d = 2 * m.resid[i] / BATCH; /* d(loss)/d(out) */
      g2 += d * h;
      double dh = d * m.w2[k] * (1 - h * h); /* through tanh */
      for (int j = 0; j < DIM; j++)
        m.g1[k * DIM + j] += dh * bt.x[i * DIM + j];
    }
    m.g2[k] = g2;
  }
}

void update(std::vector<double> &w, const std::vector<double> &g)
{
  for (std::size_t i = 0; i < w.size(); i++)
    w[i] -= LEARNING_RATE * g[i];
}

/* ------------------------------------------------------------------ driver */

/* Trains m for its steps on the engine; the first failure, else ok. */
weft::status train(Model &m, int steps)
{
  weft_engine_config cfg = weft::engine::default_config(); /* its own pool: one worker per CPU */
  cfg.max_inflight = MAX_INFLIGHT;
  weft::engine eng(&cfg);
  if (!eng.ok())
    return eng.init_status();
  /* Declared after the engine, so destroyed before it (a var's deletion
   * waits for the operators pushed on it). */
  weft::var w1(eng), w2(eng), g1(eng), g2(eng), act(eng);
  weft::var batch[NBUF] = {weft::var(eng), weft::var(eng)};
  for (const weft::var *v : {&w1, &w2, &g1, &g2, &act, &batch[0], &batch[1]})
    if (!v->ok())
      return v->init_status();

  const auto named = [](const char *name) { return weft::op_options{}.with_name(name); };
  for (int s = 0; s < steps; s++) {
    const weft::var &bt = batch[s % NBUF];
    /* Each lambda holds a reference to the model and the step number:
     * small and trivially copyable, so it is stored in the operator's own
     * block (no allocation). push waits while MAX_INFLIGHT are in flight. */
    weft::status st = eng.push([&m, s] { load(m, s); }, weft::writes{bt}, named("load"));
    if (st)
      st = eng.push([&m, s] { forward(m, s); }, weft::reads{bt, w1, w2}, weft::writes{act},
                    named("forward"));
    if (st)
      st = eng.push([&m, s] { backward(m, s); }, weft::reads{bt, act, w2},
                    weft::writes{g1, g2}, named("backward"));
    if (st)
      st = eng.push([&m] { update(m.w1, m.g1); }, weft::reads{g1}, weft::writes{w1},
                    named("update1"));
    if (st)
      st = eng.push([&m] { update(m.w2, m.g2); }, weft::reads{g2}, weft::writes{w2},
                    named("update2"));
    if (!st) {
      (void)eng.wait_all();
      return st;
    }
    if ((s + 1) % (4 * BATCHES) == 0) {
      /* Once the step's second update is done, every forward so far has
       * stored its loss (each one was read before an update wrote w2). */
      st = eng.var_wait(w2);
      if (!st)
        return st;
      std::printf("step %d: loss %.6f\n", s, m.loss[s]);
    }
  }
  return eng.wait_all(); /* everything pushed, and any failure */
}

bool bits_equal(const std::vector<double> &a, const std::vector<double> &b)
{
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

} // namespace

int main(int argc, char **argv)
{
  int steps = argc > 1 ? std::atoi(argv[1]) : 400;
  if (steps < 32) {
    std::fprintf(stderr, "usage: %s [STEPS >= 32]\n", argv[0]);
    return 2;
  }
  Model m(steps), ref(steps);
  weft::status st = train(m, steps);
  if (!st) {
    std::fprintf(stderr, "engine: %s\n", st.message());
    return 1;
  }

  /* The same steps, in order, on one thread. */
  for (int s = 0; s < steps; s++) {
    load(ref, s);
    forward(ref, s);
    backward(ref, s);
    update(ref.w1, ref.g1);
    update(ref.w2, ref.g2);
  }
  bool same = bits_equal(m.w1, ref.w1) && bits_equal(m.w2, ref.w2) && bits_equal(m.loss, ref.loss);
  bool learned = m.loss[steps - 1] <= m.loss[0] / 4;
  std::printf("engine_training_step_cpp: %d steps: weights %s the serial run's; loss %.4g -> "
              "%.4g, %s\n",
              steps, same ? "identical to" : "DIFFERENT from", m.loss[0], m.loss[steps - 1],
              learned ? "down fourfold or more" : "NOT DOWN ENOUGH");
  return same && learned ? 0 : 1;
}
