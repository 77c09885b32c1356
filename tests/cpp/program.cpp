// A program on weft.hpp alone, built by header_cpp.sh as C++17 and C++20,
// and with -fno-exceptions (-DWEFT_TEST_NO_EXCEPTIONS: it then checks that
// exceptions really are off), against the shared library, and run: every
// wrapper's template is instantiated in each of those modes and its result
// checked. Exits 0 when everything held, else 1 with a line per failure.
#include <weft/weft.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#if defined(WEFT_TEST_NO_EXCEPTIONS) && defined(__cpp_exceptions)
#error "built to test -fno-exceptions, but exceptions are on"
#endif

namespace {

int failures = 0;

void check(bool ok, const char *what, int code = 0)
{
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s (%d: %s)\n", what, code, weft_strerror(code));
    failures++;
  }
}

void expect(weft::status s, int want, const char *what)
{
  check(s.code() == want, what, s.code());
}

} // namespace

int main()
{
  weft_pool_config pc = weft::pool::default_config();
  pc.num_threads = 2;
  pc.affinity = "none";
  weft::pool pool(&pc);
  check(pool.ok() && pool.num_threads() == 2, "pool", pool.init_status().code());

  // Pool: submit (inline and heap), group, loops, stats.
  std::atomic<long> n{0};
  expect(pool.submit([&n] { n++; }), 0, "submit");
  auto text = std::make_shared<std::string>("heap");
  expect(pool.submit([&n, text] { n += static_cast<long>(text->size()); }), 0, "submit heap");
  {
    weft::group g(pool);
    for (int i = 0; i < 100; i++)
      expect(g.spawn([&n] { n++; }), 0, "spawn");
    expect(g.spawn([s = std::string("x")] { return s == "x" ? 0 : 1; }), 0, "spawn heap");
    expect(g.wait(), 0, "group wait");
    expect(g.spawn([] { return -4; }), 0, "spawn failing");
    expect(g.wait(), -4, "group failure");
  }
  std::vector<int> v(1000, 1);
  std::atomic<long> sum{0};
  expect(pool.parallel_for(0, v.size(),
                           [&](std::size_t b, std::size_t e) {
                             long s = 0;
                             for (std::size_t i = b; i < e; i++)
                               s += v[i];
                             sum += s;
                           }),
         0, "parallel_for");
  check(sum.load() == 1000, "parallel_for sum");
  expect(pool.parallel_launch(4, [&](int, int k) { sum += k; }), 0, "parallel_launch");
  check(sum.load() == 1016, "parallel_launch sum");
  long total = 0;
  expect(pool.parallel_reduce(
             total, 0, 100, 0L,
             [](std::size_t b, std::size_t e, long &acc) { acc += static_cast<long>(e - b); },
             [](long &acc, const long &other) { acc += other; }),
         0, "parallel_reduce");
  check(total == 100, "parallel_reduce sum", static_cast<int>(total));
  {
    weft::group g(pool);
    expect(g.spawn([&n] { n++; }), 0, "spawn");
    expect(g.wait_blocking(), 0, "group wait_blocking");
  }
  weft_worker_stats st[2];
  int k = 0;
  expect(pool.stats(st, &k), 0, "stats");
  check(k == 2, "stats count", k);
  expect(pool.park_idle(), 0, "park_idle");

  // Engine: vars, pushes (inline and heap), async, reusable, capture.
  weft::engine eng(pool);
  check(eng.ok(), "engine", eng.init_status().code());
  weft::var a(eng), b(eng);
  long x = 1, y = 2;
  expect(eng.push([&](const weft::run_ctx &) { y += x; }, weft::reads{a}, weft::writes{b}), 0,
         "push");
  expect(eng.push([&x, text] { x *= static_cast<long>(text->size()) / 2; }, weft::writes{a}), 0,
         "push heap");
  expect(eng.push_async([](weft::done d) { d.signal(); }, weft::writes{a},
                        weft::op_options{}.with_name("async")),
         0, "push_async");
  expect(eng.wait_all(), 0, "wait_all");
  check(x == 2 && y == 3, "engine order");
  expect(eng.push([] { return -8; }, weft::writes{b}), 0, "push failing");
  expect(eng.var_wait(b), -8, "var_wait failure");
  weft::op o = eng.make_op([&y] { y++; }, weft::writes{b});
  expect(o.init_status(), 0, "make_op");
  expect(o.push(), 0, "op push");
  weft::op ao =
      eng.make_async_op([](const weft::run_ctx &, weft::done d) { d.signal(0); }, weft::writes{b});
  expect(ao.push(), 0, "async op push");
  weft::graph g =
      eng.capture([&] { return eng.push([&y] { y += 10; }, weft::reads{a}, weft::writes{b}); });
  expect(g.init_status(), 0, "capture");
  expect(g.launch(), 0, "launch");
  expect(eng.var_wait(b), 0, "var_wait");
  check(y == 14, "graph ran", static_cast<int>(y));
  weft::graph failed = eng.capture([] { return weft::status(WEFT_EBUSY); });
  expect(failed.init_status(), WEFT_EBUSY, "failing capture");
  check(eng.gpu_count() >= 0, "gpu_count");
  check(weft::current_worker() == -1, "current_worker");

#if defined(__cpp_exceptions)
  // Exceptions on: a throwing callable fails with WEFT_EEXCEPTION.
  expect(eng.push([] { throw 1; }, weft::writes{a}), 0, "push throwing");
  expect(eng.var_wait(a), WEFT_EEXCEPTION, "throwing operator");
  const char *mode = "exceptions on";
#else
  const char *mode = "exceptions off";
#endif
  expect(eng.wait_all(), -8, "wait_all failure");
  std::printf("weft.hpp program (C++ %ld, %s): %s\n", static_cast<long>(__cplusplus), mode,
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
