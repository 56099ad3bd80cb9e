#include "bench/llamacpp_peer.h"

#include "util/subprocess.h"

namespace ember::bench {
namespace {

// Runs `node runner.mjs args...`; the last JSON object of its stdout, unless it failed or reported an
// error object.
StatusOr<nlohmann::json> RunPeer(const PeerCommand& peer, std::vector<std::string> args) {
  std::vector<std::string> argv = {peer.node, peer.runner_mjs};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string what = "llama.cpp peer (" + peer.runner_mjs + " " + args[0] + ")";
  auto r = RunProcess(argv, peer.timeout_s);
  if (!r.ok()) return FailedPrecondition(what + ": " + r.status().message());
  EMBER_RETURN_IF_ERROR(r->ToStatus(what));
  auto j = LastJsonObject(r->out);
  if (!j.ok() || j->contains("error")) {
    return Internal(what + " failed: " + (j.ok() ? j->dump().substr(0, 500) : r->out.substr(0, 300)) +
                    r->err.substr(0, 300));
  }
  return j;
}

}  // namespace

StatusOr<nlohmann::json> LastJsonObject(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    nlohmann::json j = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
    if (start == 0) break;
    end = start - 1;
  }
  return InvalidArgument("no JSON object in output: " + text.substr(0, 200));
}

StatusOr<nlohmann::json> RunPeerDecodeBench(const PeerCommand& peer, const std::string& model,
                                            const std::vector<int32_t>& prompt, int64_t gen, int threads,
                                            const std::string& kv) {
  std::string ids;
  for (int32_t t : prompt) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(t);
  }
  return RunPeer(peer, {"bench", model, "--tokens", ids, "--gen", std::to_string(gen), "--threads",
                        std::to_string(threads), "--kv", kv});
}

StatusOr<nlohmann::json> RunPeerTokenizeBench(const PeerCommand& peer, const std::string& model,
                                              const std::string& text_path, int runs, bool special) {
  std::vector<std::string> args = {"tokenize-bench", model, "--text-file", text_path, "--runs", std::to_string(runs)};
  if (special) args.push_back("--special");
  return RunPeer(peer, std::move(args));
}

}  // namespace ember::bench
