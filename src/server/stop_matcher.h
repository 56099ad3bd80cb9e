// Matches stop strings on DECODED text while streaming. A stop string may be split across tokens, so text
// that could be the start of one is held back until it is known not to be; a stop string is never emitted.
// Text is also held back while it ends inside a UTF-8 sequence (byte tokens), so each emitted chunk is
// whole characters. Not thread-safe: one matcher per generation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends generated text; returns the text that is now safe to send. After a match, returns the text
  // before the stop string and stopped() becomes true; later pushes return "".
  std::string Push(std::string_view piece);
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string that matched, if any
  // Generation ended without a match: returns whatever was still held back.
  std::string Finish();

 private:
  size_t HeldSuffixLength() const;

  std::vector<std::string> stops_;
  std::string pending_;
  std::string matched_;
  bool stopped_ = false;
};

// Number of bytes at the end of `s` that begin a UTF-8 sequence not yet complete (0..3).
size_t IncompleteUtf8Suffix(std::string_view s);

}  // namespace ember::server
