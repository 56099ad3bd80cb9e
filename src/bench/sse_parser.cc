#include "bench/sse_parser.h"

namespace ember::bench {

std::vector<std::string> SseParser::Feed(std::string_view bytes) {
  std::vector<std::string> out;
  buf_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(buf_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line, out);
  }
  buf_.erase(0, start);
  return out;
}

void SseParser::Line(std::string_view line, std::vector<std::string>& out) {
  if (line.empty()) {  // blank line: the event is complete
    if (has_data_) out.push_back(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment / keep-alive
  if (line.substr(0, 5) != "data:") return;
  line.remove_prefix(5);
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(line);
  has_data_ = true;
}

}  // namespace ember::bench
