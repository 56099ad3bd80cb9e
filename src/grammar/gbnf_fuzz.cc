// libFuzzer target for the GBNF parser and matchers: the input is grammar text, parsed with ParseGbnf
// under small limits; when it parses, Matches / IsPrefix run on a few fixed texts and on the bytes of the
// grammar itself, and a GrammarMatcher over a tiny vocabulary (ASCII, multi-byte and split-UTF-8
// pieces) masks and accepts a few tokens. Any text must parse or fail with a Status; matching must end
// with no crash and bounded time and memory; a token the mask allowed must be accepted.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/vocabulary.h"
#include "util/check.h"

namespace {

// Real grammars from requests are a few KiB; bigger inputs only slow each run down.
constexpr size_t kMaxGrammarBytes = 8 << 10;

std::shared_ptr<const ember::grammar::Vocabulary> TinyVocab() {
  static const auto v = [] {
    std::vector<std::string> pieces;
    for (int c = 0x20; c < 0x7f; ++c) pieces.push_back(std::string(1, static_cast<char>(c)));
    for (const char* p : {"\n", "\t", "ab", "true", "\"a\"", "{\"", "\xC3\xA9", "\xC3", "\xA9", "\xE2\x82\xAC",
                          "\xF0\x9F", "\x98\x80", "\xFF", "<eos>"}) {
      pieces.emplace_back(p);
    }
    std::vector<bool> control(pieces.size(), false);
    control.back() = true;
    return ember::grammar::Vocabulary::Create(pieces, control, {static_cast<int32_t>(pieces.size() - 1)});
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxGrammarBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ember::grammar::GbnfLimits limits;
  limits.max_rules = 512;
  limits.max_repeat = 64;
  limits.max_elements = 1 << 14;
  // Groups nest as deep as the server allows (max_nesting's default). The per-state work budget is
  // smaller than the server's so that a grammar cut off by it costs milliseconds per run under the
  // sanitizers, not seconds; the paths it exercises are the same.
  limits.max_state_work = 1 << 12;
  auto g = ember::grammar::ParseGbnf(text, "root", limits);
  if (!g.ok()) {
    EMBER_CHECK(g.status().code() == ember::StatusCode::kInvalidArgument);
    return 0;
  }
  const ember::grammar::Grammar& gr = **g;
  for (std::string_view s : {std::string_view(""), std::string_view("a"), std::string_view("{\"a\": 1}"),
                             std::string_view("\xC3\xA9"), std::string_view("\xE2\x82"), text.substr(0, 64)}) {
    const bool full = ember::grammar::Matches(gr, s);
    const bool prefix = ember::grammar::IsPrefix(gr, s);
    EMBER_CHECK(!full || prefix);
  }
  ember::grammar::GrammarMatcher m(*g, TinyVocab());
  std::vector<float> logits(static_cast<size_t>(TinyVocab()->size()), 0.0f);
  for (int step = 0; step < 16; ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    m.Mask(logits);
    std::vector<int32_t> allowed;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!std::isinf(logits[i])) allowed.push_back(static_cast<int32_t>(i));
    }
    if (allowed.empty()) break;
    const int32_t pick = allowed[(static_cast<size_t>(step) * 7) % allowed.size()];
    EMBER_CHECK(m.Accept(pick).ok());
    auto clone = m.Clone();
    EMBER_CHECK(clone->Complete() == m.Complete());
    if (m.OnlyEndCanFollow()) break;
  }
  return 0;
}
