// Error values for fallible functions. Input errors (a bad file, flag or value that the user
// can fix) map to exit code 2; runtime errors (the machine or a library failed) map to 1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace acceltune {

enum class ErrorKind { input, runtime };

struct Error {
  ErrorKind kind = ErrorKind::runtime;
  std::string message;

  int exit_code() const { return kind == ErrorKind::input ? 2 : 1; }
};

template <typename... Args>
Error input_error(fmt::format_string<Args...> f, Args&&... args) {
  return Error{ErrorKind::input, fmt::format(f, std::forward<Args>(args)...)};
}

template <typename... Args>
Error runtime_error(fmt::format_string<Args...> f, Args&&... args) {
  return Error{ErrorKind::runtime, fmt::format(f, std::forward<Args>(args)...)};
}

// A value or an Error; the subset of C++23 std::expected that this code base needs.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line,
                                      const std::string& what) {
  std::fprintf(stderr, "acceltune: internal error at %s:%d: check '%s' failed%s%s\n", file, line,
               expr, what.empty() ? "" : ": ", what.c_str());
  std::abort();
}

}  // namespace acceltune

// Invariants, not input validation: a failure is a bug in acceltune.
#define ACCELTUNE_CHECK(cond, ...)                                                     \
  do {                                                                                 \
    if (!(cond)) ::acceltune::check_failed(#cond, __FILE__, __LINE__, fmt::format("" __VA_ARGS__)); \
  } while (0)

#define ACCELTUNE_CONCAT_INNER(a, b) a##b
#define ACCELTUNE_CONCAT(a, b) ACCELTUNE_CONCAT_INNER(a, b)

// Propagate an error from an Expected<T> or Status; binds the value of an Expected to `lhs`.
#define ACCELTUNE_TRY_ASSIGN(lhs, expr) \
  ACCELTUNE_TRY_ASSIGN_IMPL(ACCELTUNE_CONCAT(acceltune_try_, __LINE__), lhs, expr)
#define ACCELTUNE_TRY_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp) return tmp.error();                   \
  lhs = std::move(tmp).value()

#define ACCELTUNE_TRY(expr)                                    \
  do {                                                         \
    auto acceltune_try_status = (expr);                        \
    if (!acceltune_try_status) return acceltune_try_status.error(); \
  } while (0)
