// Incremental parser for a text/event-stream body as it arrives in arbitrary chunks: yields the `data:`
// payload of each complete event. Only what the OpenAI streaming API uses is supported (data lines,
// comments, blank-line event ends); `event:`/`id:` fields are ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::bench {

class SseParser {
 public:
  // Appends bytes; returns the payloads of events completed by them (multi-line data joined by '\n').
  std::vector<std::string> Feed(std::string_view bytes);

 private:
  void Line(std::string_view line, std::vector<std::string>& out);
  std::string buf_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace ember::bench
