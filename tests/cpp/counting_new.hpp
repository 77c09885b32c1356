// A counting replacement of the global operator new (every form), for the
// suites that check which calls allocate: ct::allocations() is the number
// of operator new calls the process made so far, on any thread. The
// replacements allocate with malloc and free with free, so that the
// sanitizers' allocators still see every block. Include it in one
// translation unit of a program only (replacements are not inline).
#ifndef WEFT_TESTS_COUNTING_NEW_HPP
#define WEFT_TESTS_COUNTING_NEW_HPP

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ct {

inline std::atomic<long> &allocation_counter()
{
  static std::atomic<long> n{0};
  return n;
}

inline long allocations()
{
  return allocation_counter().load();
}

inline void *counted_alloc(std::size_t size, std::size_t align) noexcept
{
  allocation_counter().fetch_add(1, std::memory_order_relaxed);
  if (size == 0)
    size = 1;
  if (align <= alignof(std::max_align_t))
    return std::malloc(size);
  void *p = nullptr;
  return posix_memalign(&p, align, size) == 0 ? p : nullptr;
}

[[noreturn]] inline void out_of_memory()
{
#if defined(__cpp_exceptions)
  throw std::bad_alloc();
#else
  std::abort();
#endif
}

} // namespace ct

void *operator new(std::size_t size)
{
  if (void *p = ct::counted_alloc(size, 0))
    return p;
  ct::out_of_memory();
}
void *operator new[](std::size_t size)
{
  if (void *p = ct::counted_alloc(size, 0))
    return p;
  ct::out_of_memory();
}
void *operator new(std::size_t size, std::align_val_t al)
{
  if (void *p = ct::counted_alloc(size, static_cast<std::size_t>(al)))
    return p;
  ct::out_of_memory();
}
void *operator new[](std::size_t size, std::align_val_t al)
{
  if (void *p = ct::counted_alloc(size, static_cast<std::size_t>(al)))
    return p;
  ct::out_of_memory();
}
void *operator new(std::size_t size, const std::nothrow_t &) noexcept
{
  return ct::counted_alloc(size, 0);
}
void *operator new[](std::size_t size, const std::nothrow_t &) noexcept
{
  return ct::counted_alloc(size, 0);
}
void *operator new(std::size_t size, std::align_val_t al, const std::nothrow_t &) noexcept
{
  return ct::counted_alloc(size, static_cast<std::size_t>(al));
}
void *operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t &) noexcept
{
  return ct::counted_alloc(size, static_cast<std::size_t>(al));
}
void operator delete(void *p) noexcept
{
  std::free(p);
}
void operator delete[](void *p) noexcept
{
  std::free(p);
}
void operator delete(void *p, std::size_t) noexcept
{
  std::free(p);
}
void operator delete[](void *p, std::size_t) noexcept
{
  std::free(p);
}
void operator delete(void *p, std::align_val_t) noexcept
{
  std::free(p);
}
void operator delete[](void *p, std::align_val_t) noexcept
{
  std::free(p);
}
void operator delete(void *p, std::size_t, std::align_val_t) noexcept
{
  std::free(p);
}
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept
{
  std::free(p);
}
void operator delete(void *p, const std::nothrow_t &) noexcept
{
  std::free(p);
}
void operator delete[](void *p, const std::nothrow_t &) noexcept
{
  std::free(p);
}
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept
{
  std::free(p);
}
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept
{
  std::free(p);
}

#endif // WEFT_TESTS_COUNTING_NEW_HPP
