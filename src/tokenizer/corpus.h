// Deterministic text generators for tokenizer testing and benchmarking (no external data): the parity
// corpus the test suite compares against llama.cpp, and a large mixed text for throughput measurements.
// Same seed -> same bytes on every machine (own PRNG, no <random> distributions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

// >= 2,000 strings covering English prose, source code, CJK, Arabic/Hebrew and other scripts, emoji with
// ZWJ sequences and skin tones, combining marks, digit runs of every length 1-20, runs of spaces, tabs and
// newlines, contractions in all letter cases, special-token lookalikes (whole and partial), very long
// words, and (when `include_invalid_utf8`) strings with invalid UTF-8 bytes.
std::vector<std::string> GenerateTokenizerCorpus(uint64_t seed, bool include_invalid_utf8);

// About `bytes` bytes of mixed text (mostly prose, plus code, numbers, CJK and other scripts, emoji),
// valid UTF-8, cut at a character boundary.
std::string GenerateMixedText(size_t bytes, uint64_t seed);

}  // namespace ember
