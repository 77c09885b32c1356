// weft.hpp's engine, vars, pushes and reusable operators (tests/deps' C
// suites, through the C++ API): creation and its errors, the order the
// vars impose, failures and skips, async operators, the options of
// weft_op_desc, which operators are stored without allocation (a counting
// operator new), that stored callables are destroyed exactly once (skipped
// operators included), and throwing callables.
#include "counting_new.hpp"
#include "cpp_test.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace {

// An engine on a pool of its own with two workers.
weft_engine_config engine_config(weft_pool *pool)
{
  weft_engine_config c = weft::engine::default_config();
  c.pool = pool;
  return c;
}

// A trivially copyable operator of exactly Size bytes: adds 1 to *n.
template <std::size_t Size>
struct sized_op {
  std::atomic<long> *n;
  char pad[Size - sizeof(std::atomic<long> *)];
  void operator()(const weft::run_ctx &) const { n->fetch_add(1); }
};

} // namespace

CT_TEST(cpp_engine, create_and_destroy, 60)
{
  ct::clear_env();
  weft::engine own; // automatic: a pool of its own
  cr_assert(own.ok());
  CT_EXPECT(own.init_status(), 0);
  cr_assert_not_null(own.get());
  cr_assert_geq(own.gpu_count(), 0);
  CT_EXPECT(own.destroy(), 0);
  cr_assert_not(own.ok());
  CT_EXPECT(own.destroy(), 0);

  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine on_pool(p);
  cr_assert(on_pool.ok(), "engine(pool&): %s", on_pool.init_status().message());
  weft_engine_config ec = engine_config(p.get());
  ec.kind = "naive";
  weft::engine naive(&ec);
  cr_assert(naive.ok());

  // Moves.
  weft_engine *raw = on_pool.get();
  weft::engine moved(std::move(on_pool));
  cr_assert_null(on_pool.get());
  cr_assert_eq(moved.get(), raw);
  naive = std::move(moved); // destroys the naive engine first
  cr_assert_eq(naive.get(), raw);
  weft_engine *released = naive.release();
  cr_assert_eq(weft_engine_destroy(released), 0);

  // The config helper is weft_engine_config_default's (field by field:
  // the struct has padding).
  weft_engine_config c = weft::engine::default_config(), d;
  weft_engine_config_default(&d);
  cr_assert(c.pool == d.pool && c.kind == d.kind && c.max_inflight == d.max_inflight);
  for (std::size_t i = 0; i < sizeof c.reserved / sizeof c.reserved[0]; i++)
    cr_assert_null(c.reserved[i]);
}

CT_TEST(cpp_engine, creation_errors, 60)
{
  ct::clear_env();
  weft_engine_config ec = weft::engine::default_config();
  int x = 0;
  ec.reserved[2] = &x;
  weft::engine bad(&ec);
  cr_assert_not(bad.ok());
  CT_EXPECT(bad.init_status(), WEFT_EINVAL);
  ec = weft::engine::default_config();
  ec.kind = "no-such-kind";
  weft::engine bad_kind(&ec);
  CT_EXPECT(bad_kind.init_status(), WEFT_EINVAL);
  weft::pool empty_pool(nullptr);
  CT_EXPECT(empty_pool.destroy(), 0);
  weft::engine on_nothing(empty_pool); // never an engine with a pool of its own
  cr_assert_not(on_nothing.ok());
  CT_EXPECT(on_nothing.init_status(), WEFT_EINVAL);

  // Every call on an engine that is not there.
  std::atomic<long> n{0};
  CT_EXPECT(bad.push([&n] { n++; }), WEFT_EINVAL);
  CT_EXPECT(bad.push_async([&n](weft::done d) {
    n++;
    d.signal(0);
  }),
            WEFT_EINVAL);
  ct::counts c;
  CT_EXPECT(bad.push([t = ct::tracker(c)] { t.call(); }), WEFT_EINVAL);
  weft::op o = bad.make_op([t = ct::tracker(c)] { t.call(); });
  cr_assert_not(o.ok());
  CT_EXPECT(o.init_status(), WEFT_EINVAL);
  CT_EXPECT(o.push(), WEFT_EINVAL);
  cr_assert_eq(c.live(), 0, "refused callables were not destroyed (%ld live)", c.live());
  cr_assert_eq(c.calls.load(), 0);
  weft::var v(bad);
  cr_assert_not(v.ok());
  CT_EXPECT(v.init_status(), WEFT_EINVAL);
  CT_EXPECT(bad.var_wait(v), WEFT_EINVAL);
  CT_EXPECT(bad.wait_all(), WEFT_EINVAL);
  cr_assert_eq(bad.gpu_count(), 0);
  weft::graph g = bad.capture([] {});
  cr_assert_not(g.ok());
  CT_EXPECT(g.init_status(), WEFT_EINVAL);
  cr_assert_eq(n.load(), 0);
}

CT_TEST(cpp_engine, vars, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var a(eng), b(eng.get());
  cr_assert(a.ok() && b.ok());
  CT_EXPECT(a.init_status(), 0);
  cr_assert_neq(a.get(), b.get());
  weft::var empty;
  cr_assert_not(empty.ok());
  CT_EXPECT(empty.init_status(), WEFT_EINVAL);
  CT_EXPECT(empty.destroy(), 0);
  weft_var *raw = a.get();
  weft::var moved(std::move(a));
  cr_assert_null(a.get());
  cr_assert_eq(moved.get(), raw);
  empty = std::move(moved);
  cr_assert_eq(empty.get(), raw);
  CT_EXPECT(eng.var_wait(empty), 0);
  CT_EXPECT(eng.var_wait(raw), 0);
  CT_EXPECT(empty.destroy(), 0);
  cr_assert_null(empty.get());
  // The raw handle is dead now.
  CT_EXPECT(eng.var_wait(raw), WEFT_EINVAL);
  std::atomic<long> n{0};
  CT_EXPECT(eng.push([&n] { n++; }, weft::reads{raw}), WEFT_EINVAL);
  CT_EXPECT(eng.push([&n] { n++; }, weft::writes{nullptr}), WEFT_EINVAL);
  weft_var *released = b.release();
  cr_assert_null(b.get());
  cr_assert_eq(weft_var_delete(eng.get(), released), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(n.load(), 0);
}

CT_TEST(cpp_engine, order_of_the_vars, 60)
{
  // The README's example: b = 2 + 1, a = 2, b = 3 + 2.
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var va(eng), vb(eng);
  long a = 1, b = 2;
  auto add = [&a, &b] { b += a; };
  CT_EXPECT(eng.push(add, weft::reads{va}, weft::writes{vb}), 0);
  CT_EXPECT(eng.push([&a](const weft::run_ctx &) { a *= 2; }, weft::writes{va}), 0);
  CT_EXPECT(eng.push(add, weft::reads{va.get()}, weft::writes{vb.get()}), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(b, 5);
  cr_assert_eq(a, 2);

  // A chain of writes runs in push order.
  std::vector<int> order;
  const int steps = static_cast<int>(ct::scaled(500, 20));
  for (int i = 0; i < steps; i++)
    CT_EXPECT(eng.push([&order, i] { order.push_back(i); }, {}, weft::writes{va}), 0);
  CT_EXPECT(eng.var_wait(va), 0);
  cr_assert_eq(order.size(), static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; i++)
    cr_assert_eq(order[static_cast<std::size_t>(i)], i);

  // The run context: a CPU operator on a worker.
  std::atomic<int> worker{-2}, dev{-1};
  CT_EXPECT(eng.push([&](const weft::run_ctx &rc) {
    worker = rc.worker;
    dev = rc.ctx.type;
  }),
            0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert(worker.load() >= 0 && worker.load() < 2, "worker %d", worker.load());
  cr_assert_eq(dev.load(), WEFT_DEV_CPU);
}

CT_TEST(cpp_engine, long_var_lists, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  std::vector<weft::var> vars;
  for (int i = 0; i < 20; i++)
    vars.emplace_back(eng);
  long sum = 0;
  // Twenty reads: more than a list keeps inline.
  weft::reads many{vars[0],  vars[1],  vars[2],  vars[3],  vars[4],  vars[5],  vars[6],
                   vars[7],  vars[8],  vars[9],  vars[10], vars[11], vars[12], vars[13],
                   vars[14], vars[15], vars[16], vars[17], vars[18]};
  cr_assert_eq(many.size(), 19u);
  cr_assert_not(many.failed());
  CT_EXPECT(eng.push([&sum] { sum += 1; }, many, weft::writes{vars[19]}), 0);
  // From an array: used as it is.
  std::vector<weft_var *> raw;
  for (auto &v : vars)
    raw.push_back(v.get());
  CT_EXPECT(eng.push([&sum] { sum += 10; }, weft::reads(raw.data(), 19), weft::writes{raw[19]}), 0);
  CT_EXPECT(eng.var_wait(vars[19]), 0);
  cr_assert_eq(sum, 11);
  // The same list reused, and a var given twice (written: counts as written).
  CT_EXPECT(eng.push([&sum] { sum += 100; }, many, weft::writes{vars[0]}), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(sum, 111);
}

CT_TEST(cpp_engine, callables_and_results, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng), w(eng);
  // void, int and status results; with and without the run context.
  CT_EXPECT(eng.push([] {}, weft::writes{v}), 0);
  CT_EXPECT(eng.push([](const weft::run_ctx &) { return 0; }, weft::writes{v}), 0);
  CT_EXPECT(eng.push([] { return weft::status(); }, weft::writes{v}), 0);
  CT_EXPECT(eng.var_wait(v), 0);
  CT_EXPECT(eng.push([] { return -42; }, weft::writes{v}), 0);
  CT_EXPECT(eng.var_wait(v), -42); // the operator's own code, unchanged
  CT_EXPECT(eng.var_wait(v), 0); // and cleared
  CT_EXPECT(
      eng.push([](const weft::run_ctx &) { return weft::status(WEFT_ENODEV); }, weft::writes{w}),
      0);
  CT_EXPECT(eng.var_wait(w), WEFT_ENODEV);
  CT_EXPECT(eng.wait_all(), -42); // the first failure since the last wait_all
  CT_EXPECT(eng.wait_all(), 0);
}

namespace {
std::atomic<long> op_function_runs{0};
int op_function(const weft::run_ctx &)
{
  op_function_runs++;
  return 0;
}
void op_function_no_ctx()
{
  op_function_runs++;
}
} // namespace

CT_TEST(cpp_engine, function_pointers, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng);
  CT_EXPECT(eng.push(op_function, weft::writes{v}), 0);
  CT_EXPECT(eng.push(&op_function, weft::writes{v}), 0);
  CT_EXPECT(eng.push(op_function_no_ctx, weft::writes{v}), 0);
  weft::op o = eng.make_op(op_function, weft::reads{v});
  cr_assert(o.ok(), "make_op: %s", o.init_status().message());
  CT_EXPECT(o.push(), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(op_function_runs.load(), 4);
}

CT_TEST(cpp_engine, options, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng);
  std::atomic<long> n{0};
  auto count = [&n] { n++; };
  weft::op_options named;
  named.name = "counted";
  CT_EXPECT(eng.push(count, {}, weft::writes{v}, named), 0);
  CT_EXPECT(eng.push(count, weft::writes{v},
                     weft::op_options{}.with_prop(WEFT_PROP_PRIORITIZED).with_priority(5)),
            0);
  CT_EXPECT(eng.push(count, weft::writes{v}, weft::op_options{}.with_prop(WEFT_PROP_ASYNC)), 0);
  CT_EXPECT(eng.push(count, weft::writes{v},
                     weft::op_options{}.with_flags(WEFT_OP_NOSKIP).with_name("n")),
            0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(n.load(), 4);

  // What weft_op_desc refuses, through the options.
  // 7: past the last property, and still a value of the enumeration in C++.
  CT_EXPECT(
      eng.push(count, weft::writes{v}, weft::op_options{}.with_prop(static_cast<weft_prop>(7))),
      WEFT_EINVAL);
  CT_EXPECT(eng.push(count, weft::writes{v}, weft::op_options{}.with_prop(WEFT_PROP_COPY_TO_GPU)),
            WEFT_EINVAL);
  CT_EXPECT(eng.push(count, weft::writes{v}, weft::op_options{}.with_flags(WEFT_OP_GPU_GRAPH)),
            WEFT_EINVAL);
  CT_EXPECT(eng.push(count, weft::writes{v}, weft::op_options{}.on_gpu(eng.gpu_count())),
            WEFT_ENODEV);
  cr_assert_eq(n.load(), 4);

  // The defaults are a zeroed descriptor's.
  constexpr weft::op_options def{};
  static_assert(def.ctx.type == WEFT_DEV_CPU && def.ctx.id == 0 && def.prop == WEFT_PROP_NORMAL &&
                def.priority == 0 && def.flags == 0 && def.name == nullptr);
  constexpr weft::op_options gpu = def.on_gpu(1).with_flags(WEFT_OP_GPU_GRAPH);
  static_assert(gpu.ctx.type == WEFT_DEV_GPU && gpu.ctx.id == 1 && gpu.flags == WEFT_OP_GPU_GRAPH);
}

CT_TEST(cpp_engine, failures_skip_and_drop, 120)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng), out(eng);
  ct::counts skipped, forced;
  std::atomic<long> gate{0};
  // The failing writer waits for the gate, so that everything behind it is
  // queued when it fails.
  CT_EXPECT(eng.push(
                [&gate] {
                  ct::wait_until([&gate] { return gate.load() != 0; });
                  return -9;
                },
                weft::writes{v}),
            0);
  const int readers = 10;
  for (int i = 0; i < readers; i++)
    CT_EXPECT(
        eng.push([t = ct::tracker(skipped)] { CT_CHECK(!t.call(), "a skipped operator ran"); },
                 weft::reads{v}, weft::writes{out}),
        0);
  CT_EXPECT(eng.push([t = ct::tracker(forced)] { t.call(); }, weft::reads{v}, {},
                     weft::op_options{}.with_flags(WEFT_OP_NOSKIP)),
            0);
  cr_assert_eq(skipped.calls.load(), 0);
  gate = 1;
  CT_EXPECT(eng.var_wait(out), -9); // the failure passed on by the skipped readers
  CT_EXPECT(eng.var_wait(v), -9);
  CT_EXPECT(eng.wait_all(), -9);
  cr_assert_eq(skipped.calls.load(), 0, "%ld skipped operators ran", skipped.calls.load());
  cr_assert_eq(forced.calls.load(), 1, "the NOSKIP operator ran %ld times", forced.calls.load());
  // Skipped or not, every stored callable is destroyed, once.
  cr_assert(ct::wait_until([&] { return skipped.live() == 0 && forced.live() == 0; }),
            "%ld skipped and %ld forced captures alive", skipped.live(), forced.live());
  // Vars go before their engine.
  CT_EXPECT(v.destroy(), 0);
  CT_EXPECT(out.destroy(), 0);
  CT_EXPECT(eng.destroy(), 0);
  cr_assert_eq(skipped.live(), 0);
  cr_assert_eq(skipped.made.load(), skipped.destroyed.load());
  ct::assert_no_errors();
  ct_assert_no_leaks();
}

CT_TEST(cpp_engine, small_operators_allocate_nothing, 120)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var a(eng), b(eng);
  std::atomic<long> n{0};
  long ops = ct::scaled(20000, 100);
  // Warm up the engine's own caches (C allocations, not operator new).
  CT_EXPECT(eng.push([&n] { n++; }, weft::writes{a}), 0);
  CT_EXPECT(eng.wait_all(), 0);
  long before = ct::allocations();
  for (long i = 0; i < ops; i++) {
    weft::status s =
        eng.push([&n, i](const weft::run_ctx &) { n += i & 1; }, weft::reads{a}, weft::writes{b});
    cr_assert(s.ok(), "push: %s", s.message());
  }
  CT_EXPECT(eng.wait_all(), 0);
  // A full WEFT_OP_ARG_INLINE bytes, and an async operator.
  sized_op<WEFT_OP_ARG_INLINE> full{&n, {}};
  static_assert(sizeof full == WEFT_OP_ARG_INLINE);
  CT_EXPECT(eng.push(full, weft::writes{a}), 0);
  CT_EXPECT(eng.push_async(
                [&n](const weft::run_ctx &, weft::done d) {
                  n++;
                  d.signal();
                },
                weft::writes{a}),
            0);
  CT_EXPECT(eng.wait_all(), 0);
  long after = ct::allocations();
  cr_assert_eq(after - before, 0, "%ld operator new calls for %ld small pushes", after - before,
               ops + 2);
  cr_assert_eq(n.load(), ops / 2 + 1 + 2);

  // One word over the limit: one allocation, freed by the drop.
  sized_op<WEFT_OP_ARG_INLINE + 8> over{&n, {}};
  before = ct::allocations();
  CT_EXPECT(eng.push(over, weft::writes{a}), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(ct::allocations() - before, 1);
  ct_assert_no_leaks();
}

CT_TEST(cpp_engine, big_operators_destroyed_once, 120)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  ct::counts c;
  auto shared = std::make_shared<std::string>("shared");
  long ops = ct::scaled(2000, 50);
  {
    weft::engine eng(p);
    weft::var v(eng);
    for (long i = 0; i < ops; i++) {
      weft::status s = eng.push(
          [t = ct::tracker(c), shared, text = std::string("a capture long enough to allocate")] {
            return t.call() && *shared == "shared" && text.size() > 20 ? 0 : 1;
          },
          weft::reads{v});
      cr_assert(s.ok(), "push: %s", s.message());
    }
    CT_EXPECT(eng.wait_all(), 0);
    cr_assert(ct::wait_until([&] { return c.live() == 0; }), "%ld captures alive", c.live());
  }
  cr_assert_eq(c.calls.load(), ops);
  cr_assert_eq(c.live(), 0);
  cr_assert_eq(shared.use_count(), 1, "%ld copies of the shared_ptr left", shared.use_count());
  ct_assert_no_leaks();
}

CT_TEST(cpp_engine, async_operators, 120)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng), w(eng);
  long x = 0;
  // Signalled later from a thread of the test's own.
  std::vector<std::thread> signallers;
  std::mutex mu;
  CT_EXPECT(eng.push_async(
                [&](const weft::run_ctx &rc, weft::done d) {
                  CT_CHECK(rc.worker >= 0, "worker %d", rc.worker);
                  std::lock_guard<std::mutex> lock(mu);
                  signallers.emplace_back([d, &x] {
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
                    x = 1;
                    d.signal(0);
                  });
                },
                weft::writes{v}),
            0);
  // Ordered after it: sees x == 1.
  CT_EXPECT(eng.push([&x] { return x == 1 ? 0 : -1; }, weft::reads{v}, weft::writes{w}), 0);
  CT_EXPECT(eng.var_wait(w), 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto &t : signallers)
      t.join();
  }
  // A failure signalled: its code, and a status.
  CT_EXPECT(eng.push_async([](weft::done d) { d.signal(-17); }, weft::writes{v}), 0);
  CT_EXPECT(eng.var_wait(v), -17);
  CT_EXPECT(
      eng.push_async([](weft::done d) { d.signal(weft::status(WEFT_EDEVICE)); }, weft::writes{v}),
      0);
  CT_EXPECT(eng.var_wait(v), WEFT_EDEVICE);
  // A big async callable: destroyed once, after both the signal and the return.
  ct::counts c;
  CT_EXPECT(eng.push_async(
                [t = ct::tracker(c)](const weft::run_ctx &, weft::done d) {
                  t.call();
                  d.signal();
                },
                weft::writes{v}),
            0);
  CT_EXPECT(eng.var_wait(v), 0);
  cr_assert(ct::wait_until([&] { return c.live() == 0; }), "%ld captures alive", c.live());
  cr_assert_eq(c.calls.load(), 1);
  // The token's raw handle.
  CT_EXPECT(eng.push_async([](weft::done d) { weft_done_signal(d.get(), 0); }, weft::writes{v}), 0);
  CT_EXPECT(eng.wait_all(), -17);
  ct::assert_no_errors();
}

CT_TEST(cpp_engine, reusable_operators, 120)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng), w(eng);
  ct::counts c;
  long count = 0;
  {
    weft::op o = eng.make_op(
        [t = ct::tracker(c), &count](const weft::run_ctx &) {
          t.call();
          count++;
        },
        weft::writes{v}, weft::op_options{}.with_name("reused"));
    cr_assert(o.ok(), "make_op: %s", o.init_status().message());
    CT_EXPECT(o.init_status(), 0);
    cr_assert_not_null(o.get());
    const int pushes = 50;
    for (int i = 0; i < pushes; i++)
      CT_EXPECT(o.push(), 0);
    CT_EXPECT(eng.var_wait(v), 0);
    cr_assert_eq(count, pushes);
    cr_assert_eq(c.live(), 1, "one stored copy while the operator lives");
    weft::op moved(std::move(o));
    cr_assert_null(o.get());
    CT_EXPECT(o.push(), WEFT_EINVAL);
    CT_EXPECT(moved.push(), 0);
    weft::op other;
    other = std::move(moved);
    CT_EXPECT(other.push(), 0);
  } // deleted: the callable goes once the last push has finished
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert(ct::wait_until([&] { return c.live() == 0; }), "%ld captures alive", c.live());
  cr_assert_eq(count, 52);

  // Reads-first and writes-first, an async one, and destroy().
  std::atomic<long> n{0};
  weft::op r = eng.make_op([&n] { n++; }, weft::reads{v}, weft::writes{w});
  weft::op a = eng.make_async_op(
      [&n](weft::done d) {
        n++;
        d.signal();
      },
      weft::writes{w});
  weft::op a2 = eng.make_async_op([&n](const weft::run_ctx &, weft::done d) {
    n++;
    d.signal();
  });
  cr_assert(r.ok() && a.ok() && a2.ok());
  CT_EXPECT(r.push(), 0);
  CT_EXPECT(a.push(), 0);
  CT_EXPECT(a2.push(), 0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(n.load(), 3);
  CT_EXPECT(r.destroy(), 0);
  cr_assert_not(r.ok());
  CT_EXPECT(r.destroy(), 0);
  weft_op *raw = a.release();
  cr_assert_eq(weft_op_delete(eng.get(), raw), 0);

  // A refused descriptor: no operator, the callable destroyed at once.
  ct::counts refused;
  weft::op bad = eng.make_op([t = ct::tracker(refused)] { t.call(); }, weft::writes{v},
                             weft::op_options{}.with_flags(WEFT_OP_GPU_GRAPH));
  cr_assert_not(bad.ok());
  CT_EXPECT(bad.init_status(), WEFT_EINVAL);
  CT_EXPECT(bad.push(), WEFT_EINVAL);
  cr_assert_eq(refused.live(), 0);
  weft::op bad_async = eng.make_async_op([](weft::done d) { d.signal(); }, {}, {},
                                         weft::op_options{}.on_gpu(eng.gpu_count()));
  CT_EXPECT(bad_async.init_status(), WEFT_ENODEV);
  ct_assert_no_leaks();
}

CT_TEST(cpp_engine, gpu_operators_on_the_host_backend, 120)
{
  ct::clear_env();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  setenv("WEFT_GPU_HOST_DEVICES", "2", 1);
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  cr_assert(eng.ok());
  cr_assert_eq(eng.gpu_count(), 2);
  weft::var v(eng), w(eng);
  std::atomic<long> device_work{0};
  // fn enqueues "device work" on its stream and returns; the operator
  // finishes when that work has run.
  auto enqueue = [&device_work](const weft::run_ctx &rc) {
    if (rc.ctx.type != WEFT_DEV_GPU || !rc.stream)
      return -1;
    return weft_gpu_host_enqueue(
        rc.stream, [](void *arg) { static_cast<std::atomic<long> *>(arg)->fetch_add(1); },
        &device_work);
  };
  CT_EXPECT(eng.push(enqueue, weft::writes{v}, weft::op_options{}.on_gpu(1).with_name("kernel")),
            0);
  CT_EXPECT(eng.push([&device_work] { return device_work.load() == 1 ? 0 : -2; }, weft::reads{v},
                     weft::writes{w}),
            0);
  CT_EXPECT(eng.var_wait(w), 0);
  // A GPU operator takes fn, not an async one.
  CT_EXPECT(eng.push_async([](weft::done d) { d.signal(); }, weft::writes{v},
                           weft::op_options{}.on_gpu(0)),
            WEFT_EINVAL);
  // A copy operator names its GPU.
  CT_EXPECT(eng.push(enqueue, weft::writes{v},
                     weft::op_options{}.on_gpu(0).with_prop(WEFT_PROP_COPY_TO_GPU)),
            0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(device_work.load(), 2);
}

CT_TEST(cpp_engine, calls_from_inside_operators, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng), w(eng);
  std::atomic<int> destroy_rc{1}, wait_rc{1}, var_wait_rc{1}, push_rc{1};
  std::atomic<long> nested{0};
  CT_EXPECT(eng.push(
                [&](const weft::run_ctx &) {
                  destroy_rc = eng.destroy().code(); // refused: the engine stays
                  wait_rc = eng.wait_all().code();
                  var_wait_rc = eng.var_wait(v).code(); // waits for this operator itself
                  push_rc = eng.push([&nested] { nested++; }, weft::writes{w}).code();
                },
                weft::writes{v}),
            0);
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(destroy_rc.load(), WEFT_EDEADLK);
  cr_assert_eq(wait_rc.load(), WEFT_EDEADLK);
  cr_assert_eq(var_wait_rc.load(), WEFT_EDEADLK);
  cr_assert_eq(push_rc.load(), 0);
  cr_assert(eng.ok(), "a refused destroy keeps the engine");
  CT_EXPECT(eng.var_wait(w), 0);
  cr_assert_eq(nested.load(), 1);
  // And the pool's destroy from one of its own tasks.
  weft::group g(p);
  std::atomic<int> pool_rc{1};
  CT_EXPECT(g.spawn([&] { pool_rc = p.destroy().code(); }), 0);
  CT_EXPECT(g.wait(), 0);
  cr_assert_eq(pool_rc.load(), WEFT_EDEADLK);
  cr_assert(p.ok());
}

#if defined(__cpp_exceptions)
CT_TEST(cpp_engine, throwing_operators, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng), w(eng);
  CT_EXPECT(eng.push([] { throw std::runtime_error("op"); }, weft::writes{v}), 0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  // An async callable that throws before it signals: completed with it.
  CT_EXPECT(eng.push_async([](weft::done) { throw 3; }, weft::writes{v}), 0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  // A reusable one, stored on the heap: destroyed once all the same.
  ct::counts c;
  weft::op o = eng.make_op(
      [t = ct::tracker(c)](const weft::run_ctx &) -> int {
        t.call();
        throw std::logic_error("reused");
      },
      weft::writes{w});
  cr_assert(o.ok());
  CT_EXPECT(o.push(), 0);
  CT_EXPECT(o.push(), 0);
  CT_EXPECT(eng.var_wait(w), WEFT_EEXCEPTION);
  CT_EXPECT(o.destroy(), 0);
  CT_EXPECT(eng.wait_all(), WEFT_EEXCEPTION);
  cr_assert(ct::wait_until([&] { return c.live() == 0; }));
  cr_assert_eq(c.calls.load(), 1, "the second push was skipped: its var had failed");
}
#endif

namespace {

// One-word callables of several sizes, each checking the bytes it carries.
std::atomic<long> word_hits{0}, word_bad{0};
struct word8 {
  std::uint64_t v;
  int operator()() const
  {
    (v == 0x0102030405060708ull ? word_hits : word_bad)++;
    return 0;
  }
};
struct word4 {
  std::uint32_t v;
  void operator()(const weft::run_ctx &) const { (v == 0xa1b2c3d4u ? word_hits : word_bad)++; }
};
struct word1 {
  char c;
  void operator()() const { (c == 'w' ? word_hits : word_bad)++; }
};
std::atomic<long> mutable_seen{0};

} // namespace

CT_TEST(cpp_engine, one_word_callables, 120)
{
  // A trivially copyable callable of at most a pointer's size that can be
  // called as const travels in the C argument word (no copy stored); each
  // run gets its bytes intact, from a push, a spawn, a submit, a reusable
  // operator, an async operator and a replayed capture. A mutable one is
  // stored: what a run changes in it, the next run of the same operator
  // sees.
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng);
  word_hits = 0;
  word_bad = 0;
  const long pushes = ct::scaled(2000, 50);
  for (long i = 0; i < pushes; i++) {
    CT_EXPECT(eng.push(word8{0x0102030405060708ull}, weft::writes{v}), 0);
    CT_EXPECT(eng.push(word4{0xa1b2c3d4u}, weft::reads{v}), 0);
    CT_EXPECT(eng.push(word1{'w'}), 0);
  }
  CT_EXPECT(eng.wait_all(), 0);
  cr_assert_eq(word_bad.load(), 0, "%ld runs saw other bytes", word_bad.load());
  cr_assert_eq(word_hits.load(), 3 * pushes);

  weft::group g(p);
  CT_EXPECT(g.spawn(word8{0x0102030405060708ull}), 0);
  CT_EXPECT(g.spawn(word1{'w'}), 0);
  CT_EXPECT(p.submit(word8{0x0102030405060708ull}), 0);
  CT_EXPECT(g.wait(), 0);
  cr_assert(ct::wait_until([&] { return word_hits.load() == 3 * pushes + 3; }), "%ld of %ld ran",
            word_hits.load(), 3 * pushes + 3);

  // Each slot is one pointer: a replayed capture runs them all, every launch.
  std::vector<std::atomic<long>> slots(64);
  weft::graph gr = eng.capture([&] {
    for (auto &s : slots)
      CT_EXPECT(eng.push([sp = &s] { sp->fetch_add(1); }, weft::writes{v}), 0);
  });
  cr_assert(gr.ok(), "capture: %s", gr.init_status().message());
  for (int l = 0; l < 5; l++) {
    CT_EXPECT(gr.launch(), 0);
    CT_EXPECT(eng.var_wait(v), 0);
  }
  for (auto &s : slots)
    cr_assert_eq(s.load(), 5);

  // An async operator carried in the word, reusable.
  std::atomic<long> done_runs{0};
  weft::op a = eng.make_async_op(
      [dp = &done_runs](weft::done d) {
        dp->fetch_add(1);
        d.signal();
      },
      weft::writes{v});
  cr_assert(a.ok());
  for (int i = 0; i < 10; i++)
    CT_EXPECT(a.push(), 0);
  CT_EXPECT(eng.var_wait(v), 0);
  cr_assert_eq(done_runs.load(), 10);

  // A mutable one-word callable keeps its state between runs of one operator.
  mutable_seen = 0;
  auto counter = [k = 0L]() mutable { mutable_seen = ++k; };
  static_assert(sizeof counter <= sizeof(void *));
  weft::op m = eng.make_op(counter, weft::writes{v});
  cr_assert(m.ok());
  for (int i = 0; i < 7; i++)
    CT_EXPECT(m.push(), 0);
  CT_EXPECT(eng.var_wait(v), 0);
  cr_assert_eq(mutable_seen.load(), 7, "the 7th run saw k = %ld", mutable_seen.load());
  CT_EXPECT(eng.wait_all(), 0);
  ct_assert_no_leaks();
}
