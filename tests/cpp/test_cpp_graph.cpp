// SPDX-License-Identifier: MIT
// weft.hpp's capture scope and graphs (tests/graph's C suites, through the
// C++ API): what a capture records and a launch replays, that the capture
// is ended on every way out of its body (an early failure, an exception),
// the calls a capture refuses, a graph's errors, and that the callables a
// graph recorded are destroyed exactly once, when the graph is.
#include "counting_new.hpp"
#include "cpp_test.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace {

struct fixture {
  weft_pool_config pc = ct::pool_config(2);
  weft::pool pool{&pc};
  weft::engine eng{pool};
};

} // namespace

CT_TEST(cpp_graph, capture_and_launch, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng), b(eng);
  long x = 0, y = 0;
  weft::op reused = eng.make_op([&y] { y += 100; }, weft::reads{a}, weft::writes{b});
  cr_assert(reused.ok());
  weft::graph g = eng.capture([&] {
    CT_EXPECT(eng.push([&x] { x += 1; }, weft::writes{a}), 0);
    CT_EXPECT(eng.push([&x, &y] { y += x; }, weft::reads{a}, weft::writes{b}), 0);
    CT_EXPECT(reused.push(), 0);
  });
  cr_assert(g.ok(), "capture: %s", g.init_status().message());
  CT_EXPECT(g.init_status(), 0);
  cr_assert_not_null(g.get());
  cr_assert_eq(x, 0, "a capture records, it does not run");
  const int launches = 5;
  long want_y = 0;
  for (int i = 1; i <= launches; i++) {
    CT_EXPECT(g.launch(), 0);
    CT_EXPECT(eng.var_wait(b), 0);
    want_y += i + 100;
    cr_assert_eq(x, i);
    cr_assert_eq(y, want_y);
  }
  CT_EXPECT(g.destroy(), 0);
  cr_assert_not(g.ok());
  CT_EXPECT(g.destroy(), 0);
  CT_EXPECT(g.launch(), WEFT_EINVAL);

  // A capture of nothing: an empty graph, whose launch does nothing.
  weft::graph empty = eng.capture([] {});
  cr_assert(empty.ok());
  CT_EXPECT(empty.launch(), 0);
  // Moves, release.
  weft::graph moved(std::move(empty));
  cr_assert_null(empty.get());
  weft::graph other;
  cr_assert_not(other.ok());
  CT_EXPECT(other.init_status(), WEFT_EINVAL);
  other = std::move(moved);
  cr_assert(other.ok());
  CT_EXPECT(eng.wait_all(), 0);
  weft_graph *raw = other.release();
  cr_assert_eq(weft_graph_destroy(raw), 0);
}

CT_TEST(cpp_graph, small_closures_allocate_nothing, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng);
  std::atomic<long> n{0};
  long before = ct::allocations();
  weft::graph g = eng.capture([&] {
    for (int i = 0; i < 100; i++)
      CT_EXPECT(eng.push([&n, i] { n += i; }, weft::writes{a}), 0);
  });
  cr_assert(g.ok());
  for (int i = 0; i < 10; i++) {
    CT_EXPECT(g.launch(), 0);
    CT_EXPECT(eng.var_wait(a), 0);
  }
  cr_assert_eq(ct::allocations() - before, 0, "%ld operator new calls", ct::allocations() - before);
  cr_assert_eq(n.load(), 10 * 4950);
}

CT_TEST(cpp_graph, recorded_callables_live_as_long_as_the_graph, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng);
  ct::counts c;
  auto shared = std::make_shared<int>(5);
  {
    weft::graph g = eng.capture([&] {
      for (int i = 0; i < 3; i++)
        CT_EXPECT(
            eng.push([t = ct::tracker(c), shared] { return t.call() && *shared == 5 ? 0 : 1; },
                     weft::writes{a}),
            0);
    });
    cr_assert(g.ok());
    cr_assert_eq(c.live(), 3, "the graph holds one copy of each (%ld live)", c.live());
    for (int i = 0; i < 4; i++) {
      CT_EXPECT(g.launch(), 0);
      CT_EXPECT(eng.var_wait(a), 0);
    }
    cr_assert_eq(c.calls.load(), 12);
    cr_assert_eq(c.live(), 3, "launches keep them");
  } // the graph's destructor frees them
  cr_assert_eq(c.live(), 0, "%ld recorded captures alive after the graph", c.live());
  cr_assert_eq(shared.use_count(), 1);
  ct_assert_no_leaks();
}

CT_TEST(cpp_graph, a_failing_body_ends_the_capture, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng);
  ct::counts c;
  std::atomic<long> n{0};
  weft::graph g = eng.capture([&]() -> int {
    CT_EXPECT(eng.push([t = ct::tracker(c)] { t.call(); }, weft::writes{a}), 0);
    if (a.ok())
      return -21; // an early return with a failure
    CT_EXPECT(eng.push([&n] { n++; }, weft::writes{a}), 0);
    return 0;
  });
  cr_assert_not(g.ok());
  CT_EXPECT(g.init_status(), -21);
  cr_assert_eq(c.live(), 0, "the partial graph's callables were not destroyed");
  cr_assert_eq(c.calls.load(), 0);
  // The capture is over: waits work again, and so does a new capture.
  CT_EXPECT(eng.var_wait(a), 0);
  weft::graph s = eng.capture([&] { return weft::status(WEFT_ENOMEM); });
  CT_EXPECT(s.init_status(), WEFT_ENOMEM);
  weft::graph ok = eng.capture([&] { return eng.push([&n] { n++; }, weft::writes{a}); });
  cr_assert(ok.ok(), "capture: %s", ok.init_status().message());
  CT_EXPECT(ok.launch(), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(n.load(), 1);
}

CT_TEST(cpp_graph, calls_refused_while_capturing, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng);
  weft::graph prior = eng.capture([] {});
  cr_assert(prior.ok());
  weft::graph g = eng.capture([&] {
    CT_EXPECT(eng.var_wait(a), WEFT_EBUSY);
    CT_EXPECT(eng.wait_all(), WEFT_EBUSY);
    CT_EXPECT(prior.launch(), WEFT_EBUSY);
    CT_EXPECT(eng.destroy(), WEFT_EBUSY);
    cr_assert(eng.ok(), "a refused destroy keeps the engine");
    // A var deleted inside the capture: refused, it stays live.
    weft::var inner(eng);
    cr_assert(inner.ok());
    CT_EXPECT(inner.destroy(), WEFT_EBUSY);
    cr_assert(inner.ok());
    weft_var *kept = inner.release();
    // A second capture on this thread: refused, the first goes on.
    weft::graph nested = eng.capture([] {});
    cr_assert_not(nested.ok());
    CT_EXPECT(nested.init_status(), WEFT_EBUSY);
    return weft::status(weft_var_delete(eng.get(), kept)); // still refused: WEFT_EBUSY
  });
  CT_EXPECT(g.init_status(), WEFT_EBUSY);
  CT_EXPECT(eng.var_wait(a), 0);
}

CT_TEST(cpp_graph, capture_from_a_worker_is_refused, 60)
{
  ct::clear_env();
  fixture f;
  // Submitted, not spawned: a group's wait would help run the task on this
  // thread, which may capture.
  std::atomic<int> rc{1};
  CT_EXPECT(f.pool.submit([&] {
    weft::graph g = f.eng.capture([] {});
    rc = g.init_status().code();
  }),
            0);
  cr_assert(ct::wait_until([&] { return rc.load() != 1; }));
  cr_assert_eq(rc.load(), WEFT_EINVAL);
  // And from inside one of the engine's operators.
  std::atomic<int> op_rc{1};
  CT_EXPECT(f.eng.push([&] { op_rc = f.eng.capture([] {}).init_status().code(); }), 0);
  CT_EXPECT(f.eng.wait_all(), 0);
  cr_assert_eq(op_rc.load(), WEFT_EINVAL);
}

CT_TEST(cpp_graph, destroy_waits_out_a_running_launch, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng);
  std::atomic<int> gate{0}, started{0};
  ct::counts c;
  std::thread opener;
  {
    weft::graph g = eng.capture([&] {
      CT_EXPECT(eng.push(
                    [&gate, &started, t = ct::tracker(c)] {
                      started = 1;
                      ct::wait_until([&gate] { return gate.load() != 0; });
                      t.call();
                    },
                    weft::writes{a}),
                0);
    });
    cr_assert(g.ok());
    CT_EXPECT(g.launch(), 0);
    cr_assert(ct::wait_until([&] { return started.load() != 0; }));
    CT_EXPECT(g.launch(), 0);           // queued behind the one that runs
    CT_EXPECT(g.destroy(), WEFT_EBUSY); // nothing happened: the graph stays
    cr_assert(g.ok());
    opener = std::thread([&gate] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      gate = 1;
    });
  } // the destructor retries until the launch is over
  opener.join();
  cr_assert_eq(c.calls.load(), 2, "both launches ran before the graph went");
  cr_assert_eq(c.live(), 0);
  CT_EXPECT(eng.wait_all(), 0);
}

CT_TEST(cpp_graph, a_graph_may_outlive_its_engine, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool pool(&pc);
  ct::counts c;
  weft::graph g;
  {
    weft::engine eng(pool);
    weft::var a(eng); // goes before the engine
    g = eng.capture(
        [&] { CT_EXPECT(eng.push([t = ct::tracker(c)] { t.call(); }, weft::writes{a}), 0); });
    cr_assert(g.ok());
    CT_EXPECT(g.launch(), 0);
    CT_EXPECT(eng.wait_all(), 0);
  } // the engine's destroy takes the graph's operators, callables included
  cr_assert_eq(c.calls.load(), 1);
  cr_assert_eq(c.live(), 0, "%ld recorded captures alive after the engine", c.live());
  CT_EXPECT(g.launch(), WEFT_ESHUTDOWN);
  CT_EXPECT(g.destroy(), 0); // frees what is left
  ct_assert_no_leaks();
}

#if defined(__cpp_exceptions)
CT_TEST(cpp_graph, a_throwing_body_ends_the_capture, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  weft::var a(eng);
  ct::counts c;
  bool caught = false;
  try {
    weft::graph g = eng.capture([&] {
      CT_EXPECT(eng.push([t = ct::tracker(c)] { t.call(); }, weft::writes{a}), 0);
      throw std::runtime_error("body");
    });
    cr_assert_fail("capture returned a graph past a throw");
  } catch (const std::runtime_error &e) {
    caught = std::strcmp(e.what(), "body") == 0;
  }
  cr_assert(caught, "the body's exception was not rethrown");
  cr_assert_eq(c.live(), 0, "the partial graph's callables were not destroyed");
  CT_EXPECT(eng.var_wait(a), 0); // not WEFT_EBUSY: the capture ended
  weft::graph g = eng.capture([&] { CT_EXPECT(eng.push([] {}, weft::writes{a}), 0); });
  cr_assert(g.ok());

  // A recorded operator that throws fails at each launch.
  weft::graph t =
      eng.capture([&] { CT_EXPECT(eng.push([]() -> int { throw 7; }, weft::writes{a}), 0); });
  cr_assert(t.ok());
  for (int i = 0; i < 2; i++) {
    CT_EXPECT(t.launch(), 0);
    CT_EXPECT(eng.var_wait(a), WEFT_EEXCEPTION);
  }
}
#endif

// A graph made with explicit edges (make_graph, add, edge): edges given in
// reverse order are respected at every launch, a node's index comes back,
// a cycle is refused at the launch with nothing run, and a non-trivial
// callable stored with a node is destroyed once, with the graph.
CT_TEST(cpp_graph, explicit_edges, 60)
{
  ct::clear_env();
  fixture f;
  weft::engine &eng = f.eng;
  enum { N = 64 };
  std::vector<int> order;
  order.reserve(N * 3);
  std::mutex m;
  auto token = std::make_shared<int>(7);
  {
    weft::graph g = eng.make_graph();
    cr_assert(g.ok(), "make_graph: %s", g.init_status().message());
    std::size_t idx[N];
    for (int i = 0; i < N; i++) {
      // a chain N-1 -> N-2 -> ... -> 0, declared below in reverse
      CT_EXPECT(g.add(
                    [i, &order, &m, token] {
                      std::lock_guard<std::mutex> l(m);
                      order.push_back(i);
                    },
                    {}, {}, weft::op_options{}, &idx[i]),
                0);
      cr_assert_eq(idx[i], (std::size_t)i, "node %d got index %zu", i, idx[i]);
    }
    cr_assert_eq(token.use_count(), 1 + N, "each node holds its own copy of the callable");
    for (int i = 0; i + 1 < N; i++)
      CT_EXPECT(g.edge(idx[i + 1], idx[i]), 0);
    CT_EXPECT(g.edge(idx[1], idx[0]), 0); // a duplicate: merged
    CT_EXPECT(g.edge(idx[0], idx[0]), WEFT_EINVAL);
    CT_EXPECT(g.edge(idx[0], N + 5), WEFT_EINVAL);
    for (int l = 0; l < 3; l++) {
      CT_EXPECT(g.launch(), 0);
      CT_EXPECT(eng.wait_all(), 0);
    }
    cr_assert_eq(order.size(), (std::size_t)(3 * N));
    for (int l = 0; l < 3; l++)
      for (int k = 0; k < N; k++)
        cr_assert_eq(order[(std::size_t)(l * N + k)], N - 1 - k, "launch %d, step %d ran %d", l,
                     k, order[(std::size_t)(l * N + k)]);
    // Close a loop: 0 before N-1. The launch refuses it and runs nothing.
    CT_EXPECT(g.edge(idx[0], idx[N - 1]), 0);
    order.clear();
    CT_EXPECT(g.launch(), WEFT_EINVAL);
    CT_EXPECT(eng.wait_all(), 0);
    cr_assert(order.empty(), "a graph with a cycle runs nothing");
  }
  cr_assert_eq(token.use_count(), 1, "the graph's callables went with it");

  // Async nodes: completed through their done handle.
  std::atomic<int> ran{0};
  weft::graph g2 = eng.make_graph();
  std::size_t a = 0, b = 0;
  CT_EXPECT(g2.add_async(
                [&ran](weft::done d) {
                  ran++;
                  d.signal(0);
                },
                {}, {}, weft::op_options{}, &a),
            0);
  CT_EXPECT(g2.add([&ran] { ran += 10; }, {}, {}, weft::op_options{}, &b), 0);
  CT_EXPECT(g2.edge(a, b), 0);
  CT_EXPECT(g2.launch(), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(ran.load(), 11);
  // A moved-from or empty graph refuses.
  weft::graph none;
  CT_EXPECT(none.add([] {}), WEFT_EINVAL);
  CT_EXPECT(none.edge(0, 1), WEFT_EINVAL);
}
