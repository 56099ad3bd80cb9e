// libFuzzer target for RequestFramer, the scan that decides when a connection's bytes hold one whole
// request (connection_loop.h). The input is fed twice, whole and in pieces whose sizes the input's first
// byte picks, as the loop would (answering Expect by stripping it): both runs must agree on the state
// and on where the request ends, and the end must lie within the bytes. Small limits make the caps
// reachable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/request_framing.h"

namespace {

using ember::server::FrameState;
using ember::server::FramingLimits;
using ember::server::RequestFramer;

struct Outcome {
  FrameState state;
  size_t end;
  std::string buffer;
};

Outcome Feed(const std::string& input, size_t piece) {
  const FramingLimits limits{256, 1024, 2048};
  RequestFramer framer(limits);
  std::string buffer;
  FrameState state = FrameState::kNeedMore;
  for (size_t at = 0; at < input.size() && state == FrameState::kNeedMore; at += piece) {
    buffer.append(input, at, piece);
    state = framer.Scan(buffer);
    if (framer.wants_continue()) framer.StripExpect(&buffer);
  }
  const size_t end = state == FrameState::kComplete ? framer.end() : 0;
  if (end > buffer.size()) std::abort();
  return {state, end, buffer.substr(0, end)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 17;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome whole = Feed(input, input.size() + 1);
  const Outcome pieces = Feed(input, piece);
  // Fed whole, the scan may see a limit that pieces reach later or not at all (the pieces stop at the
  // first complete request); a complete request must be the same request either way.
  if (whole.state == FrameState::kComplete && pieces.state == FrameState::kComplete &&
      (whole.end != pieces.end || whole.buffer != pieces.buffer)) {
    std::abort();
  }
  if (whole.state == FrameState::kComplete && pieces.state == FrameState::kNeedMore) std::abort();
  return 0;
}
