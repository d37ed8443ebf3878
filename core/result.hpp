// Result<T> and Error: how library code reports expected failures without throwing.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace llmrepro::core {

// What kind of failure an Error is; the CLI maps each kind to a documented exit code.
enum class ErrorCode {
  usage,       // a flag or argument is wrong (exit 2)
  input,       // a suite, database or other input file is malformed (exit 2)
  endpoint,    // the endpoint is unreachable or answered unusably (exit 3)
  environment, // the machine lacks something (a port, a device, a file system) (exit 3)
  internal,    // a bug (exit 70)
};

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

// Builds an Error; shorter at call sites than the aggregate.
inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

// A value or an Error, shaped like std::expected so that it can be swapped for it in C++23.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : m_state(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : m_state(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return m_state.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(m_state); }
  const T& value() const& { return std::get<0>(m_state); }
  T&& value() && { return std::get<0>(std::move(m_state)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(m_state); }

private:
  std::variant<T, Error> m_state;
};

template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : m_error(std::move(error)), m_failed(true) {}

  bool has_value() const { return !m_failed; }
  explicit operator bool() const { return has_value(); }
  const Error& error() const { return m_error; }

private:
  Error m_error;
  bool m_failed = false;
};

} // namespace llmrepro::core

// Early return on failure, the one spelling of it in the project (std::expected has no `?`).
//
// LLMREPRO_TRY(expression): evaluates a Result; on failure returns its Error from the enclosing
// function, whose return type is any Result. The value of a Result<T>, if any, is discarded.
#define LLMREPRO_TRY(expression)                                                                   \
  do {                                                                                             \
    auto&& llmrepro_try_result = (expression);                                                     \
    if (!llmrepro_try_result) return llmrepro_try_result.error();                                  \
  } while (false)

// LLMREPRO_TRY_ASSIGN(target, expression): evaluates a Result<T>; on failure returns its Error,
// otherwise moves the value into `target`, an lvalue declared before (`x`, `data.field`).
#define LLMREPRO_TRY_ASSIGN(target, expression)                                                    \
  do {                                                                                             \
    auto llmrepro_try_result = (expression);                                                       \
    if (!llmrepro_try_result) return llmrepro_try_result.error();                                  \
    target = std::move(*llmrepro_try_result);                                                      \
  } while (false)
