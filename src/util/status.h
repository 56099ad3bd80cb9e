// Errors as values (after abseil's Status/StatusOr): a code that tells the caller what to do, plus a
// message that carries context (file, key, byte offset). No exception crosses an I/O or cache boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "util/check.h"

namespace ember {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller's input is wrong (bad flag, bad request field)
  kNotFound,          // a named thing (file, key, tensor) does not exist
  kCorrupt,           // stored bytes fail validation (bad magic, checksum, bounds)
  kUnimplemented,     // valid input that ember does not support (yet)
  kIoError,           // the OS refused (open, read, write, fsync)
  kNoSpace,           // ENOSPC: soft failure for caches
  kResourceExhausted, // a cap was hit (memory, queue length)
  kFailedPrecondition,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Corrupt: model.gguf: tensor 'x' data out of bounds at byte 1234"
  std::string ToString() const;
  // Returns a copy with `context + ": "` prepended to the message (context added as errors propagate).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status NoSpace(std::string m) { return {StatusCode::kNoSpace, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
// Maps errno once, with the path it concerned ("open /x/y: No such file or directory").
Status ErrnoStatus(const std::string& what, const std::string& path, int err);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  // An OK Status carries no value: that is a bug in the caller, reported as an Internal error rather
  // than a crash (as abseil does).
  StatusOr(Status status)  // NOLINT: implicit by design
      : v_(status.ok() ? Status(StatusCode::kInternal, "StatusOr constructed from an OK Status") : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // The value; calling these on an error is a bug (test ok() first), caught by an always-on check.
  T& value() & { CheckOk(); return *std::get_if<T>(&v_); }
  const T& value() const& { CheckOk(); return *std::get_if<T>(&v_); }
  T&& value() && { CheckOk(); return std::move(*std::get_if<T>(&v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckOk() const { EMBER_CHECK_MSG(ok(), std::get_if<Status>(&v_)->message().c_str()); }

  std::variant<T, Status> v_;
};

}  // namespace ember

#define EMBER_CONCAT_INNER(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_INNER(a, b)

// Returns early from the enclosing function with the error, if any.
#define EMBER_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    ::ember::Status _st = (expr);                   \
    if (!_st.ok()) return _st;                      \
  } while (0)

// `EMBER_ASSIGN_OR_RETURN(auto x, MaybeX());`
#define EMBER_ASSIGN_OR_RETURN(lhs, expr) \
  EMBER_ASSIGN_OR_RETURN_IMPL(EMBER_CONCAT(_sor_, __LINE__), lhs, expr)
#define EMBER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
