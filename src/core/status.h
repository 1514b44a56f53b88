// Status and StatusOr: the one error model for recoverable failures
// (config, I/O, network, rendezvous timeouts, checkpoint corruption).
// Invariant violations use ZT_CHECK, which prints file:line and aborts.
// See docs/errors.md for when each code is used.
//
//   StatusOr<int> parse(std::string_view s);
//   ZT_ASSIGN_OR_RETURN(int n, parse(text));
//   ZT_RETURN_IF_ERROR(store.set(key, value));
//
// Thread-safety: value types; no shared state.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace zerotrain {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // bad user input: config, flags, file contents the user wrote
  kNotFound,           // a named thing does not exist (file, key, tag)
  kIoError,            // the OS refused a read, write, socket call
  kCorruption,         // data failed a checksum, magic or length check
  kTimeout,            // a deadline passed (collective, rendezvous, store wait)
  kUnavailable,        // a peer went away (closed connection, dead rank)
  kPermissionDenied,   // authentication failed (wrong job secret)
  kResourceExhausted,  // out of memory: a device's capacity or the host's
  kInternal,           // a bug or an unexpected library failure
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Timeout: allreduce did not complete within 30 s"
  std::string to_string() const;
  // Prepends context ("while loading shard 3: ...") and keeps the code.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }
inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
inline Status timeout_error(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status permission_denied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// io_error carrying strerror(errno) and what was being done.
Status errno_status(const std::string& what, int err);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = internal_error("StatusOr built from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    check_ok();
    return *value_;
  }
  const T& value() const& {
    check_ok();
    return *value_;
  }
  T&& value() && {
    check_ok();
    return std::move(*value_);
  }
  T* operator->() {
    check_ok();
    return &*value_;
  }
  const T* operator->() const {
    check_ok();
    return &*value_;
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check_ok() const {
    if (!value_) {
      std::fprintf(stderr, "zerotrain: value() of a failed StatusOr: %s\n",
                   status_.to_string().c_str());
      std::abort();
    }
  }
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond,
                               const std::string& message);

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

}  // namespace zerotrain

// Invariant check: a false condition is a bug in zerotrain, not bad input.
#define ZT_CHECK(cond, ...)                                                \
  do {                                                                     \
    if (!(cond))                                                           \
      ::zerotrain::check_failed(__FILE__, __LINE__, #cond,                 \
                                ::zerotrain::detail::concat(__VA_ARGS__)); \
  } while (0)

#define ZT_STATUS_CONCAT_INNER(a, b) a##b
#define ZT_STATUS_CONCAT(a, b) ZT_STATUS_CONCAT_INNER(a, b)

#define ZT_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::zerotrain::Status zt_status_ = (expr); \
    if (!zt_status_.ok()) return zt_status_; \
  } while (0)

#define ZT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define ZT_ASSIGN_OR_RETURN(lhs, expr) \
  ZT_ASSIGN_OR_RETURN_IMPL(ZT_STATUS_CONCAT(zt_statusor_, __LINE__), lhs, expr)
