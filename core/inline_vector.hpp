// A vector that keeps its first N elements inside itself and moves to the heap past them: for a
// token's candidates, of which an audit asks two. Every response carries hundreds of tokens, and
// a std::vector per token was one allocation in the parse, one free in the writer and one cache
// miss in the analysis each; here the usual case touches no heap at all.
//
// The subset of std::vector's interface the code uses, with the same meaning. Iterators are
// pointers; like std::vector's, they are invalidated by growth, and also by moving the vector
// while its elements are inline.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace llmrepro::core {

template <typename T, std::size_t N> class InlineVector {
  static_assert(N > 0, "an InlineVector keeps at least one element inline");
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "growth moves the elements and must not throw half-way");

public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() noexcept {}
  InlineVector(std::initializer_list<T> values) { append_copies(values.begin(), values.end()); }
  template <typename Iterator> InlineVector(Iterator first, Iterator last) {
    append_copies(first, last);
  }
  InlineVector(const InlineVector& other) { append_copies(other.begin(), other.end()); }
  InlineVector(InlineVector&& other) noexcept { take(other); }
  ~InlineVector() { release(); }

  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) {
      clear();
      append_copies(other.begin(), other.end());
    }
    return *this;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      release();
      m_size = 0;
      m_capacity = N;
      take(other);
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> values) {
    clear();
    append_copies(values.begin(), values.end());
    return *this;
  }
  template <typename Iterator> void assign(Iterator first, Iterator last) {
    clear();
    append_copies(first, last);
  }

  size_type size() const noexcept { return m_size; }
  bool empty() const noexcept { return m_size == 0; }
  size_type capacity() const noexcept { return m_capacity; }
  // Whether the elements live inside the vector (tests and benchmarks ask).
  bool is_inline() const noexcept { return m_capacity == N; }

  T* data() noexcept { return is_inline() ? inline_data() : m_heap; }
  const T* data() const noexcept { return is_inline() ? inline_data() : m_heap; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + m_size; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + m_size; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }

  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[m_size - 1]; }
  const T& back() const noexcept { return data()[m_size - 1]; }

  void reserve(size_type wanted) {
    if (wanted > m_capacity) grow_to(wanted);
  }

  template <typename... Args> T& emplace_back(Args&&... args) {
    if (m_size == m_capacity) {
      // Built before growing: `args` may name one of this vector's own elements.
      T value(std::forward<Args>(args)...);
      grow_to(m_capacity * 2);
      return *::new (static_cast<void*>(data() + m_size++)) T(std::move(value));
    }
    return *::new (static_cast<void*>(data() + m_size++)) T(std::forward<Args>(args)...);
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() noexcept { std::destroy_at(data() + --m_size); }

  void resize(size_type wanted) {
    if (wanted < m_size) {
      std::destroy(begin() + wanted, end());
      m_size = static_cast<std::uint32_t>(wanted);
      return;
    }
    reserve(wanted);
    while (m_size < wanted) ::new (static_cast<void*>(data() + m_size++)) T();
  }
  // Keeps the capacity, as std::vector::clear does: a list decoded into again allocates nothing.
  void clear() noexcept {
    std::destroy(begin(), end());
    m_size = 0;
  }
  iterator erase(const_iterator first, const_iterator last) {
    T* at = begin() + (first - cbegin());
    T* kept_end = std::move(at + (last - first), end(), at);
    std::destroy(kept_end, end());
    m_size = static_cast<std::uint32_t>(kept_end - begin());
    return at;
  }
  iterator erase(const_iterator at) { return erase(at, at + 1); }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

private:
  T* inline_data() noexcept { return std::launder(reinterpret_cast<T*>(m_inline)); }
  const T* inline_data() const noexcept {
    return std::launder(reinterpret_cast<const T*>(m_inline));
  }

  template <typename Iterator> void append_copies(Iterator first, Iterator last) {
    reserve(m_size + static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first) ::new (static_cast<void*>(data() + m_size++)) T(*first);
  }

  void grow_to(size_type wanted) {
    const size_type capacity = std::max<size_type>(wanted, N + 1);
    T* fresh = std::allocator<T>{}.allocate(capacity);
    std::uninitialized_move(begin(), end(), fresh);
    release();
    m_heap = fresh;
    m_capacity = static_cast<std::uint32_t>(capacity);
  }

  // Destroys the elements and frees the heap block, leaving the fields to the caller.
  void release() noexcept {
    std::destroy(begin(), end());
    if (!is_inline()) std::allocator<T>{}.deallocate(m_heap, m_capacity);
  }

  // Takes `other`'s elements (this vector empty and inline), leaving `other` empty and inline.
  void take(InlineVector& other) noexcept {
    if (other.is_inline()) {
      std::uninitialized_move(other.begin(), other.end(), inline_data());
      m_size = other.m_size;
      other.clear();
      return;
    }
    m_heap = other.m_heap;
    m_size = other.m_size;
    m_capacity = other.m_capacity;
    other.m_size = 0;
    other.m_capacity = N;
  }

  union {
    alignas(T) unsigned char m_inline[N * sizeof(T)];
    T* m_heap;
  };
  std::uint32_t m_size = 0;
  std::uint32_t m_capacity = N; // N exactly while the elements are inline
};

} // namespace llmrepro::core
