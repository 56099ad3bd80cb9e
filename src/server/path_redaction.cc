#include "server/path_redaction.h"

namespace ember::server {
namespace {

bool EndsWord(char c) {
  switch (c) {
    case ' ': case '\t': case '\n': case '\r': case '\'': case '"': case '`':
    case '(': case ')': case '[': case ']': case '{': case '}': case '<': case '>': case ',': case ';':
      return true;
    default: return false;
  }
}

}  // namespace

std::string WithoutPaths(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    // Not after ':' (a URL's "//host/..." is not a file of ours).
    const bool word_start = i == 0 || EndsWord(text[i - 1]) || text[i - 1] == '=';
    const size_t slash = text[i] == '~' ? i + 1 : i;
    const bool absolute = slash + 1 < text.size() && text[slash] == '/' && !EndsWord(text[slash + 1]);
    if (!word_start || !absolute) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && !EndsWord(text[end])) ++end;
    std::string_view word = text.substr(i, end - i);
    // The last component that is not empty ("/a/b/" -> "b/" keeps no '/' either: the slash goes).
    while (word.size() > 1 && word.back() == '/') word.remove_suffix(1);
    out += word.substr(word.rfind('/') + 1);
    i = end;
  }
  return out;
}

}  // namespace ember::server
