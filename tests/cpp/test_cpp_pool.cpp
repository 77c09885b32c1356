// weft.hpp's pool, group and loops (tests/pool's C suites, through the C++
// API): every wrapper, its errors, which callables are stored without
// allocation (a counting operator new), that stored callables are destroyed
// exactly once, and that a throwing callable fails its task or loop with
// WEFT_EEXCEPTION.
#include "counting_new.hpp"
#include "cpp_test.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

namespace {

// fib(n) by fork-join: each level spawns one half into a group of its own.
long fib(weft::pool &p, int n)
{
  if (n < 2)
    return n;
  long x = 0;
  weft::group g(p);
  weft::status s = g.spawn([&p, &x, n] { x = fib(p, n - 1); });
  long y = fib(p, n - 2);
  weft::status w = g.wait();
  CT_CHECK(s.ok() && w.ok(), "fib(%d): spawn %d, wait %d", n, s.code(), w.code());
  return x + y;
}

// A trivially copyable callable of exactly Size bytes, aligned as Align:
// counts into *n when called.
template <std::size_t Size, std::size_t Align = alignof(void *)>
struct alignas(Align) sized_task {
  std::atomic<long> *n;
  char pad[Size - sizeof(std::atomic<long> *)];
  void operator()() const { n->fetch_add(1); }
};

} // namespace

CT_TEST(cpp_pool, create_and_destroy, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  cr_assert(p.ok());
  CT_EXPECT(p.init_status(), 0);
  cr_assert_not_null(p.get());
  cr_assert_eq(p.num_threads(), 2);
  CT_EXPECT(p.destroy(), 0);
  cr_assert_not(p.ok());
  cr_assert_null(p.get());
  CT_EXPECT(p.destroy(), 0); // nothing left to destroy
  CT_EXPECT(p.init_status(), 0);

  // A pool left automatic, destroyed by its destructor.
  weft::pool automatic;
  cr_assert(automatic.ok());
  cr_assert_geq(automatic.num_threads(), 1);

  // The config helper is weft_pool_config_default's.
  weft_pool_config c = weft::pool::default_config(), d;
  weft_pool_config_default(&d);
  cr_assert_eq(std::memcmp(&c, &d, sizeof c), 0);
}

CT_TEST(cpp_pool, bad_config_and_empty_owner, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  int x = 0;
  cfg.reserved[0] = &x; // must be zero
  weft::pool p(&cfg);
  cr_assert_not(p.ok());
  CT_EXPECT(p.init_status(), WEFT_EINVAL);
  cr_assert_null(p.get());
  cr_assert_eq(p.num_threads(), WEFT_EINVAL);
  std::atomic<long> n{0};
  CT_EXPECT(p.submit([&n] { n++; }), WEFT_EINVAL);
  CT_EXPECT(p.parallel_for(0, 10, [&n](std::size_t, std::size_t) { n++; }), WEFT_EINVAL);
  CT_EXPECT(p.parallel_launch(4, [&n](int, int) { n++; }), WEFT_EINVAL);
  weft_worker_stats st[4];
  CT_EXPECT(p.stats(st), WEFT_EINVAL);
  CT_EXPECT(p.park_idle(), WEFT_EINVAL);
  CT_EXPECT(p.destroy(), 0);
  // A group on no pool refuses spawns, and a refused heap callable is
  // destroyed at once.
  weft::group g(p);
  ct::counts c;
  CT_EXPECT(g.spawn([t = ct::tracker(c)] { return t.call() ? 0 : 1; }), WEFT_EINVAL);
  CT_EXPECT(g.spawn([&n] { n++; }), WEFT_EINVAL);
  CT_EXPECT(g.wait(), WEFT_EINVAL);
  cr_assert_eq(c.live(), 0, "a refused callable was not destroyed (%ld live)", c.live());
  cr_assert_eq(c.calls.load(), 0);
  cr_assert_eq(n.load(), 0);
}

CT_TEST(cpp_pool, move, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool a(&cfg);
  weft_pool *raw = a.get();
  weft::pool b(std::move(a));
  cr_assert_not(a.ok());
  cr_assert_eq(b.get(), raw);
  weft::pool c(&cfg);
  c = std::move(b); // destroys c's own pool first
  cr_assert_eq(c.get(), raw);
  cr_assert_null(b.get());
  cr_assert_eq(c.num_threads(), 2);
  weft_pool *released = c.release();
  cr_assert_eq(released, raw);
  cr_assert_not(c.ok());
  cr_assert_eq(weft_pool_destroy(released), 0);
}

CT_TEST(cpp_pool, submit_small_allocates_nothing, 120)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  long tasks = ct::scaled(20000, 100);
  std::atomic<long> n{0};
  long sum_expected = 0;
  std::atomic<long> sum{0};
  long before = ct::allocations();
  for (long i = 0; i < tasks; i++) {
    // Three words: a reference and a value, trivially copyable, 24 bytes.
    long v = i;
    auto f = [&n, &sum, v] {
      sum += v;
      n++;
    };
    static_assert(std::is_trivially_copyable_v<decltype(f)> && sizeof(f) <= WEFT_TASK_ARG_INLINE);
    sum_expected += v;
    weft::status s = p.submit(f);
    cr_assert(s.ok(), "submit: %s", s.message());
  }
  long after = ct::allocations();
  cr_assert(ct::wait_until([&] { return n.load() == tasks; }), "%ld of %ld tasks ran", n.load(),
            tasks);
  cr_assert_eq(after - before, 0, "%ld operator new calls for %ld small submits", after - before,
               tasks);
  cr_assert_eq(sum.load(), sum_expected, "each task saw its own copy");
}

CT_TEST(cpp_pool, submit_big_destroyed_once, 120)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  ct::counts c;
  long tasks = ct::scaled(2000, 50);
  {
    weft::pool p(&cfg);
    long before = ct::allocations();
    for (long i = 0; i < tasks; i++) {
      ct::tracker t(c);
      weft::status s = p.submit([t = std::move(t)] { CT_CHECK(t.call(), "payload lost"); });
      cr_assert(s.ok(), "submit: %s", s.message());
    }
    cr_assert_geq(ct::allocations() - before, tasks, "a non-trivial callable goes to the heap");
  } // the destructor runs every submitted task
  cr_assert_eq(c.calls.load(), tasks, "%ld calls for %ld tasks", c.calls.load(), tasks);
  cr_assert_eq(c.live(), 0, "%ld captures left alive", c.live());
  ct::assert_no_errors();
  ct_assert_no_leaks();
}

namespace {
std::atomic<long> plain_function_runs{0};
int plain_function()
{
  plain_function_runs++;
  return 0;
}
} // namespace

CT_TEST(cpp_pool, submit_functions_and_results, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  CT_EXPECT(p.submit(plain_function), 0); // a function
  CT_EXPECT(p.submit(&plain_function), 0); // a function pointer
  std::atomic<long> n{0};
  // A task's result goes nowhere: the pool ignores it, as weft_pool_submit.
  CT_EXPECT(p.submit([&n] {
    n++;
    return -5;
  }),
            0);
  CT_EXPECT(p.submit([&n] {
    n++;
    return weft::status(WEFT_EBUSY);
  }),
            0);
  // A move-only callable.
  auto owned = std::make_unique<long>(7);
  CT_EXPECT(p.submit([&n, o = std::move(owned)] { n += *o; }), 0);
  CT_EXPECT(p.destroy(), 0);
  cr_assert_eq(plain_function_runs.load(), 2);
  cr_assert_eq(n.load(), 9);
  // Submissions after destroy: the owner is empty.
  CT_EXPECT(p.submit([&n] { n++; }), WEFT_EINVAL);
}

CT_TEST(cpp_pool, group_spawn_and_wait, 120)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  cr_assert_eq(fib(p, 20), 6765);
  ct::assert_no_errors();

  // Results: the first non-zero one, an int or a status.
  weft::group g(p);
  std::atomic<long> n{0};
  for (int i = 0; i < 10; i++)
    CT_EXPECT(g.spawn([&n] { n++; }), 0);
  CT_EXPECT(g.wait(), 0);
  cr_assert_eq(n.load(), 10);
  CT_EXPECT(g.spawn([] { return -3; }), 0);
  CT_EXPECT(g.wait(), -3);
  CT_EXPECT(g.spawn([] { return weft::status(WEFT_EBUSY); }), 0);
  CT_EXPECT(g.wait(), WEFT_EBUSY);
  CT_EXPECT(g.wait(), 0); // reset by the wait before
  cr_assert_not_null(g.get());

  // Spawns from the group's own tasks, on the workers.
  std::atomic<long> inner{0};
  for (int i = 0; i < 8; i++)
    CT_EXPECT(g.spawn([&g, &inner] {
      for (int k = 0; k < 4; k++) {
        weft::status s = g.spawn([&inner] { inner++; });
        CT_CHECK(s.ok(), "nested spawn: %d", s.code());
      }
    }),
              0);
  CT_EXPECT(g.wait(), 0);
  cr_assert_eq(inner.load(), 32);
  ct::assert_no_errors();

  // The raw pool handle works as well.
  weft::group raw(p.get());
  CT_EXPECT(raw.spawn([&n] { n++; }), 0);
  CT_EXPECT(raw.wait(), 0);
  cr_assert_eq(n.load(), 11);
}

CT_TEST(cpp_pool, group_destructor_waits, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  std::atomic<long> done_tasks{0};
  {
    weft::group g(p);
    for (int i = 0; i < 4; i++)
      CT_EXPECT(g.spawn([&done_tasks] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        done_tasks++;
      }),
                0);
  } // waits here: the tasks use this frame's variables
  cr_assert_eq(done_tasks.load(), 4);
}

CT_TEST(cpp_pool, group_small_allocates_nothing, 120)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  weft::group g(p);
  long tasks = ct::scaled(20000, 100);
  std::atomic<long> n{0};
  std::atomic<long> *np = &n;
  long before = ct::allocations();
  for (long i = 0; i < tasks; i++) {
    weft::status s = g.spawn([np] { np->fetch_add(1); });
    cr_assert(s.ok(), "spawn: %s", s.message());
  }
  CT_EXPECT(g.wait(), 0);
  long after = ct::allocations();
  cr_assert_eq(n.load(), tasks);
  cr_assert_eq(after - before, 0, "%ld operator new calls for %ld small spawns", after - before,
               tasks);
}

CT_TEST(cpp_pool, size_rule_at_the_limits, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  weft::group g(p);
  std::atomic<long> n{0};
  // Exactly WEFT_TASK_ARG_INLINE bytes: inline.
  sized_task<WEFT_TASK_ARG_INLINE> fits{&n, {}};
  long before = ct::allocations();
  CT_EXPECT(g.spawn(fits), 0);
  CT_EXPECT(g.wait(), 0);
  cr_assert_eq(ct::allocations() - before, 0, "a %d-byte callable allocated", WEFT_TASK_ARG_INLINE);
  // One word more: on the heap, one allocation.
  sized_task<WEFT_TASK_ARG_INLINE + 8> big{&n, {}};
  before = ct::allocations();
  CT_EXPECT(g.spawn(big), 0);
  CT_EXPECT(g.wait(), 0);
  cr_assert_eq(ct::allocations() - before, 1, "a %d-byte callable: %ld allocations",
               WEFT_TASK_ARG_INLINE + 8, ct::allocations() - before);
  // Small but aligned more than WEFT_ARG_ALIGN: on the heap.
  sized_task<16, 16> aligned{&n, {}};
  before = ct::allocations();
  CT_EXPECT(g.spawn(aligned), 0);
  CT_EXPECT(p.submit(aligned), 0);
  CT_EXPECT(g.wait(), 0);
  cr_assert_eq(ct::allocations() - before, 2, "an over-aligned callable: %ld allocations",
               ct::allocations() - before);
  cr_assert(ct::wait_until([&] { return n.load() == 4; }), "%ld of 4 ran", n.load());
}

CT_TEST(cpp_pool, group_big_destroyed_once, 120)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  ct::counts c;
  auto shared = std::make_shared<int>(1);
  long tasks = ct::scaled(2000, 50);
  {
    weft::group g(p);
    for (long i = 0; i < tasks; i++) {
      weft::status s =
          g.spawn([t = ct::tracker(c), shared] { return t.call() && *shared == 1 ? 0 : 9; });
      cr_assert(s.ok(), "spawn: %s", s.message());
    }
    CT_EXPECT(g.wait(), 0);
  }
  cr_assert_eq(c.calls.load(), tasks);
  cr_assert_eq(c.live(), 0, "%ld captures left alive", c.live());
  cr_assert_eq(shared.use_count(), 1, "%ld shared_ptr copies left", shared.use_count());
  ct_assert_no_leaks();
}

CT_TEST(cpp_pool, parallel_for, 120)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  const std::size_t n = 100000;
  std::vector<long> out(n, 0);
  long before = ct::allocations();
  CT_EXPECT(p.parallel_for(0, n,
                           [&out](std::size_t b, std::size_t e) {
                             for (std::size_t i = b; i < e; i++)
                               out[i] += static_cast<long>(i);
                           }),
            0);
  cr_assert_eq(ct::allocations() - before, 0, "parallel_for copied its callable");
  for (std::size_t i = 0; i < n; i++)
    cr_assert_eq(out[i], static_cast<long>(i), "out[%zu] = %ld", i, out[i]);

  // grain: no chunk but the last is smaller.
  std::atomic<long> small_chunks{0};
  CT_EXPECT(p.parallel_for(
                0, 1000,
                [&](std::size_t b, std::size_t e) {
                  if (e - b < 100 && e != 1000)
                    small_chunks++;
                },
                100),
            0);
  cr_assert_eq(small_chunks.load(), 0);

  // The first failure; an int and a status.
  CT_EXPECT(p.parallel_for(
                0, n, [](std::size_t b, std::size_t e) { return b <= 500 && 500 < e ? -7 : 0; }),
            -7);
  CT_EXPECT(
      p.parallel_for(0, 10, [](std::size_t, std::size_t) { return weft::status(WEFT_ENODEV); }),
      WEFT_ENODEV);

  // An empty range calls nothing; begin > end is refused.
  std::atomic<long> calls{0};
  auto count = [&calls](std::size_t, std::size_t) { calls++; };
  CT_EXPECT(p.parallel_for(5, 5, count), 0);
  CT_EXPECT(p.parallel_for(6, 5, count), WEFT_EINVAL);
  cr_assert_eq(calls.load(), 0);

  // Neither copyable nor movable: called through a pointer.
  struct pinned {
    std::atomic<long> total{0};
    pinned() = default;
    pinned(const pinned &) = delete;
    void operator()(std::size_t b, std::size_t e) { total += static_cast<long>(e - b); }
  } body;
  CT_EXPECT(p.parallel_for(0, 777, body), 0);
  cr_assert_eq(body.total.load(), 777);
  // A const object, and a function.
  const auto constant = [&calls](std::size_t b, std::size_t e) {
    calls += static_cast<long>(e - b);
  };
  CT_EXPECT(p.parallel_for(0, 10, constant), 0);
  cr_assert_eq(calls.load(), 10);
}

namespace {
std::atomic<long> range_function_total{0};
int range_function(std::size_t b, std::size_t e)
{
  range_function_total += static_cast<long>(e - b);
  return 0;
}
std::atomic<long> launch_function_total{0};
void launch_function(int, int n)
{
  launch_function_total += n;
}
} // namespace

CT_TEST(cpp_pool, parallel_launch, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  const int tasks = 64;
  std::vector<std::atomic<int>> seen(tasks);
  std::atomic<int> bad{0};
  long before = ct::allocations();
  CT_EXPECT(p.parallel_launch(tasks,
                              [&](int id, int n) {
                                if (n != tasks || id < 0 || id >= n)
                                  bad++;
                                else
                                  seen[static_cast<std::size_t>(id)]++;
                              }),
            0);
  cr_assert_eq(ct::allocations() - before, 0, "parallel_launch copied its callable");
  cr_assert_eq(bad.load(), 0);
  for (int i = 0; i < tasks; i++)
    cr_assert_eq(seen[static_cast<std::size_t>(i)].load(), 1, "id %d ran %d times", i,
                 seen[static_cast<std::size_t>(i)].load());
  CT_EXPECT(p.parallel_launch(8, [](int id, int) { return id == 3 ? -11 : 0; }), -11);
  CT_EXPECT(p.parallel_launch(0, [&bad](int, int) { bad++; }), 0);
  CT_EXPECT(p.parallel_launch(-1, [&bad](int, int) { bad++; }), WEFT_EINVAL);
  cr_assert_eq(bad.load(), 0);
  CT_EXPECT(p.parallel_for(0, 50, range_function), 0);
  cr_assert_eq(range_function_total.load(), 50);
  CT_EXPECT(p.parallel_launch(4, launch_function), 0);
  cr_assert_eq(launch_function_total.load(), 16);
}

namespace {
struct minmax {
  long lo, hi;
};
int sum_squares(std::size_t b, std::size_t e, long &acc)
{
  for (std::size_t i = b; i < e; i++)
    acc += static_cast<long>(i * i);
  return 0;
}
void add_long(long &acc, const long &other)
{
  acc += other;
}
} // namespace

CT_TEST(cpp_pool, parallel_reduce, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  const std::size_t n = 100000;
  long sum = -1;
  long before = ct::allocations();
  CT_EXPECT(p.parallel_reduce(
                sum, 0, n, 0L,
                [](std::size_t b, std::size_t e, long &acc) {
                  acc += static_cast<long>((b + e - 1) * (e - b) / 2);
                },
                [](long &acc, const long &other) { acc += other; }),
            0);
  cr_assert_eq(ct::allocations() - before, 0, "parallel_reduce copied its callables");
  cr_assert_eq(sum, static_cast<long>(n * (n - 1) / 2));
  // A struct accumulator, an identity that is not zero, the result in the
  // identity's own object.
  minmax mm{1000000, -1};
  CT_EXPECT(p.parallel_reduce(
                mm, 10, 5000, mm,
                [](std::size_t b, std::size_t e, minmax &acc) {
                  acc.lo = std::min(acc.lo, static_cast<long>(b));
                  acc.hi = std::max(acc.hi, static_cast<long>(e - 1));
                },
                [](minmax &acc, const minmax &o) {
                  acc.lo = std::min(acc.lo, o.lo);
                  acc.hi = std::max(acc.hi, o.hi);
                },
                64),
            0);
  cr_assert(mm.lo == 10 && mm.hi == 4999, "min %ld max %ld", mm.lo, mm.hi);
  // Deterministic: the same bits at every run, whatever the threads do.
  std::vector<double> xs(20000);
  for (std::size_t i = 0; i < xs.size(); i++)
    xs[i] = 1.0 / static_cast<double>(i + 1);
  auto fold = [&xs](std::size_t b, std::size_t e, double &acc) {
    for (std::size_t i = b; i < e; i++)
      acc += xs[i];
  };
  auto add = [](double &acc, const double &o) { acc += o; };
  double first = 0, again = 0;
  CT_EXPECT(p.parallel_reduce(first, 0, xs.size(), 0.0, fold, add, 0, WEFT_REDUCE_DETERMINISTIC),
            0);
  for (int i = 0; i < 5; i++) {
    CT_EXPECT(p.parallel_reduce(again, 0, xs.size(), 0.0, fold, add, 0, WEFT_REDUCE_DETERMINISTIC),
              0);
    cr_assert_eq(std::memcmp(&first, &again, sizeof first), 0, "run %d: %.17g != %.17g", i, again,
                 first);
  }
  // Functions; an empty range gives the identity; a body's failure; errors.
  long squares = 0;
  CT_EXPECT(p.parallel_reduce(squares, 0, 10, 0L, sum_squares, add_long), 0);
  cr_assert_eq(squares, 285);
  long empty = 0;
  CT_EXPECT(p.parallel_reduce(empty, 5, 5, 42L, sum_squares, add_long), 0);
  cr_assert_eq(empty, 42);
  CT_EXPECT(p.parallel_reduce(
                empty, 0, 1000, 0L,
                [](std::size_t b, std::size_t, long &) { return b == 0 ? -6 : 0; }, add_long),
            -6);
  CT_EXPECT(p.parallel_reduce(empty, 6, 5, 0L, sum_squares, add_long), WEFT_EINVAL);
  CT_EXPECT(p.parallel_reduce(empty, 0, 5, 0L, sum_squares, add_long, 0, 1u << 7), WEFT_EINVAL);
  weft::pool none(std::move(p));
  CT_EXPECT(p.parallel_reduce(empty, 0, 5, 0L, sum_squares, add_long), WEFT_EINVAL);
}

CT_TEST(cpp_pool, group_wait_blocking, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  std::atomic<long> n{0};
  {
    weft::group g(p);
    for (int i = 0; i < 50; i++)
      CT_EXPECT(g.spawn([&n] { n++; }), 0);
    CT_EXPECT(g.wait_blocking(), 0);
    cr_assert_eq(n.load(), 50);
    CT_EXPECT(g.spawn([] { return -13; }), 0);
    CT_EXPECT(g.wait_blocking(), -13);
  }
  // From inside one of the pool's tasks: refused, nothing waited.
  std::atomic<int> inner{1};
  weft::group outer(p);
  CT_EXPECT(outer.spawn([&] {
    weft::group g(p);
    weft::status s = g.spawn([&n] { n++; });
    CT_CHECK(s.ok(), "spawn: %d", s.code());
    inner = g.wait_blocking().code();
    // the destructor still waits for the spawn
  }),
            0);
  CT_EXPECT(outer.wait(), 0);
  cr_assert_eq(inner.load(), WEFT_EDEADLK);
  cr_assert_eq(n.load(), 51);
  ct::assert_no_errors();
}

CT_TEST(cpp_pool, stats_and_park_idle, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  weft::group g(p);
  for (int i = 0; i < 100; i++)
    CT_EXPECT(g.spawn([] {}), 0);
  CT_EXPECT(g.wait(), 0);
  weft_worker_stats st[8];
  int k = -1;
  CT_EXPECT(p.stats(st, &k), 0);
  cr_assert_eq(k, 2);
  int one = -1;
  CT_EXPECT(p.stats(st, 1, &one), 0);
  cr_assert_eq(one, 1);
  CT_EXPECT(p.stats(st, 8), 0); // filled may be left out
  CT_EXPECT(p.stats(nullptr, 0, &k), 0);
  cr_assert_eq(k, 0);
  CT_EXPECT(p.stats(nullptr, 1), WEFT_EINVAL);
  CT_EXPECT(p.stats(st, -1), WEFT_EINVAL);
  CT_EXPECT(p.park_idle(), 0);
}

#if defined(__cpp_exceptions)
CT_TEST(cpp_pool, throwing_callables, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  weft::group g(p);
  std::atomic<long> n{0};
  CT_EXPECT(g.spawn([] { throw std::runtime_error("task"); }), 0);
  CT_EXPECT(g.spawn([&n] { n++; }), 0);
  CT_EXPECT(g.wait(), WEFT_EEXCEPTION);
  cr_assert_eq(n.load(), 1, "the other task ran");
  // A heap callable that throws is still destroyed.
  ct::counts c;
  CT_EXPECT(g.spawn([t = ct::tracker(c)]() -> int {
    t.call();
    throw 42;
  }),
            0);
  CT_EXPECT(g.wait(), WEFT_EEXCEPTION);
  cr_assert_eq(c.calls.load(), 1);
  cr_assert_eq(c.live(), 0);
  CT_EXPECT(p.parallel_for(0, 1000,
                           [](std::size_t b, std::size_t) {
                             if (b == 0)
                               throw std::bad_alloc();
                           }),
            WEFT_EEXCEPTION);
  CT_EXPECT(p.parallel_launch(4,
                              [](int id, int) {
                                if (id == 2)
                                  throw std::runtime_error("launch");
                              }),
            WEFT_EEXCEPTION);
  // A submitted task that throws fails quietly; the pool goes on.
  CT_EXPECT(p.submit([] { throw 1; }), 0);
  CT_EXPECT(p.submit([&n] { n++; }), 0);
  cr_assert(ct::wait_until([&] { return n.load() == 2; }));
  CT_EXPECT(p.destroy(), 0);
}

CT_TEST(cpp_pool, throwing_copy_propagates, 60)
{
  // A callable whose copy into storage throws: the exception reaches the
  // caller, nothing was spawned.
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  struct bad_copy {
    bad_copy() = default;
    bad_copy(const bad_copy &) { throw std::runtime_error("copy"); }
    void operator()() const {}
  } f;
  weft::group g(p);
  bool caught = false;
  try {
    (void)g.spawn(f);
  } catch (const std::runtime_error &) {
    caught = true;
  }
  cr_assert(caught);
  CT_EXPECT(g.wait(), 0);
}

CT_TEST(cpp_pool, throwing_reduce, 60)
{
  ct::clear_env();
  weft_pool_config cfg = ct::pool_config(2);
  weft::pool p(&cfg);
  long r = 0;
  CT_EXPECT(p.parallel_reduce(
                r, 0, 1000, 0L,
                [](std::size_t b, std::size_t, long &) {
                  if (b == 0)
                    throw std::runtime_error("body");
                },
                add_long),
            WEFT_EEXCEPTION);
  // Deterministic: every combine runs, on this thread.
  CT_EXPECT(p.parallel_reduce(
                r, 0, 1000, 0L, sum_squares, [](long &, const long &) { throw 5; }, 10,
                WEFT_REDUCE_DETERMINISTIC),
            WEFT_EEXCEPTION);
}
#endif
