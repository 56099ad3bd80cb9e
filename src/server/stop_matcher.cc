#include "server/stop_matcher.h"

#include <algorithm>

namespace ember::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));  // an empty stop string would match everywhere
  }
}

std::string StopMatcher::Push(std::string_view piece) {
  if (stopped_) return "";
  pending_.append(piece);
  // Earlier text was only released once no stop string could begin in it, so searching the pending
  // text alone finds every match.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at < first) first = at, matched_ = stop;
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  const size_t keep = HeldSuffixLength();
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::Finish() {
  if (stopped_) return "";
  std::string out;
  out.swap(pending_);
  return out;
}

// The longest suffix of the pending text that is a proper prefix of a stop string, or that is an
// unfinished UTF-8 sequence, whichever is longer.
size_t StopMatcher::HeldSuffixLength() const {
  size_t keep = IncompleteUtf8Suffix(pending_);
  const std::string_view text(pending_);
  for (const std::string& stop : stops_) {
    const size_t max_k = std::min(stop.size() - 1, text.size());
    for (size_t k = max_k; k > keep; --k) {
      if (text.substr(text.size() - k) == std::string_view(stop).substr(0, k)) {
        keep = k;
        break;
      }
    }
  }
  return keep;
}

size_t IncompleteUtf8Suffix(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead byte
    size_t need = 1;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return back < need ? back : 0;
  }
  return 0;  // only continuation bytes (invalid): nothing to wait for
}

}  // namespace ember::server
