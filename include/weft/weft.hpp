/* SPDX-License-Identifier: MIT */
/*
 * weft.hpp — a header-only C++17 API over weft.h.
 *
 * Everything here is inline and calls the public C API only: no state of
 * its own, nothing to link beyond libweft. The promises are weft.h's; what
 * this header adds is said where it is declared, and docs/api.md ("C++")
 * gives the whole picture with an example.
 *
 * Status. Every call that can fail returns weft::status (or an owner that
 * records one): the WEFT_E* code, or the non-zero value a task or operator
 * returned, passed through unchanged. It is [[nodiscard]].
 *
 * Owners. weft::pool, weft::engine, weft::var, weft::op and weft::graph own
 * one C handle each; they are move-only. An owner is made by its
 * constructor (pool, engine, var) or by an engine call that returns it
 * (engine::make_op, engine::capture); neither throws: the owner records
 * the status of the creation, which ok() and init_status() report, and a
 * failed one holds no handle (get() is NULL, every call on it returns
 * WEFT_EINVAL from the C API). The same holds for a moved-from owner.
 * Destruction follows the C calls: a pool's and an engine's destructor run
 * everything pushed and wait for it (weft_pool_destroy, weft_engine_destroy);
 * a var's and a reusable operator's delete the handle, deferred by the
 * engine until the work pushed on it has finished; a graph's frees the
 * graph, waiting out a launch of it that still runs. destroy() does the
 * same at once and returns the status the destructor ignores. Vars and
 * reusable operators must be destroyed before the engine they belong to
 * (their deletion is a call on it), so declare the engine first and call
 * its destroy() only once they are gone; a graph may outlive its engine
 * (weft.h, "graphs").
 *
 * Callables. A task, loop body or operator is any callable object (a
 * lambda, a function object, a function pointer) returning void (success),
 * an int (0 or a failure, as a C task returns) or a weft::status. Loops
 * (parallel_for, parallel_launch) block until done and call the caller's
 * object through a pointer: it is never copied. Tasks and operators outlive
 * the call that makes them, so their callable is stored: one that is
 * trivially copyable, at most WEFT_TASK_ARG_INLINE bytes for a task or
 * WEFT_OP_ARG_INLINE bytes for an operator, aligned to at most
 * WEFT_ARG_ALIGN, is copied byte for byte into the task's or operator's own
 * record (weft_pool_submit_arg, weft_group_spawn_arg, weft_push_arg,
 * weft_op_new_arg): no allocation. Any other is moved into one heap
 * allocation (operator new), destroyed and freed exactly once when no call
 * can use it any more: after a task ran, after an operator finished or was
 * skipped, when a graph that recorded it is destroyed, once a reusable
 * operator's deletion has run.
 *
 * Exceptions. The header compiles and works with exceptions off
 * (-fno-exceptions). With them on, an exception thrown by a callable is
 * caught before it reaches the C library, and its task, loop or operator
 * fails with WEFT_EEXCEPTION (an async operator's token is signalled with
 * it). Exceptions thrown on the caller's own thread propagate as usual: by
 * a callable's copy or move into storage (nothing was submitted), and by
 * the body of engine::capture (rethrown once the capture is ended and its
 * partial graph destroyed).
 */
#ifndef WEFT_WEFT_HPP
#define WEFT_WEFT_HPP

#include "weft.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

namespace weft {

/* ------------------------------------------------------------------ status */

/* The result of a call: 0 (ok), a WEFT_E* code, or the non-zero value a
 * task or operator returned. True in a boolean context when it is ok. */
class [[nodiscard]] status {
public:
  constexpr status() noexcept = default;
  constexpr explicit status(int code) noexcept : code_(code) {}

  constexpr int code() const noexcept { return code_; }
  constexpr bool ok() const noexcept { return code_ == 0; }
  constexpr explicit operator bool() const noexcept { return code_ == 0; }
  /* weft_strerror: never NULL ("unknown error" for a task's own codes). */
  const char *message() const noexcept { return weft_strerror(code_); }
  /* weft_err_name: "WEFT_EINVAL", "0" for ok, NULL for a code not weft's. */
  const char *name() const noexcept { return weft_err_name(code_); }

  friend constexpr bool operator==(status a, status b) noexcept { return a.code_ == b.code_; }
  friend constexpr bool operator!=(status a, status b) noexcept { return a.code_ != b.code_; }
  friend constexpr bool operator==(status a, int c) noexcept { return a.code_ == c; }
  friend constexpr bool operator!=(status a, int c) noexcept { return a.code_ != c; }
  friend constexpr bool operator==(int c, status a) noexcept { return a.code_ == c; }
  friend constexpr bool operator!=(int c, status a) noexcept { return a.code_ != c; }

private:
  int code_ = 0;
};

/* What an operator receives: its device, stream and worker (weft.h). */
using run_ctx = weft_run_ctx;

/* An async operator's completion token (weft_done_signal): signal exactly
 * once, from any thread. Copyable; every copy is the same token. */
class done {
public:
  explicit done(weft_done *token) noexcept : d_(token) {}
  void signal(int code = 0) const noexcept { weft_done_signal(d_, code); }
  void signal(weft::status s) const noexcept { weft_done_signal(d_, s.code()); }
  weft_done *get() const noexcept { return d_; }

private:
  weft_done *d_;
};

/* Everything of weft_op_desc beside the function and the vars. name is not
 * copied: it must outlive the operator (a captured one: the graph). */
struct op_options {
  weft_ctx ctx = {WEFT_DEV_CPU, 0};
  weft_prop prop = WEFT_PROP_NORMAL;
  int priority = 0; /* WEFT_PROP_PRIORITIZED: higher runs first */
  unsigned flags = 0; /* WEFT_OP_NOSKIP, WEFT_OP_GPU_GRAPH */
  const char *name = nullptr;

  /* Copies with one field changed, for one-line options:
   * weft::op_options{}.with_name("load").with_flags(WEFT_OP_NOSKIP). */
  constexpr op_options with_ctx(weft_ctx c) const noexcept
  {
    op_options o = *this;
    o.ctx = c;
    return o;
  }
  constexpr op_options on_gpu(int id) const noexcept
  {
    return with_ctx(weft_ctx{WEFT_DEV_GPU, id});
  }
  constexpr op_options with_prop(weft_prop p) const noexcept
  {
    op_options o = *this;
    o.prop = p;
    return o;
  }
  constexpr op_options with_priority(int p) const noexcept
  {
    op_options o = *this;
    o.priority = p;
    return o;
  }
  constexpr op_options with_flags(unsigned f) const noexcept
  {
    op_options o = *this;
    o.flags = f;
    return o;
  }
  constexpr op_options with_name(const char *n) const noexcept
  {
    op_options o = *this;
    o.name = n;
    return o;
  }
};

/* ----------------------------------------------------------------- details */

namespace detail {

template <class T>
using remove_cvref_t = std::remove_cv_t<std::remove_reference_t<T>>;

/* Whether a callable's result is one a task or operator may return: void,
 * weft::status, or an integer (bool is refused: true would read as a
 * failure with code 1). */
template <class R>
constexpr bool valid_result = std::is_void_v<R> || std::is_same_v<remove_cvref_t<R>, status> ||
                              (std::is_convertible_v<R, int> &&
                               !std::is_same_v<remove_cvref_t<R>, bool>);

/* Calls f(a...) and turns its result into a C status; exceptions pass. */
template <class F, class... A>
inline int call_code(F &f, A &&...a)
{
  using R = decltype(f(std::forward<A>(a)...));
  static_assert(valid_result<R>, "weft: a callable must return void, int or weft::status");
  if constexpr (std::is_void_v<R>) {
    f(std::forward<A>(a)...);
    return 0;
  } else if constexpr (std::is_same_v<remove_cvref_t<R>, status>) {
    return f(std::forward<A>(a)...).code();
  } else {
    return static_cast<int>(f(std::forward<A>(a)...));
  }
}

/* call_code at the C boundary: with exceptions on, one thrown by f fails
 * the call with WEFT_EEXCEPTION instead of unwinding into the library. */
template <class F, class... A>
inline int guarded_code(F &f, A &&...a) noexcept
{
#if defined(__cpp_exceptions)
  try {
    return call_code(f, std::forward<A>(a)...);
  } catch (...) {
    return WEFT_EEXCEPTION;
  }
#else
  return call_code(f, std::forward<A>(a)...);
#endif
}

/* Whether a callable of type D is copied into the C record (Limit bytes
 * there) instead of being moved to the heap. */
template <class D, std::size_t Limit>
constexpr bool stored_inline = std::is_trivially_copyable_v<D> && sizeof(D) <= Limit &&
                               alignof(D) <= WEFT_ARG_ALIGN;

/* Whether a callable of type D travels in the C argument word itself (no
 * copy stored anywhere: weft_push, weft_group_spawn): trivially copyable,
 * at most a pointer's size and alignment, and callable as const (Call:
 * whether const D & can be called the way the trampoline calls D &), so
 * that running a fresh copy each time is the same as running a stored one
 * (a replayed or reusable operator included). */
template <class D, bool Call>
constexpr bool in_word = std::is_trivially_copyable_v<D> && sizeof(D) <= sizeof(void *) &&
                         alignof(D) <= alignof(void *) && Call;

/* The argument word that carries f (in_word), and f back from it: a copy
 * in the trampoline's frame. */
template <class D>
inline void *to_word(const D &f) noexcept
{
  void *w = nullptr;
  if constexpr (!std::is_empty_v<D>) /* an empty one's byte holds nothing */
    std::memcpy(static_cast<void *>(&w), static_cast<const void *>(std::addressof(f)), sizeof(D));
  return w;
}
template <class D>
struct word_copy {
  explicit word_copy(void *w) noexcept
  {
    if constexpr (!std::is_empty_v<D>)
      std::memcpy(static_cast<void *>(b), static_cast<const void *>(&w), sizeof(D));
    else
      (void)w;
  }
  D &get() noexcept { return *std::launder(reinterpret_cast<D *>(b)); }
  alignas(D) unsigned char b[sizeof(D)];
};

/* The callable a trampoline receives: the copy itself (inline), or the
 * copy of the pointer to the heap object (operators' heap path). */
template <class D, bool Inline>
inline D &stored(void *arg) noexcept
{
  if constexpr (Inline)
    return *std::launder(static_cast<D *>(arg));
  else
    return **static_cast<D **>(arg);
}

/* Operators may take the run context or nothing; async ones the run
 * context and the token, or the token only. */
template <class D>
constexpr bool op_takes_ctx = std::is_invocable_v<D &, const run_ctx &>;
template <class D>
constexpr bool op_callable = op_takes_ctx<D> || std::is_invocable_v<D &>;
template <class D>
constexpr bool async_takes_ctx = std::is_invocable_v<D &, const run_ctx &, done>;
template <class D>
constexpr bool async_callable = async_takes_ctx<D> || std::is_invocable_v<D &, done>;

/* The trampolines: plain functions the C library calls, one set per
 * callable type. */
template <class D>
struct entry {
  /* A task or group task copied inline: arg is the copy. */
  static int task_inline(void *arg) noexcept { return guarded_code(stored<D, true>(arg)); }
  /* One carried in the argument word (in_word). */
  static int task_word(void *arg) noexcept
  {
    word_copy<D> c(arg);
    return guarded_code(c.get());
  }
  /* A task on the heap: arg is the object, deleted once it ran. */
  static int task_heap(void *arg) noexcept
  {
    D *f = static_cast<D *>(arg);
    int rc = guarded_code(*f);
    delete f;
    return rc;
  }
  static int range(std::size_t b, std::size_t e, void *arg) noexcept
  {
    return guarded_code(*static_cast<D *>(arg), b, e);
  }
  static int launch(void *arg, int id, int n) noexcept
  {
    return guarded_code(*static_cast<D *>(arg), id, n);
  }
  template <bool Inline>
  static int op(const weft_run_ctx *rc, void *arg) noexcept
  {
    return op_call(rc, stored<D, Inline>(arg));
  }
  static int op_word(const weft_run_ctx *rc, void *arg) noexcept
  {
    word_copy<D> c(arg);
    return op_call(rc, c.get());
  }
  static int op_call(const weft_run_ctx *rc, D &f) noexcept
  {
    if constexpr (op_takes_ctx<D>)
      return guarded_code(f, *rc);
    else
      return guarded_code(f);
  }
  /* An async operator whose callable throws completes with
   * WEFT_EEXCEPTION; it must not have signalled (or handed on) its token
   * before it threw. */
  template <bool Inline>
  static void async(const weft_run_ctx *rc, void *arg, weft_done *token) noexcept
  {
    async_call(rc, stored<D, Inline>(arg), token);
  }
  static void async_word(const weft_run_ctx *rc, void *arg, weft_done *token) noexcept
  {
    word_copy<D> c(arg);
    async_call(rc, c.get(), token);
  }
  static void async_call(const weft_run_ctx *rc, D &f, weft_done *token) noexcept
  {
#if defined(__cpp_exceptions)
    try {
#endif
      if constexpr (async_takes_ctx<D>)
        f(*rc, done(token));
      else
        f(done(token));
#if defined(__cpp_exceptions)
    } catch (...) {
      weft_done_signal(token, WEFT_EEXCEPTION);
    }
#endif
  }
  /* weft_arg_drop_fn of the heap path: arg is the copy of the pointer. */
  static void drop(void *arg) noexcept
  {
    delete *static_cast<D **>(arg);
  }
};

/* The C argument that points at the caller's object f (const or not; the
 * trampoline casts the constness back). */
template <class T>
inline void *object_arg(T &f) noexcept
{
  return const_cast<void *>(static_cast<const void *>(std::addressof(f)));
}

/* f itself, or for a function a pointer to it (called the same way). */
template <class T>
inline decltype(auto) callable_object(T &f) noexcept
{
  if constexpr (std::is_function_v<T>)
    return &f;
  else
    return (f);
}

/* What weft_parallel_reduce's trampolines receive: the caller's body and
 * combine, and whether a combine threw (it cannot return a status). */
template <class T, class B, class C>
struct reduce_ctx {
  B *body;
  C *combine;
  std::atomic<bool> combine_threw;

  static int body_entry(std::size_t b, std::size_t e, void *acc, void *arg) noexcept
  {
    auto *c = static_cast<reduce_ctx *>(arg);
    return guarded_code(*c->body, b, e, *std::launder(static_cast<T *>(acc)));
  }
  static void combine_entry(void *acc, const void *other, void *arg) noexcept
  {
    auto *c = static_cast<reduce_ctx *>(arg);
#if defined(__cpp_exceptions)
    try {
#endif
      (*c->combine)(*std::launder(static_cast<T *>(acc)),
                    *std::launder(static_cast<const T *>(other)));
#if defined(__cpp_exceptions)
    } catch (...) {
      c->combine_threw.store(true, std::memory_order_relaxed);
    }
#endif
  }
};

/* A callable of type D from f, on the heap; NULL when memory ran out. */
template <class D, class F>
inline D *heap_copy(F &&f)
{
  return new (std::nothrow) D(std::forward<F>(f));
}

/* Spawns or submits f through c_arg (inline) or c_ptr (heap): the C calls
 * with their first argument bound. */
template <class F, class CArg, class CPtr>
inline int run_task(F &&f, CArg c_arg, CPtr c_ptr)
{
  using D = std::decay_t<F>;
  static_assert(std::is_invocable_v<D &>, "weft: a task is called with no arguments");
  if constexpr (in_word<D, std::is_invocable_v<const D &>>) {
    return c_ptr(&entry<D>::task_word, to_word<D>(f));
  } else if constexpr (stored_inline<D, WEFT_TASK_ARG_INLINE>) {
    if constexpr (std::is_same_v<remove_cvref_t<F>, D>) {
      return c_arg(&entry<D>::task_inline, static_cast<const void *>(std::addressof(f)), sizeof(D));
    } else {
      const D copy(std::forward<F>(f)); /* a function reference becomes a pointer */
      return c_arg(&entry<D>::task_inline, static_cast<const void *>(&copy), sizeof(D));
    }
  } else {
    D *p = heap_copy<D>(std::forward<F>(f));
    if (!p)
      return WEFT_ENOMEM;
    int rc = c_ptr(&entry<D>::task_heap, static_cast<void *>(p));
    if (rc)
      delete p;
    return rc;
  }
}

/* Whether const D & is called as the trampolines call D & (in_word). */
template <class D>
constexpr bool op_const_callable = op_takes_ctx<D> ? std::is_invocable_v<const D &, const run_ctx &>
                                                   : std::is_invocable_v<const D &>;
template <class D>
constexpr bool async_const_callable = async_takes_ctx<D>
                                          ? std::is_invocable_v<const D &, const run_ctx &, done>
                                          : std::is_invocable_v<const D &, done>;

/* Pushes (or makes) an operator whose callable is f, through c_call(desc,
 * data, size, drop) (weft_push_arg, weft_op_new_arg, weft_graph_add_arg
 * with the rest bound), or c_plain(desc) (weft_push, weft_op_new,
 * weft_graph_add) when f travels in desc.arg. desc has everything but the
 * function and its argument. */
template <bool Async, class F, class CCall, class CPlain>
inline int store_op(weft_op_desc &desc, F &&f, CCall c_call, CPlain c_plain)
{
  using D = std::decay_t<F>;
  if constexpr (Async)
    static_assert(
        async_callable<D>,
        "weft: an async operator takes (const weft::run_ctx &, weft::done) or (weft::done)");
  else
    static_assert(op_callable<D>, "weft: an operator takes (const weft::run_ctx &) or nothing");
  if constexpr (in_word<D, Async ? async_const_callable<D> : op_const_callable<D>>) {
    if constexpr (Async)
      desc.async_fn = &entry<D>::async_word;
    else
      desc.fn = &entry<D>::op_word;
    desc.arg = to_word<D>(f);
    return c_plain(desc);
  }
  constexpr bool in = stored_inline<D, WEFT_OP_ARG_INLINE>;
  if constexpr (Async)
    desc.async_fn = &entry<D>::template async<in>;
  else
    desc.fn = &entry<D>::template op<in>;
  if constexpr (in) {
    if constexpr (std::is_same_v<remove_cvref_t<F>, D>) {
      return c_call(desc, static_cast<const void *>(std::addressof(f)), sizeof(D), nullptr);
    } else {
      const D copy(std::forward<F>(f));
      return c_call(desc, static_cast<const void *>(&copy), sizeof(D), nullptr);
    }
  } else {
    D *p = heap_copy<D>(std::forward<F>(f));
    if (!p)
      return WEFT_ENOMEM;
    /* The library copies the pointer; drop deletes the object once. On an
     * error nothing was copied and drop is not called. */
    int rc = c_call(desc, static_cast<const void *>(&p), sizeof p, &entry<D>::drop);
    if (rc)
      delete p;
    return rc;
  }
}

} // namespace detail

/* -------------------------------------------------------------------- pool */

/* A pool of workers (weft_pool_create). */
class pool {
public:
  /* Creates a pool; cfg NULL: every field automatic. Never throws: ok()
   * and init_status() say whether it worked. */
  explicit pool(const weft_pool_config *cfg = nullptr) noexcept : st_(weft_pool_create(&p_, cfg)) {}
  pool(const pool &) = delete;
  pool &operator=(const pool &) = delete;
  pool(pool &&o) noexcept : p_(std::exchange(o.p_, nullptr)), st_(o.st_) {}
  pool &operator=(pool &&o) noexcept
  {
    if (this != &o) {
      (void)destroy();
      p_ = std::exchange(o.p_, nullptr);
      st_ = o.st_;
    }
    return *this;
  }
  /* Runs everything submitted, then joins the workers (weft_pool_destroy). */
  ~pool() { (void)destroy(); }

  /* weft_pool_config_default's config, to change and pass to the constructor. */
  static weft_pool_config default_config() noexcept
  {
    weft_pool_config c;
    weft_pool_config_default(&c);
    return c;
  }

  /* Holds a live pool: created, not moved from, not destroyed. */
  bool ok() const noexcept { return p_ != nullptr; }
  /* The status of the creation. */
  weft::status init_status() const noexcept { return weft::status(st_); }
  weft_pool *get() const noexcept { return p_; }
  /* Gives the handle up: the caller destroys it. */
  weft_pool *release() noexcept { return std::exchange(p_, nullptr); }
  /* weft_pool_destroy now. The handle is given up, except on WEFT_EDEADLK
   * (called from one of the pool's own tasks: nothing happened). */
  weft::status destroy() noexcept
  {
    if (!p_)
      return weft::status();
    int rc = weft_pool_destroy(p_);
    if (rc != WEFT_EDEADLK)
      p_ = nullptr;
    return weft::status(rc);
  }

  /* The number of workers; WEFT_EINVAL for an owner without a pool. */
  int num_threads() const noexcept { return weft_pool_num_threads(p_); }

  /* Runs f() on the pool some time later (weft_pool_submit). Its result
   * goes nowhere, failures included: use a group to collect them. */
  template <class F>
  weft::status submit(F &&f)
  {
    weft_pool *p = p_;
    return weft::status(detail::run_task(
        std::forward<F>(f),
        [p](weft_task_fn fn, const void *data, std::size_t size) {
          return weft_pool_submit_arg(p, fn, data, size);
        },
        [p](weft_task_fn fn, void *arg) { return weft_pool_submit(p, fn, arg); }));
  }

  /* Calls f(b, e) on disjoint chunks covering [begin, end), in parallel,
   * and waits (weft_parallel_for): f is called through a pointer, from
   * several threads at once. Returns the first failure f returned. */
  template <class F>
  weft::status parallel_for(std::size_t begin, std::size_t end, F &&f,
                            std::size_t grain = 0) noexcept
  {
    using D = std::remove_reference_t<F>;
    if constexpr (std::is_function_v<D>) {
      D *fp = f; /* a function: called through a pointer to it */
      return parallel_for(begin, end, fp, grain);
    } else {
      static_assert(std::is_invocable_v<D &, std::size_t, std::size_t>,
                    "weft: a parallel_for body is called as f(size_t begin, size_t end)");
      return weft::status(weft_parallel_for(p_, begin, end, grain, &detail::entry<D>::range,
                                            detail::object_arg(f)));
    }
  }

  /* Calls f(id, num_tasks) once for each id in 0..num_tasks-1, in
   * parallel, and waits (weft_parallel_launch); f as for parallel_for. */
  template <class F>
  weft::status parallel_launch(int num_tasks, F &&f) noexcept
  {
    using D = std::remove_reference_t<F>;
    if constexpr (std::is_function_v<D>) {
      D *fp = f;
      return parallel_launch(num_tasks, fp);
    } else {
      static_assert(std::is_invocable_v<D &, int, int>,
                    "weft: a parallel_launch body is called as f(int task_id, int num_tasks)");
      return weft::status(
          weft_parallel_launch(p_, &detail::entry<D>::launch, detail::object_arg(f), num_tasks));
    }
  }

  /* weft_pool_stats: fills out[0..k) for the first k = min(max, workers)
   * workers; *filled (if not NULL) receives k. */
  weft::status stats(weft_worker_stats *out, int max, int *filled = nullptr) const noexcept
  {
    int k = weft_pool_stats(p_, out, max);
    if (k < 0)
      return weft::status(k);
    if (filled)
      *filled = k;
    return weft::status();
  }
  template <std::size_t N>
  weft::status stats(weft_worker_stats (&out)[N], int *filled = nullptr) const noexcept
  {
    static_assert(N <= 0x7fffffff, "weft: too many stats slots");
    return stats(out, static_cast<int>(N), filled);
  }

  /* A parallel reduce (weft_parallel_reduce) into result: body(b, e, acc)
   * folds the chunk [b, e) into acc (a T, started as a copy of identity),
   * returning void, int or status; combine(acc, other) folds the
   * accumulator other into acc, returning nothing. T is copied byte for
   * byte by the library, so it must be trivially copyable (aligned to at
   * most 64). flags: WEFT_REDUCE_DETERMINISTIC for the same grouping at
   * every run. Both callables are called through pointers, from several
   * threads at once. A combine that throws (exceptions on) makes the call
   * return WEFT_EEXCEPTION, result unspecified, as a body that throws. */
  template <class T, class Body, class Combine>
  weft::status parallel_reduce(T &result, std::size_t begin, std::size_t end, const T &identity,
                               Body &&body, Combine &&combine, std::size_t grain = 0,
                               unsigned flags = 0) noexcept
  {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 64,
                  "weft: a reduce accumulator is trivially copyable, aligned to at most 64");
    using B = std::remove_reference_t<Body>;
    using C = std::remove_reference_t<Combine>;
    if constexpr (std::is_function_v<B> || std::is_function_v<C>) {
      auto &&b = detail::callable_object(body);
      auto &&c = detail::callable_object(combine);
      return parallel_reduce(result, begin, end, identity, b, c, grain, flags);
    } else {
      static_assert(std::is_invocable_v<B &, std::size_t, std::size_t, T &>,
                    "weft: a reduce body is called as body(size_t begin, size_t end, T &acc)");
      static_assert(std::is_invocable_v<C &, T &, const T &>,
                    "weft: a reduce combine is called as combine(T &acc, const T &other)");
      detail::reduce_ctx<T, B, C> ctx{&body, &combine, {false}};
      const T id = identity; /* result may be the caller's identity itself */
      int rc = weft_parallel_reduce(
          p_, begin, end, grain, &id, sizeof(T), &detail::reduce_ctx<T, B, C>::body_entry,
          &detail::reduce_ctx<T, B, C>::combine_entry, &ctx, &result, flags);
      if (rc == 0 && ctx.combine_threw.load(std::memory_order_relaxed))
        rc = WEFT_EEXCEPTION;
      return weft::status(rc);
    }
  }

  /* weft_pool_park_idle: idle workers park at once instead of spinning. */
  weft::status park_idle() noexcept { return weft::status(weft_pool_park_idle(p_)); }

private:
  weft_pool *p_ = nullptr;
  int st_;
};

/* --------------------------------------------------------------- fork-join */

/* A fork-join group (weft_group) on the caller's stack. The thread that
 * makes it is the one that waits; its tasks may spawn into it from any
 * thread. The destructor waits when spawns are outstanding. Neither
 * copyable nor movable: its tasks point at it. */
class group {
public:
  explicit group(pool &p) noexcept { weft_group_init(&g_, p.get()); }
  explicit group(weft_pool *p) noexcept { weft_group_init(&g_, p); }
  group(const group &) = delete;
  group &operator=(const group &) = delete;
  ~group()
  {
    if (spawned_.load(std::memory_order_relaxed))
      (void)weft_group_wait(&g_);
  }

  /* Runs f() as part of the group (weft_group_spawn); a non-zero result
   * (or a status) is what wait() returns, the first one. */
  template <class F>
  weft::status spawn(F &&f)
  {
    weft_group *g = &g_;
    int rc = detail::run_task(
        std::forward<F>(f),
        [g](weft_task_fn fn, const void *data, std::size_t size) {
          return weft_group_spawn_arg(g, fn, data, size);
        },
        [g](weft_task_fn fn, void *arg) { return weft_group_spawn(g, fn, arg); });
    if (rc == 0)
      spawned_.store(true, std::memory_order_relaxed);
    return weft::status(rc);
  }

  /* Waits for every task of the group, running others meanwhile
   * (weft_group_wait); the first failure one returned, else ok. The group
   * may be used again afterwards. */
  weft::status wait() noexcept
  {
    int rc = weft_group_wait(&g_);
    spawned_.store(false, std::memory_order_relaxed);
    return weft::status(rc);
  }

  /* wait() without helping (weft_group_wait_blocking): this thread runs
   * nothing and sleeps until the tasks have finished. WEFT_EDEADLK from a
   * worker of the pool or from inside one of its tasks (nothing waited). */
  weft::status wait_blocking() noexcept
  {
    int rc = weft_group_wait_blocking(&g_);
    if (rc != WEFT_EDEADLK)
      spawned_.store(false, std::memory_order_relaxed);
    return weft::status(rc);
  }

  weft_group *get() noexcept { return &g_; }

private:
  weft_group g_;
  /* Whether a spawn may be outstanding: set by spawns on any thread (the
   * group's own tasks may spawn), cleared by wait on the owner's. */
  std::atomic<bool> spawned_{false};
};

/* ------------------------------------------------------------------ engine */

class engine;

/* A var (weft_var_new): a handle the engine orders operators by. */
class var {
public:
  var() noexcept = default;
  /* A new var of eng. Never throws: ok() and init_status() say whether it
   * worked. */
  explicit var(engine &eng) noexcept;
  explicit var(weft_engine *eng) noexcept : e_(eng), st_(weft_var_new(eng, &v_)) {}
  var(const var &) = delete;
  var &operator=(const var &) = delete;
  var(var &&o) noexcept : e_(o.e_), v_(std::exchange(o.v_, nullptr)), st_(o.st_) {}
  var &operator=(var &&o) noexcept
  {
    if (this != &o) {
      (void)destroy();
      e_ = o.e_;
      v_ = std::exchange(o.v_, nullptr);
      st_ = o.st_;
    }
    return *this;
  }
  /* Deletes the var (weft_var_delete: deferred until the operators pushed
   * on it have finished). Inside a capture on its engine the delete is
   * refused (WEFT_EBUSY) and the var lives until the engine's destroy. */
  ~var() { (void)destroy(); }

  bool ok() const noexcept { return v_ != nullptr; }
  weft::status init_status() const noexcept { return weft::status(st_); }
  weft_var *get() const noexcept { return v_; }
  weft_var *release() noexcept { return std::exchange(v_, nullptr); }
  /* weft_var_delete now. The handle is given up, except on WEFT_ENOMEM and
   * WEFT_EBUSY (nothing happened: the call may be repeated). */
  weft::status destroy() noexcept
  {
    if (!v_)
      return weft::status();
    int rc = weft_var_delete(e_, v_);
    if (rc != WEFT_ENOMEM && rc != WEFT_EBUSY)
      v_ = nullptr;
    return weft::status(rc);
  }

private:
  weft_engine *e_ = nullptr;
  weft_var *v_ = nullptr;
  int st_ = WEFT_EINVAL;
};

/* One entry of weft::reads or weft::writes: a weft::var or a raw handle. */
class var_ref {
public:
  var_ref(const var &v) noexcept : v_(v.get()) {}
  var_ref(weft_var *v) noexcept : v_(v) {}
  weft_var *get() const noexcept { return v_; }

private:
  weft_var *v_;
};

namespace detail {

/* A list of vars for one push: up to inline_capacity are kept in the
 * object (no allocation), a longer braced list in one allocation. From a
 * pointer and a count the caller's array is used as it is: it must outlive
 * the calls the list is passed to. Neither copyable nor movable. */
class var_list {
public:
  static constexpr std::size_t inline_capacity = 8;

  var_list() noexcept = default;
  var_list(std::initializer_list<var_ref> vars) noexcept : n_(vars.size())
  {
    weft_var **dst = buf_;
    if (n_ > inline_capacity) {
      heap_ = new (std::nothrow) weft_var *[n_];
      dst = heap_;
    }
    if (!dst) {
      n_ = 0;
      failed_ = true;
      return;
    }
    std::size_t i = 0;
    for (const var_ref &v : vars)
      dst[i++] = v.get();
    data_ = dst;
  }
  var_list(weft_var *const *vars, std::size_t n) noexcept : data_(vars), n_(n) {}
  var_list(const var_list &) = delete;
  var_list &operator=(const var_list &) = delete;
  ~var_list() { delete[] heap_; }

  weft_var *const *data() const noexcept { return n_ ? data_ : nullptr; }
  std::size_t size() const noexcept { return n_; }
  /* A long list whose allocation failed: a push with it returns WEFT_ENOMEM. */
  bool failed() const noexcept { return failed_; }

private:
  weft_var *buf_[inline_capacity]; /* the first n_ set when data_ points here */
  weft_var **heap_ = nullptr;
  weft_var *const *data_ = nullptr;
  std::size_t n_ = 0;
  bool failed_ = false;
};

inline weft_op_desc make_desc(const var_list &r, const var_list &w, const op_options &o) noexcept
{
  weft_op_desc d{};
  d.reads = r.data();
  d.num_reads = r.size();
  d.writes = w.data();
  d.num_writes = w.size();
  d.ctx = o.ctx;
  d.prop = o.prop;
  d.priority = o.priority;
  d.flags = o.flags;
  d.name = o.name;
  return d;
}

} // namespace detail

/* The vars an operator reads, and those it writes: weft::reads{a, b},
 * weft::writes{c}, with weft::var or weft_var * entries. */
class reads : public detail::var_list {
public:
  using var_list::var_list;
  reads() noexcept = default;
};
class writes : public detail::var_list {
public:
  using var_list::var_list;
  writes() noexcept = default;
};

/* A reusable operator (weft_op_new): made by engine::make_op or
 * make_async_op, pushed any number of times. */
class op {
public:
  op() noexcept = default;
  op(const op &) = delete;
  op &operator=(const op &) = delete;
  op(op &&o) noexcept : e_(o.e_), op_(std::exchange(o.op_, nullptr)), st_(o.st_) {}
  op &operator=(op &&o) noexcept
  {
    if (this != &o) {
      (void)destroy();
      e_ = o.e_;
      op_ = std::exchange(o.op_, nullptr);
      st_ = o.st_;
    }
    return *this;
  }
  /* Deletes the operator (weft_op_delete: deferred until its last push
   * has finished; its callable is destroyed then). */
  ~op() { (void)destroy(); }

  bool ok() const noexcept { return op_ != nullptr; }
  weft::status init_status() const noexcept { return weft::status(st_); }
  weft_op *get() const noexcept { return op_; }
  weft_op *release() noexcept { return std::exchange(op_, nullptr); }
  /* Pushes it once more (weft_op_push); inside a capture, records it. */
  weft::status push() noexcept { return weft::status(weft_op_push(e_, op_)); }
  /* weft_op_delete now; the handle is given up. */
  weft::status destroy() noexcept
  {
    if (!op_)
      return weft::status();
    return weft::status(weft_op_delete(e_, std::exchange(op_, nullptr)));
  }

private:
  friend class engine;
  op(weft_engine *e, weft_op *o, int st) noexcept : e_(e), op_(o), st_(st) {}

  weft_engine *e_ = nullptr;
  weft_op *op_ = nullptr;
  int st_ = WEFT_EINVAL;
};

/* A captured graph (weft_graph): made by engine::capture. */
class graph {
public:
  graph() noexcept = default;
  graph(const graph &) = delete;
  graph &operator=(const graph &) = delete;
  graph(graph &&o) noexcept : g_(std::exchange(o.g_, nullptr)), st_(o.st_) {}
  graph &operator=(graph &&o) noexcept
  {
    if (this != &o) {
      reset();
      g_ = std::exchange(o.g_, nullptr);
      st_ = o.st_;
    }
    return *this;
  }
  /* Frees the graph (weft_graph_destroy), its recorded callables with it;
   * a launch of it that still runs is waited out first. */
  ~graph() { reset(); }

  bool ok() const noexcept { return g_ != nullptr; }
  /* The capture's status: weft_graph_begin_capture's or end_capture's
   * failure, or the body's own failure. */
  weft::status init_status() const noexcept { return weft::status(st_); }
  weft_graph *get() const noexcept { return g_; }
  weft_graph *release() noexcept { return std::exchange(g_, nullptr); }
  /* Runs the recorded operators once more, without waiting for them
   * (weft_graph_launch: queued behind the previous launch while it runs,
   * ordered with the pushes around it by the vars it uses). A node this
   * header added calls its own callable at every launch: per-launch
   * arguments (weft_graph_launch_args) are for nodes added with a C fn. */
  weft::status launch() noexcept { return weft::status(weft_graph_launch(g_)); }

  /* Task graphs with explicit edges (weft_graph_add_arg, weft_graph_edge):
   * add a node, any operator a push takes, its index (0, 1, ... in the
   * order of adding; a captured graph's i-th push is node i) in *node;
   * then edge(before, after) in any order. The next launch resolves the
   * graph (a cycle: WEFT_EINVAL there, nothing run). The callable is
   * stored with the graph and called at every launch. */
  template <class F>
  weft::status add(F &&f, const reads &r = {}, const writes &w = {}, const op_options &o = {},
                   std::size_t *node = nullptr)
  {
    return add_impl<false>(std::forward<F>(f), r, w, o, node);
  }
  template <class F>
  weft::status add_async(F &&f, const reads &r = {}, const writes &w = {},
                         const op_options &o = {}, std::size_t *node = nullptr)
  {
    return add_impl<true>(std::forward<F>(f), r, w, o, node);
  }
  /* before runs before after at every launch (duplicates merged). */
  weft::status edge(std::size_t before, std::size_t after) noexcept
  {
    return weft::status(weft_graph_edge(g_, before, after));
  }
  /* weft_graph_destroy now, without waiting: the handle is given up,
   * except on WEFT_EBUSY (a launch of it still runs: nothing happened). */
  weft::status destroy() noexcept
  {
    if (!g_)
      return weft::status();
    int rc = weft_graph_destroy(g_);
    if (rc != WEFT_EBUSY)
      g_ = nullptr;
    return weft::status(rc);
  }

private:
  friend class engine;
  graph(weft_graph *g, int st) noexcept : g_(g), st_(st) {}

  template <bool Async, class F>
  weft::status add_impl(F &&f, const reads &r, const writes &w, const op_options &o,
                        std::size_t *node)
  {
    if (r.failed() || w.failed())
      return weft::status(WEFT_ENOMEM);
    weft_op_desc d = detail::make_desc(r, w, o);
    weft_graph *g = g_;
    return weft::status(detail::store_op<Async>(
        d, std::forward<F>(f),
        [g, node](const weft_op_desc &desc, const void *data, std::size_t size,
                  weft_arg_drop_fn drop) {
          return weft_graph_add_arg(g, &desc, data, size, drop, node);
        },
        [g, node](const weft_op_desc &desc) { return weft_graph_add(g, &desc, node); }));
  }

  /* Destroys the graph, retrying while a launch of it runs (the launch
   * finishes on its own; the retries back off from yields to 1 ms sleeps). */
  void reset() noexcept
  {
    for (unsigned i = 0; g_ && destroy() == WEFT_EBUSY; i += i < 1024) {
      if (i < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(i < 1024 ? 50 : 1000));
    }
  }

  weft_graph *g_ = nullptr;
  int st_ = WEFT_EINVAL;
};

/* The dependency engine (weft_engine_create). */
class engine {
public:
  /* Creates an engine; cfg NULL: every field automatic (its own pool).
   * Never throws: ok() and init_status() say whether it worked. */
  explicit engine(const weft_engine_config *cfg = nullptr) noexcept
      : st_(weft_engine_create(&e_, cfg))
  {
  }
  /* An engine on p (the rest of the config automatic); p must outlive it.
   * WEFT_EINVAL if p holds no pool. */
  explicit engine(pool &p) noexcept : st_(WEFT_EINVAL)
  {
    if (p.get()) {
      weft_engine_config c = default_config();
      c.pool = p.get();
      st_ = weft_engine_create(&e_, &c);
    }
  }
  engine(const engine &) = delete;
  engine &operator=(const engine &) = delete;
  engine(engine &&o) noexcept : e_(std::exchange(o.e_, nullptr)), st_(o.st_) {}
  engine &operator=(engine &&o) noexcept
  {
    if (this != &o) {
      (void)destroy();
      e_ = std::exchange(o.e_, nullptr);
      st_ = o.st_;
    }
    return *this;
  }
  /* Waits for every operator and frees the engine (weft_engine_destroy). */
  ~engine() { (void)destroy(); }

  static weft_engine_config default_config() noexcept
  {
    weft_engine_config c;
    weft_engine_config_default(&c);
    return c;
  }

  bool ok() const noexcept { return e_ != nullptr; }
  weft::status init_status() const noexcept { return weft::status(st_); }
  weft_engine *get() const noexcept { return e_; }
  weft_engine *release() noexcept { return std::exchange(e_, nullptr); }
  /* weft_engine_destroy now: the first failure since the last wait_all.
   * The handle is given up, except on WEFT_EDEADLK (from one of its own
   * operators) and WEFT_EBUSY (from a thread capturing on it): nothing
   * happened. */
  weft::status destroy() noexcept
  {
    if (!e_)
      return weft::status();
    int rc = weft_engine_destroy(e_);
    if (rc != WEFT_EDEADLK && rc != WEFT_EBUSY)
      e_ = nullptr;
    return weft::status(rc);
  }

  /* Pushes a one-shot operator (weft_push_arg): f(rc) or f(), returning
   * void, int or status, runs once the operators pushed before it on its
   * vars allow. */
  template <class F>
  weft::status push(F &&f, const reads &r = {}, const writes &w = {}, const op_options &o = {})
  {
    return push_impl<false>(std::forward<F>(f), r, w, o);
  }
  template <class F>
  weft::status push(F &&f, const writes &w, const op_options &o = {})
  {
    return push_impl<false>(std::forward<F>(f), reads(), w, o);
  }
  /* Pushes an async operator: f(rc, d) or f(d) starts the work and
   * returns; d.signal(status) completes it, exactly once, from any thread. */
  template <class F>
  weft::status push_async(F &&f, const reads &r = {}, const writes &w = {},
                          const op_options &o = {})
  {
    return push_impl<true>(std::forward<F>(f), r, w, o);
  }
  template <class F>
  weft::status push_async(F &&f, const writes &w, const op_options &o = {})
  {
    return push_impl<true>(std::forward<F>(f), reads(), w, o);
  }

  /* A reusable operator (weft_op_new_arg): every push calls the one stored
   * callable, from several threads at once when pushes run together (reads
   * only). Never throws: the op records the status. */
  template <class F>
  weft::op make_op(F &&f, const reads &r = {}, const writes &w = {}, const op_options &o = {})
  {
    return make_impl<false>(std::forward<F>(f), r, w, o);
  }
  template <class F>
  weft::op make_op(F &&f, const writes &w, const op_options &o = {})
  {
    return make_impl<false>(std::forward<F>(f), reads(), w, o);
  }
  template <class F>
  weft::op make_async_op(F &&f, const reads &r = {}, const writes &w = {}, const op_options &o = {})
  {
    return make_impl<true>(std::forward<F>(f), r, w, o);
  }
  template <class F>
  weft::op make_async_op(F &&f, const writes &w, const op_options &o = {})
  {
    return make_impl<true>(std::forward<F>(f), reads(), w, o);
  }

  /* weft_var_wait: the var's failure status (cleared), else ok. */
  weft::status var_wait(var_ref v) noexcept { return weft::status(weft_var_wait(e_, v.get())); }
  /* weft_wait_all: the first failure since the last wait_all (cleared). */
  weft::status wait_all() noexcept { return weft::status(weft_wait_all(e_)); }
  /* weft_gpu_count: the GPUs operators may use (a count, never an error). */
  int gpu_count() const noexcept { return weft_gpu_count(e_); }

  /* Captures the pushes body() makes on this thread into a graph
   * (weft_graph_begin_capture ... weft_graph_end_capture). The capture is
   * always ended: body may return early, and a failure it returns (int or
   * status) makes the result an empty graph carrying that status, the
   * partial graph destroyed. An exception from body (exceptions on) is
   * rethrown once the capture is ended and its partial graph destroyed.
   * The graph's init_status() is the capture's status. */
  /* An empty graph to fill with graph::add and graph::edge
   * (weft_graph_create); its init_status() says whether it was made. */
  weft::graph make_graph() noexcept
  {
    weft_graph *g = nullptr;
    int rc = weft_graph_create(e_, &g);
    return weft::graph(g, rc);
  }

  template <class F>
  weft::graph capture(F &&body)
  {
    static_assert(std::is_invocable_v<std::remove_reference_t<F> &>,
                  "weft: a capture body is called with no arguments");
    int rc = weft_graph_begin_capture(e_);
    if (rc)
      return weft::graph(nullptr, rc);
    /* Ends the capture on every way out of body, an exception included. */
    struct capture_end {
      weft_engine *e;
      weft_graph *g = nullptr;
      int rc = 0;
      bool open = true;
      void end() noexcept
      {
        open = false;
        rc = weft_graph_end_capture(e, &g);
      }
      ~capture_end()
      {
        if (open) {
          end();
          if (g)
            (void)weft_graph_destroy(g);
        }
      }
    } guard{e_};
    int body_rc = detail::call_code(body);
    guard.end();
    if (body_rc) {
      if (guard.g)
        (void)weft_graph_destroy(guard.g);
      return weft::graph(nullptr, body_rc);
    }
    return weft::graph(guard.g, guard.rc);
  }

private:
  template <bool Async, class F>
  weft::status push_impl(F &&f, const reads &r, const writes &w, const op_options &o)
  {
    if (r.failed() || w.failed())
      return weft::status(WEFT_ENOMEM);
    weft_op_desc d = detail::make_desc(r, w, o);
    weft_engine *e = e_;
    return weft::status(detail::store_op<Async>(
        d, std::forward<F>(f),
        [e](const weft_op_desc &desc, const void *data, std::size_t size, weft_arg_drop_fn drop) {
          return weft_push_arg(e, &desc, data, size, drop);
        },
        [e](const weft_op_desc &desc) { return weft_push(e, &desc); }));
  }

  template <bool Async, class F>
  weft::op make_impl(F &&f, const reads &r, const writes &w, const op_options &o)
  {
    if (r.failed() || w.failed())
      return weft::op(e_, nullptr, WEFT_ENOMEM);
    weft_op_desc d = detail::make_desc(r, w, o);
    weft_engine *e = e_;
    weft_op *out = nullptr;
    int rc = detail::store_op<Async>(d, std::forward<F>(f),
                                     [e, &out](const weft_op_desc &desc, const void *data,
                                               std::size_t size, weft_arg_drop_fn drop) {
                                       return weft_op_new_arg(e, &desc, data, size, drop, &out);
                                     },
                                     [e, &out](const weft_op_desc &desc) {
                                       return weft_op_new(e, &desc, &out);
                                     });
    return weft::op(e_, rc ? nullptr : out, rc);
  }

  weft_engine *e_ = nullptr;
  int st_;
};

inline var::var(engine &eng) noexcept : e_(eng.get()), st_(weft_var_new(eng.get(), &v_)) {}

/* weft_current_worker: this thread's worker index in its pool, -1 elsewhere. */
inline int current_worker() noexcept
{
  return weft_current_worker();
}

} // namespace weft

#endif /* WEFT_WEFT_HPP */
