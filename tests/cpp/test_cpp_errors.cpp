// weft.hpp's status type and its error paths (tests/api/test_errors.c,
// through the C++ API): every code's message and name, comparisons, a
// task's own codes passed through unchanged, every owner's calls when it
// holds no handle, and (with exceptions on) WEFT_EEXCEPTION from every kind
// of callable.
#include "cpp_test.hpp"

#include <stdexcept>
#include <type_traits>

// The status type is a plain value, usable in constant expressions.
static_assert(std::is_trivially_copyable_v<weft::status>);
static_assert(sizeof(weft::status) == sizeof(int));
static_assert(weft::status().ok() && weft::status().code() == 0);
static_assert(!weft::status(WEFT_EINVAL).ok() && weft::status(WEFT_EINVAL).code() == WEFT_EINVAL);
static_assert(static_cast<bool>(weft::status()) && !static_cast<bool>(weft::status(-1)));
static_assert(weft::status(WEFT_EBUSY) == WEFT_EBUSY && WEFT_EBUSY == weft::status(WEFT_EBUSY));
static_assert(weft::status(WEFT_EBUSY) != WEFT_EINVAL && 0 != weft::status(-1));
static_assert(weft::status(3) == weft::status(3) && weft::status(3) != weft::status(4));
// Owners are move-only; a group is neither copyable nor movable.
static_assert(!std::is_copy_constructible_v<weft::pool> &&
              std::is_nothrow_move_constructible_v<weft::pool>);
static_assert(!std::is_copy_constructible_v<weft::engine> &&
              std::is_nothrow_move_constructible_v<weft::engine>);
static_assert(!std::is_copy_constructible_v<weft::var> &&
              std::is_nothrow_move_assignable_v<weft::var>);
static_assert(!std::is_copy_constructible_v<weft::op> &&
              std::is_nothrow_move_assignable_v<weft::op>);
static_assert(!std::is_copy_constructible_v<weft::graph> &&
              std::is_nothrow_move_assignable_v<weft::graph>);
static_assert(!std::is_copy_constructible_v<weft::group> &&
              !std::is_move_constructible_v<weft::group>);
// Creation never throws.
static_assert(std::is_nothrow_constructible_v<weft::pool, const weft_pool_config *>);
static_assert(std::is_nothrow_constructible_v<weft::engine, const weft_engine_config *>);
static_assert(std::is_nothrow_constructible_v<weft::engine, weft::pool &>);
static_assert(std::is_nothrow_constructible_v<weft::var, weft::engine &>);
// The lists and the run context.
static_assert(std::is_same_v<weft::run_ctx, weft_run_ctx>);
static_assert(std::is_convertible_v<weft::var &, weft::var_ref> &&
              std::is_convertible_v<weft_var *, weft::var_ref>);

CT_TEST(cpp_errors, every_code, 30)
{
  int named = 0;
  for (int c = WEFT_ERRNO_FIRST_; c >= WEFT_ERRNO_LAST_; c--) {
    weft::status s(c);
    cr_assert_not(s.ok());
    cr_assert_not(static_cast<bool>(s));
    cr_assert_eq(s.code(), c);
    cr_assert_str_eq(s.message(), weft_strerror(c));
    const char *name = s.name();
    cr_assert_not_null(name, "code %d has no name", c);
    cr_assert_str_eq(name, weft_err_name(c));
    cr_assert_not_null(std::strstr(s.message(), name), "\"%s\" does not name %s", s.message(),
                       name);
    named++;
  }
  cr_assert_eq(named, WEFT_ERRNO_FIRST_ - WEFT_ERRNO_LAST_ + 1);
  weft::status ex(WEFT_EEXCEPTION);
  cr_assert_str_eq(ex.name(), "WEFT_EEXCEPTION");
  cr_assert_not_null(std::strstr(ex.message(), "weft.hpp"), "%s", ex.message());
  weft::status ok;
  cr_assert_str_eq(ok.message(), "success");
  cr_assert_str_eq(ok.name(), "0");
  // A task's own code: passed through, not one of weft's.
  weft::status own(-1);
  cr_assert_str_eq(own.message(), "unknown error");
  cr_assert_null(own.name());
}

CT_TEST(cpp_errors, own_codes_pass_through, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng);
  weft::group g(p);
  // -1 and -errno, which tasks return themselves, and a positive code.
  for (int code : {-1, -12, 5}) {
    CT_EXPECT(g.spawn([code] { return code; }), 0);
    CT_EXPECT(g.wait(), code);
    CT_EXPECT(p.parallel_for(0, 4, [code](std::size_t, std::size_t) { return code; }), code);
    CT_EXPECT(p.parallel_launch(2, [code](int, int) { return code; }), code);
    CT_EXPECT(eng.push([code] { return code; }, weft::writes{v}), 0);
    CT_EXPECT(eng.var_wait(v), code);
    CT_EXPECT(eng.push_async([code](weft::done d) { d.signal(code); }, weft::writes{v}), 0);
    CT_EXPECT(eng.var_wait(v), code);
  }
  // Integer results other than int convert; a status result passes its code.
  CT_EXPECT(g.spawn([]() -> long { return -7L; }), 0);
  CT_EXPECT(g.wait(), -7);
  CT_EXPECT(g.spawn([]() -> weft_errno { return WEFT_ENODEV; }), 0);
  CT_EXPECT(g.wait(), WEFT_ENODEV);
  CT_EXPECT(eng.wait_all(), -1);
}

CT_TEST(cpp_errors, empty_owners, 30)
{
  // Default-constructed, moved-from and destroyed owners hold no handle;
  // every call on one is the C API's on NULL: WEFT_EINVAL.
  weft::var v;
  weft::op o;
  weft::graph g;
  cr_assert_null(v.get());
  cr_assert_null(o.get());
  cr_assert_null(g.get());
  CT_EXPECT(v.init_status(), WEFT_EINVAL);
  CT_EXPECT(o.init_status(), WEFT_EINVAL);
  CT_EXPECT(g.init_status(), WEFT_EINVAL);
  CT_EXPECT(o.push(), WEFT_EINVAL);
  CT_EXPECT(g.launch(), WEFT_EINVAL);
  CT_EXPECT(v.destroy(), 0); // nothing to destroy
  CT_EXPECT(o.destroy(), 0);
  CT_EXPECT(g.destroy(), 0);
  cr_assert_null(v.release());

  ct::clear_env();
  weft_pool_config pc = ct::pool_config(1);
  weft::pool p(&pc);
  weft::pool gone(std::move(p));
  cr_assert_eq(p.num_threads(), WEFT_EINVAL);
  CT_EXPECT(p.submit([] {}), WEFT_EINVAL);
  CT_EXPECT(p.park_idle(), WEFT_EINVAL);
  weft::engine e(gone);
  weft::engine moved(std::move(e));
  CT_EXPECT(e.push([] {}), WEFT_EINVAL);
  CT_EXPECT(e.push_async([](weft::done d) { d.signal(); }), WEFT_EINVAL);
  CT_EXPECT(e.wait_all(), WEFT_EINVAL);
  CT_EXPECT(e.var_wait(nullptr), WEFT_EINVAL);
  CT_EXPECT(e.make_op([] {}).init_status(), WEFT_EINVAL);
  CT_EXPECT(e.make_async_op([](weft::done d) { d.signal(); }).init_status(), WEFT_EINVAL);
  CT_EXPECT(e.capture([] {}).init_status(), WEFT_EINVAL);
  CT_EXPECT(e.destroy(), 0);
  CT_EXPECT(moved.var_wait(nullptr), WEFT_EINVAL);
  CT_EXPECT(moved.push([] {}, weft::reads{nullptr}), WEFT_EINVAL);
  CT_EXPECT(moved.destroy(), 0);
  CT_EXPECT(gone.destroy(), 0);
}

#if defined(__cpp_exceptions)
CT_TEST(cpp_errors, every_kind_of_callable_that_throws, 60)
{
  ct::clear_env();
  weft_pool_config pc = ct::pool_config(2);
  weft::pool p(&pc);
  weft::engine eng(p);
  weft::var v(eng);
  weft::group g(p);
  auto boom = [] { throw std::runtime_error("boom"); };
  CT_EXPECT(g.spawn(boom), 0);
  CT_EXPECT(g.wait(), WEFT_EEXCEPTION);
  CT_EXPECT(p.parallel_for(0, 8, [](std::size_t, std::size_t) { throw 1; }), WEFT_EEXCEPTION);
  CT_EXPECT(p.parallel_launch(3, [](int, int) { throw 1.5; }), WEFT_EEXCEPTION);
  CT_EXPECT(eng.push(boom, weft::writes{v}), 0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  CT_EXPECT(eng.push_async([](const weft::run_ctx &, weft::done) { throw std::bad_alloc(); },
                           weft::writes{v}),
            0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  weft::op o = eng.make_op(boom, weft::writes{v});
  CT_EXPECT(o.push(), 0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  weft::op a = eng.make_async_op([](weft::done) { throw 0; }, weft::writes{v});
  CT_EXPECT(a.push(), 0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  weft::graph gr = eng.capture([&] { CT_EXPECT(eng.push(boom, weft::writes{v}), 0); });
  CT_EXPECT(gr.launch(), 0);
  CT_EXPECT(eng.var_wait(v), WEFT_EEXCEPTION);
  CT_EXPECT(eng.wait_all(), WEFT_EEXCEPTION);
}
#endif
