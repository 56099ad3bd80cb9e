// Server-sent events framing (https://html.spec.whatwg.org/multipage/server-sent-events.html) for the
// two streaming grammars: OpenAI's `data: {json}\n\n ... data: [DONE]\n\n` and Anthropic's named
// `event: x\ndata: {json}\n\n`. JSON never contains a raw newline (dump escapes it), so one data line
// per event is always valid framing.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ember::server {

std::string SseData(const nlohmann::json& payload);
std::string SseEvent(std::string_view event, const nlohmann::json& payload);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// Writes frames to a byte sink (httplib's DataSink::write in the server, a string in tests). Once a write
// fails (client gone) every later write is skipped and ok() stays false.
class SseWriter {
 public:
  using WriteFn = std::function<bool(std::string_view)>;
  explicit SseWriter(WriteFn write) : write_(std::move(write)) {}

  bool Data(const nlohmann::json& payload) { return Raw(SseData(payload)); }
  bool Event(std::string_view event, const nlohmann::json& payload) { return Raw(SseEvent(event, payload)); }
  bool Done() { return Raw(kSseDone); }
  bool Raw(std::string_view bytes);
  bool ok() const { return ok_; }

 private:
  WriteFn write_;
  bool ok_ = true;
};

// JSON text that never throws: invalid UTF-8 from a model is replaced with U+FFFD.
std::string DumpJson(const nlohmann::json& j);

}  // namespace ember::server
