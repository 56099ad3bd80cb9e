#include "bench/llama_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bench/load_legs.h"
#include "bench/served_bench.h"
#include "util/subprocess.h"

namespace ember::bench {
namespace {

bool Executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

class LlamaServerRunner : public StackRunner {
 public:
  explicit LlamaServerRunner(LlamaServerOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "llama-server"; }
  bool Supports(Leg leg) const override { return IsLoadLeg(leg) && Executable(o_.binary); }
  std::string SkipReason(Leg leg) const override {
    if (IsLoadLeg(leg)) return "n/a: native llama-server not built (scripts/build-peer)";
    return std::string("skipped: the llama-server stack runs the load legs only (concurrency, agents), not ") +
           LegName(leg);
  }
  StatusOr<RunMeasurement> Run(Leg leg, const BenchRequest& req) override {
    if (!Supports(leg)) return Unimplemented(SkipReason(leg));
    const int ctx = LaneContextTokens(leg, req);
    LoadLegHooks hooks;
    hooks.start = [&](int lanes) -> StatusOr<std::unique_ptr<ServerProcess>> {
      EMBER_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
      return ServerProcess::StartCommand(LlamaServerArgv(o_.binary, req.model_path, port, req.threads, lanes, ctx, o_.extra),
                                         port, o_.timeout_s, "llama-server");
    };
    // Killed, not drained: llama-server keeps nothing worth flushing, and the process group goes with it.
    hooks.stop = [](ServerProcess&) { return Status::Ok(); };
    // The same target as ember's: ember's end-of-generation ids are the model's, read by `ember inspect`
    // there; here `ignore_eos` (LoadRequestExtra) bans them inside llama-server.
    LoadTarget target;
    target.timeout_s = o_.timeout_s;
    EMBER_ASSIGN_OR_RETURN(RunMeasurement m, RunLoadLeg(leg, req, target, hooks));
    if (version_.empty()) version_ = ProbeVersion();
    if (!version_.empty()) m.version = version_;
    m.variant = "native (scripts/build-peer, GGML_NATIVE=ON)";
    return m;
  }

 private:
  // `llama-server --version` prints "version: N (commit)" on stderr.
  std::string ProbeVersion() const {
    auto r = RunProcess({o_.binary, "--version"}, 30);
    if (!r.ok()) return "";
    const std::string all = r->out + r->err;
    const size_t at = all.find("version: ");
    if (at == std::string::npos) return "";
    const size_t end = all.find('\n', at);
    return all.substr(at + 9, end == std::string::npos ? std::string::npos : end - at - 9);
  }
  LlamaServerOptions o_;
  std::string version_;
};

}  // namespace

std::string FindLlamaServer(const std::string& explicit_path, const std::string& source_dir) {
  if (!explicit_path.empty()) return Executable(explicit_path) ? explicit_path : "";
  auto r = RunProcess({source_dir + "/scripts/build-peer", "--print"}, 60);
  if (!r.ok() || r->exit_code != 0) return "";
  std::string dir = r->out;
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' ')) dir.pop_back();
  const std::string bin = dir + "/llama-server";
  return Executable(bin) ? bin : "";
}

StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return ErrnoStatus("socket", "loopback", errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoStatus("bind", "127.0.0.1:0", e);
  }
  ::close(fd);
  return static_cast<int>(ntohs(a.sin_port));
}

int LaneContextTokens(Leg leg, const BenchRequest& req) {
  int need = 0;
  if (leg == Leg::kAgents) {
    // The preamble (sized in tokens), each turn's ask (under 64 tokens) and reply, chat-template overhead.
    need = req.preamble_tokens + req.agent_turns * (req.agent_gen_tokens + 96) + 256;
  } else {
    need = req.client_prompt_tokens + req.client_gen_tokens + 64;
  }
  return (std::max(need, 256) + 255) / 256 * 256;
}

std::vector<std::string> LlamaServerArgv(const std::string& binary, const std::string& model, int port, int threads,
                                         int lanes, int ctx_per_lane, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {binary,
                                   "-m", model,
                                   "--host", "127.0.0.1",
                                   "--port", std::to_string(port),
                                   "-t", std::to_string(threads),
                                   "-tb", std::to_string(threads),
                                   "-np", std::to_string(lanes),
                                   // One KV pool for all slots (-c is the total), as ember's lanes share one budget.
                                   "-kvu", "-c", std::to_string(lanes * ctx_per_lane),
                                   "-fa", "off",
                                   "-ctk", "f16", "-ctv", "f16",
                                   "--jinja", "--no-webui"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::unique_ptr<StackRunner> MakeLlamaServerRunner(const LlamaServerOptions& options) {
  return std::make_unique<LlamaServerRunner>(options);
}

}  // namespace ember::bench
