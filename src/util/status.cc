#include "util/status.h"

#include <cstring>

namespace ember {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kCorrupt: return "Corrupt";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kNoSpace: return "NoSpace";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = what + " " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return NoSpace(msg);
  if (err == ENOENT) return NotFound(msg);
  return IoError(msg);
}

}  // namespace ember
