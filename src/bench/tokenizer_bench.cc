#include "bench/tokenizer_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "tokenizer/corpus.h"
#include "tokenizer/tokenizer.h"
#include "util/stopwatch.h"

namespace ember::bench {

StatusOr<nlohmann::json> RunTokenizerBench(const TokenizerBenchConfig& a) {
  using nlohmann::json;
  EMBER_ASSIGN_OR_RETURN(auto tok, LoadTokenizerFromGguf(a.model));
  const std::string text = GenerateMixedText(static_cast<size_t>(a.mb * 1024 * 1024), a.seed);
  double best = 1e30;
  size_t n_tokens = 0;
  const int runs = std::max(1, a.runs);
  if (a.progress != nullptr) a.progress->SetTotal(static_cast<uint64_t>(runs) + (a.no_peer ? 0 : 1));
  for (int r = 0; r < runs; ++r) {
    const Stopwatch t0;
    const std::vector<int32_t> ids = tok->Encode(text, /*add_special=*/false, a.special);
    best = std::min(best, t0.ElapsedSeconds());
    n_tokens = ids.size();
    AdvanceBar(a.progress, "ember run " + std::to_string(r + 1) + "/" + std::to_string(runs));
  }
  const double ember_mbs = text.size() / 1e6 / best;
  json result = {{"model", a.model}, {"bytes", text.size()}, {"runs", a.runs},
                 {"ember", {{"best_ms", best * 1e3}, {"mb_per_s", ember_mbs}, {"n_tokens", n_tokens}}}};
  if (a.no_peer) return result;
  char tmpl[] = "/tmp/ember_bench_tok_XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return IoError("bench-tokenizer: cannot create a temporary file");
  close(fd);
  std::ofstream(tmpl, std::ios::binary) << text;
  LabelBar(a.progress, "llama.cpp peer");
  auto peer = RunPeerTokenizeBench(a.peer, a.model, tmpl, a.runs, a.special);
  unlink(tmpl);
  AdvanceBar(a.progress, "llama.cpp peer");
  if (!peer.ok()) return peer.status();
  if (!(*peer)["mb_per_s"].is_number() || !(*peer)["n_tokens"].is_number_unsigned())
    return Internal("llama.cpp peer: tokenize-bench printed no mb_per_s / n_tokens: " + peer->dump().substr(0, 300));
  result["llama_cpp"] = *peer;
  result["ratio"] = ember_mbs / (*peer)["mb_per_s"].get<double>();
  result["same_token_count"] = (*peer)["n_tokens"].get<size_t>() == n_tokens;
  return result;
}

}  // namespace ember::bench
