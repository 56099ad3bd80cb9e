#include "bench/served_bench.h"

#include <httplib.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "bench/prompt_tokens.h"
#include "bench/sse_parser.h"
#include "bench/stats.h"
#include "util/env.h"
#include "util/subprocess.h"

namespace ember::bench {
namespace {

using nlohmann::json;

// Monotonic time in microseconds, from the process Env (docs/conventions.md "Time").
int64_t NowUs() { return Env::Default()->MonotonicMicros(); }
double MsSince(int64_t t0_us) { return static_cast<double>(NowUs() - t0_us) / 1e3; }

std::string ReadTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

std::string TempPath(const std::string& stem, const std::string& ext) {
  static int counter = 0;
  return (std::filesystem::temp_directory_path() /
          (stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ext))
      .string();
}

// POST a JSON body to a loopback server; the parsed JSON reply (HTTP 200 only).
StatusOr<json> PostJson(int port, const std::string& path, const json& body, double timeout_s = 120) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(static_cast<time_t>(timeout_s), 0);
  auto res = cli.Post(path, body.dump(), "application/json");
  if (!res) return IoError("POST " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200) return Internal("POST " + path + ": HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300));
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return Internal("POST " + path + ": reply is not JSON");
  return j;
}

double MedianOf(const std::vector<double>& v) { return v.empty() ? std::nan("") : Median(v); }

// Extra `serve` flags that keep a benchmark server off the user's SSD cache directory.
std::vector<std::string> RamOnly(const ServeFlags& f, std::vector<std::string> extra = {}) {
  if (f.ssd_cache) extra.push_back("--no-ssd-cache");
  return extra;
}

}  // namespace

ServeFlags ProbeServeFlags(const std::string& ember_binary) {
  ServeFlags f;
  auto help = RunProcess({ember_binary, "serve", "--help"}, 30);
  if (!help.ok()) return f;
  const std::string& h = help->out;
  f.threads = h.find("--threads") != std::string::npos;
  f.ssd_cache = h.find("--ssd-cache") != std::string::npos;
  f.parallel = h.find("--parallel") != std::string::npos;
  return f;
}

// ---- ServerProcess ----------------------------------------------------------------------------------

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const ServeSpawn& s) {
  std::vector<std::string> argv = {s.ember_binary, "serve", s.model, "--host", "127.0.0.1", "--port", "0"};
  if (s.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(s.threads)});
  argv.insert(argv.end(), s.extra.begin(), s.extra.end());
  return Launch(std::move(argv), 0, s.ready_timeout_s, "ember serve");
}

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::StartCommand(const std::vector<std::string>& argv, int port,
                                                                     double ready_timeout_s, const std::string& name) {
  if (argv.empty() || port <= 0) return InvalidArgument("StartCommand needs an argv and a port");
  return Launch(argv, port, ready_timeout_s, name);
}

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Launch(std::vector<std::string> argv, int port,
                                                               double ready_timeout_s, std::string name) {
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->name_ = std::move(name);
  p->port_ = port;
  p->log_path_ = TempPath("ember-serve", ".log");
  ProcessOptions po;
  po.argv = std::move(argv);
  po.stdout_mode = OutputMode::kFile;  // one log, both streams: the port line is read back from it
  po.stdout_path = p->log_path_;
  po.stderr_mode = OutputMode::kSameAsStdout;
  const int64_t t0 = NowUs();
  EMBER_ASSIGN_OR_RETURN(p->process_, Process::Start(po));
  // The port line ("... on http://127.0.0.1:PORT") unless the port was given, then the first 200 from /health.
  static const std::regex kPort(R"(on http://[^\s:]+:(\d+))");
  const int64_t deadline = t0 + static_cast<int64_t>(ready_timeout_s * 1e6);
  auto exited = [&p]() { return p->process_->HasExited(); };
  // How a child that is gone ended ("exited 1", "died of signal 4"): a crash reads differently from a refusal.
  auto how = [&p]() {
    const ProcessResult r = p->process_->Wait(1);
    return r.signal != 0 ? "died of signal " + std::to_string(r.signal) : "exited " + std::to_string(r.exit_code);
  };
  const std::string& who = p->name_;
  while (p->port_ == 0) {
    std::smatch m;
    const std::string log = ReadTail(p->log_path_, 1 << 16);
    if (std::regex_search(log, m, kPort)) {
      p->port_ = std::stoi(m[1].str());
      break;
    }
    if (exited()) return Internal(who + " " + how() + " before listening: " + log.substr(0, 800));
    if (NowUs() > deadline) return ResourceExhausted(who + " did not listen within the time limit: " + log.substr(0, 800));
    Env::Default()->SleepForMicros(2000);
  }
  httplib::Client cli("127.0.0.1", p->port_);
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(5, 0);
  for (;;) {
    auto res = cli.Get("/health");
    if (res && res->status == 200) break;
    if (exited()) return Internal(who + " " + how() + " before /health answered: " + p->Log());
    if (NowUs() > deadline) return ResourceExhausted(who + ": /health did not answer 200 in time: " + p->Log());
    Env::Default()->SleepForMicros(10'000);
  }
  p->ready_ms_ = MsSince(t0);
  return p;
}

ServerProcess::~ServerProcess() {
  process_.reset();  // SIGKILLs the process group and reaps it if it still runs
  std::error_code ec;
  if (!log_path_.empty()) std::filesystem::remove(log_path_, ec);
}

pid_t ServerProcess::pid() const { return process_->pid(); }

int64_t ServerProcess::PeakRssBytes() const {
  std::ifstream in("/proc/" + std::to_string(pid()) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  return 0;
}

std::optional<int> ServerProcess::EngineThreads() const {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(10, 0);
  auto res = cli.Get("/stats");
  if (!res || res->status != 200) return std::nullopt;
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  const json* v = &j;
  for (const char* k : {"engine", "values", "threads"}) {
    if (!v->is_object() || !v->contains(k)) return std::nullopt;
    v = &(*v)[k];
  }
  if (!v->is_number()) return std::nullopt;
  return static_cast<int>(v->get<double>());
}

StatusOr<int> ServerProcess::Stop(double grace_s) {
  if (process_->HasExited()) return Internal(name_ + " had already exited");
  process_->Signal(SIGTERM);
  const ProcessResult r = process_->Wait(grace_s);  // SIGKILL to the group past grace_s
  if (r.timed_out) return ResourceExhausted(name_ + " did not drain within " + std::to_string(grace_s) + " s; killed");
  if (r.signal != 0) return Internal(name_ + " died of signal " + std::to_string(r.signal));
  return r.exit_code;
}

std::string ServerProcess::Log() const { return ReadTail(log_path_, 2000); }

// ---- one streaming completion ------------------------------------------------------------------------

std::optional<double> CompletionTiming::DecodeTokS() const {
  if (completion_tokens < 2 || !(last_chunk_ms > ttft_ms)) return std::nullopt;
  return (completion_tokens - 1) / ((last_chunk_ms - ttft_ms) / 1000.0);
}

void FoldCompletionEvent(const std::string& data, double t_ms, CompletionTiming& t, std::string* error) {
  if (data == "[DONE]") return;
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  if (j.contains("error")) {
    if (error->empty()) *error = j["error"].dump().substr(0, 300);
    return;
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    t.prompt_tokens = u.value("prompt_tokens", 0);
    t.completion_tokens = u.value("completion_tokens", 0);
    if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
      const json& d = u["prompt_tokens_details"];
      t.cached_tokens = d.value("cached_tokens", 0);
      t.cached_reported = d.contains("cached_tokens") && d["cached_tokens"].is_number_integer();
      if (d.contains("cache_tier") && d["cache_tier"].is_string()) t.cache_tier = d["cache_tier"].get<std::string>();
    }
  }
  if (j.contains("timings") && j["timings"].is_object()) {
    const json& tm = j["timings"];
    if (tm.contains("prompt_n") && tm["prompt_n"].is_number_integer()) t.timings_prompt_n = tm["prompt_n"].get<int>();
    if (tm.contains("cache_n") && tm["cache_n"].is_number_integer()) t.timings_cache_n = tm["cache_n"].get<int>();
  }
  if (!j.contains("choices") || !j["choices"].is_array()) return;
  for (const json& c : j["choices"]) {
    if (!c.is_object()) continue;
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) t.finish_reason = c["finish_reason"].get<std::string>();
    const json* piece = nullptr;
    if (c.contains("text") && c["text"].is_string()) piece = &c["text"];  // completions
    else if (c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content") &&
             c["delta"]["content"].is_string())
      piece = &c["delta"]["content"];  // chat
    if (piece == nullptr || piece->get<std::string>().empty()) continue;
    if (t.text.empty() && t.ttft_ms == 0) t.ttft_ms = t_ms;
    t.text += piece->get<std::string>();
    t.last_chunk_ms = t_ms;
  }
}

StatusOr<CompletionTiming> StreamCompletion(int port, const CompletionCall& call, const CompletionBody& more) {
  json bias = json::object();
  for (int32_t id : call.banned) bias[std::to_string(id)] = -100;
  const bool chat = !more.messages.is_null();
  const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
  json body = {{"model", "bench"},      {"max_tokens", call.max_tokens},
               {"temperature", 0},      {"stream", true},         {"stream_options", {{"include_usage", true}}}};
  if (chat) body["messages"] = more.messages;
  else body["prompt"] = call.prompt;
  if (!call.cache_salt.empty()) body["cache_salt"] = call.cache_salt;
  if (!bias.empty()) body["logit_bias"] = bias;
  if (more.extra.is_object()) body.update(more.extra);
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(static_cast<time_t>(std::max(1.0, call.timeout_s)), 0);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  SseParser parser;
  CompletionTiming t;
  std::string error, head;
  const int64_t t0 = NowUs();
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    const double ms = MsSince(t0);
    if (head.size() < 400) head.append(data, std::min<size_t>(len, 400));
    for (const auto& ev : parser.Feed(std::string_view(data, len))) FoldCompletionEvent(ev, ms, t, &error);
    return ms < call.timeout_s * 1000;
  };
  auto res = cli.send(req);
  t.total_ms = MsSince(t0);
  if (!res) return IoError("POST " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200) return Internal("POST " + path + ": HTTP " + std::to_string(res->status) + ": " + head.substr(0, 300));
  if (!error.empty()) return Internal("POST " + path + ": " + error);
  if (t.ttft_ms == 0) return Internal("POST " + path + ": the stream carried no content");
  if (t.completion_tokens == 0) return Internal("POST " + path + ": the stream carried no usage");
  return t;
}

// ---- model facts and the conversation ----------------------------------------------------------------

StatusOr<std::vector<int32_t>> EogTokenIds(const std::string& ember_binary, const std::string& model) {
  EMBER_ASSIGN_OR_RETURN(ProcessResult r, RunProcess({ember_binary, "inspect", model, "--json"}, 120));
  if (r.exit_code != 0) return Internal("ember inspect failed: " + r.err.substr(0, 300));
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("metadata") || !j["metadata"].is_object())
    return Internal("ember inspect --json printed no metadata");
  std::vector<int32_t> ids;
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    const json& md = j["metadata"];
    if (md.contains(k) && md[k].is_number_integer()) {
      const int32_t id = md[k].get<int32_t>();
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
  }
  return ids;
}

std::vector<std::pair<std::string, std::string>> ConversationScript(int turns) {
  static const std::pair<const char*, const char*> kTurns[] = {
      {"I am planning a walking trip along a coastline next spring. Where should I start?",
       "Start with the distance you enjoy per day, then pick a stretch with villages at that spacing so every "
       "night has a bed and every morning a bakery."},
      {"About fifteen kilometres a day feels right. What should I pack?",
       "Light layers, a rain shell, two pairs of socks that dry overnight, blister plasters, a small first aid "
       "kit, a paper map of the route and a refillable bottle."},
      {"Should I book the rooms in advance or find them as I go?",
       "In spring most guesthouses have space, but book the weekends and any village with only one place to "
       "stay; leave the rest open so the weather can change your plans."},
      {"How do I handle a day of heavy rain?",
       "Treat it as a rest day if you can, or take the inland path, which is sheltered and less slippery than "
       "the cliff top. Keep your phone and map in a sealed bag."},
      {"What about tides? Some beaches on the route look like shortcuts.",
       "Check the tide tables every evening. Only cross a beach on a falling tide with at least two hours of "
       "margin, and never round a headland you cannot see the far side of."},
      {"Is it worth carrying a stove for hot drinks?",
       "For fifteen kilometres between villages, no: cafes and a flask filled at breakfast cover it. A stove "
       "earns its weight only on the remote stretches."},
      {"How should I train in the weeks before the trip?",
       "Walk three times a week, once with the loaded pack, and add one long day every weekend that climbs as "
       "much as the worst day of the route."},
      {"What is the best way to look after my feet?",
       "Boots worn in for at least a month, socks changed at lunch, and any hot spot taped the moment you feel "
       "it rather than at the end of the day."},
      {"Can I bring my dog along?",
       "Many coast paths allow dogs on a lead, but check the guesthouses, carry water for two, and plan around "
       "the stretches that cross grazing land during lambing season."},
      {"Finally, how do I get home from the end of the walk?",
       "Look for the nearest town with a railway station and book the train for the afternoon of your last "
       "day, leaving room for a late finish and a proper meal."},
  };
  std::vector<std::pair<std::string, std::string>> out;
  const int n = static_cast<int>(std::size(kTurns));
  for (int i = 0; i < turns; ++i) {
    const auto& t = kTurns[i % n];
    std::string user = t.first;
    if (i >= n) user += " (asked again, round " + std::to_string(i / n + 1) + ")";
    out.emplace_back(std::move(user), t.second);
  }
  return out;
}

StatusOr<std::vector<int32_t>> RenderChatIds(int port, const json& messages) {
  EMBER_ASSIGN_OR_RETURN(json tmpl, PostJson(port, "/apply-template", {{"messages", messages}}));
  if (!tmpl.contains("prompt") || !tmpl["prompt"].is_string()) return Internal("/apply-template returned no prompt");
  // The server tokenizes a rendered chat this way: the template holds BOS and the special tokens.
  EMBER_ASSIGN_OR_RETURN(json tok, PostJson(port, "/tokenize", {{"content", tmpl["prompt"]}, {"add_special", false},
                                                               {"parse_special", true}}));
  if (!tok.contains("tokens") || !tok["tokens"].is_array() || tok["tokens"].empty())
    return Internal("/tokenize returned no tokens");
  for (const json& t : tok["tokens"])
    if (!t.is_number_integer()) return Internal("/tokenize returned a non-integer token");
  return tok["tokens"].get<std::vector<int32_t>>();
}

StatusOr<std::vector<std::vector<int32_t>>> ConversationTurnIds(int port, int turns) {
  if (turns < 1) return InvalidArgument("a conversation needs at least one turn");
  const auto script = ConversationScript(turns);
  std::vector<std::vector<int32_t>> out;
  json messages = json::array({{{"role", "system"}, {"content", "You are a patient travel adviser. Answer in two sentences."}}});
  for (int k = 0; k < turns; ++k) {
    messages.push_back({{"role", "user"}, {"content", script[k].first}});
    EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> ids, RenderChatIds(port, messages));
    out.push_back(std::move(ids));
    messages.push_back({{"role", "assistant"}, {"content", script[k].second}});
  }
  return out;
}

StatusOr<std::vector<std::vector<int32_t>>> BuildConversationIds(const std::string& ember_binary,
                                                                 const std::string& model, int turns) {
  EMBER_ASSIGN_OR_RETURN(auto server, ServerProcess::Start({ember_binary, model, 0,
                                                           RamOnly(ProbeServeFlags(ember_binary), {"--prompt-cache-bytes", "0"}), 300}));
  auto ids = ConversationTurnIds(server->port(), turns);
  (void)server->Stop(30);
  return ids;
}

StatusOr<std::vector<TurnMeasurement>> RunConversation(int port, const std::vector<std::vector<int32_t>>& turns,
                                                       int gen_tokens, const std::string& salt,
                                                       const std::vector<int32_t>& banned, double timeout_s) {
  std::vector<TurnMeasurement> out;
  for (size_t k = 0; k < turns.size(); ++k) {
    auto t = StreamCompletion(port, {turns[k], gen_tokens, salt, banned, timeout_s});
    if (!t.ok()) return Internal("turn " + std::to_string(k + 1) + ": " + t.status().message());
    out.push_back({static_cast<int>(k + 1), t->ttft_ms, t->prompt_tokens, t->cached_tokens,
                   t->cache_tier.empty() ? "none" : t->cache_tier});
  }
  return out;
}

// ---- ember bench --served ------------------------------------------------------------------------------

namespace {

struct ServedRound {
  double ready_ms = 0, ttft_ms = 0, warm_last_ms = 0, cold_last_ms = 0;
  std::optional<double> decode;
  int warm_last_cached = 0;
  int64_t rss = 0;
};

StatusOr<ServedRound> OneServedRound(const ServedBenchConfig& cfg, const ServeFlags& flags, int threads,
                                     const std::vector<int32_t>& prompt, const std::vector<std::vector<int32_t>>& turns,
                                     const std::vector<int32_t>& banned, int round) {
  EMBER_ASSIGN_OR_RETURN(auto server, ServerProcess::Start({cfg.ember_binary, cfg.model, threads, RamOnly(flags), cfg.timeout_s}));
  ServedRound r;
  r.ready_ms = server->ready_ms();
  const std::string tag = std::to_string(round);
  // In-process warm-up, as `ember bench` does before its timed runs (first touch of the weights).
  std::vector<int32_t> head(prompt.begin(), prompt.begin() + std::min<size_t>(prompt.size(), 16));
  EMBER_RETURN_IF_ERROR(StreamCompletion(server->port(), {head, 8, "warmup-" + tag, banned, cfg.timeout_s}).status());
  EMBER_ASSIGN_OR_RETURN(CompletionTiming t, StreamCompletion(server->port(), {prompt, cfg.tg + 1, "served-" + tag, banned, cfg.timeout_s}));
  r.ttft_ms = t.ttft_ms;
  r.decode = t.DecodeTokS();
  EMBER_ASSIGN_OR_RETURN(auto conv, RunConversation(server->port(), turns, cfg.turn_gen, "conversation-" + tag, banned, cfg.timeout_s));
  r.warm_last_ms = conv.back().ttft_ms;
  r.warm_last_cached = static_cast<int>(conv.back().cached_tokens);
  EMBER_ASSIGN_OR_RETURN(CompletionTiming cold, StreamCompletion(server->port(), {turns.back(), cfg.turn_gen, "cold-" + tag, banned, cfg.timeout_s}));
  r.cold_last_ms = cold.ttft_ms;
  r.rss = server->PeakRssBytes();
  auto rc = server->Stop(60);
  if (!rc.ok()) return rc.status();
  if (*rc != 0) return Internal("ember serve exited " + std::to_string(*rc) + ": " + server->Log());
  return r;
}

StatusOr<double> OneDirectRound(const ServedBenchConfig& cfg, int threads, const std::string& tokens_file,
                                size_t n_prompt) {
  std::vector<std::string> argv = {cfg.ember_binary, "bench",   cfg.model, "--json",  "--pp", std::to_string(n_prompt),
                                   "--tg",           std::to_string(cfg.tg), "--threads", std::to_string(threads),
                                   "--reps",         "1"};
  if (!tokens_file.empty()) argv.insert(argv.end(), {"--tokens-file", tokens_file});
  EMBER_ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, cfg.timeout_s));
  if (r.timed_out) return ResourceExhausted("ember bench timed out");
  auto m = ParseEmberBenchJson(r.out);
  if (r.exit_code != 0 || !m.ok())
    return Internal("ember bench exited " + std::to_string(r.exit_code) + ": " + r.err.substr(0, 400));
  if (!m->decode_tok_s) return Internal("ember bench printed no decode_tok_s");
  return *m->decode_tok_s;
}

}  // namespace

StatusOr<ServedBenchResult> RunServedBench(const ServedBenchConfig& cfg) {
  if (cfg.pp < 1 || cfg.tg < 2 || cfg.rounds < 1 || cfg.turns < 2 || cfg.turn_gen < 1)
    return InvalidArgument("--served needs pp >= 1, tg >= 2, reps >= 1, turns >= 2");
  auto log = [&cfg](const std::string& s) {
    if (cfg.log) cfg.log(s);
  };
  if (cfg.progress != nullptr) cfg.progress->SetTotal(static_cast<uint64_t>(cfg.rounds) + 1);
  LabelBar(cfg.progress, "setup");
  const ServeFlags flags = ProbeServeFlags(cfg.ember_binary);
  EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> banned, EogTokenIds(cfg.ember_binary, cfg.model));

  // Setup server: the prompt ids, the conversation's ids and the thread count the engine really uses.
  ServedBenchResult res;
  std::vector<int32_t> prompt;
  std::vector<std::vector<int32_t>> turns;
  int threads = cfg.threads;
  {
    log("setup: starting ember serve to tokenize the prompt and the conversation");
    EMBER_ASSIGN_OR_RETURN(auto server, ServerProcess::Start({cfg.ember_binary, cfg.model, flags.threads ? cfg.threads : 0,
                                                             RamOnly(flags, {"--prompt-cache-bytes", "0"}), cfg.timeout_s}));
    if (!cfg.tokens_file.empty()) {
      std::ifstream in(cfg.tokens_file);
      json j = json::parse(in, nullptr, false);
      if (j.is_discarded() || !j.is_array() || j.empty()) return InvalidArgument(cfg.tokens_file + ": not a JSON array of token ids");
      prompt = j.get<std::vector<int32_t>>();
    } else {
      EMBER_ASSIGN_OR_RETURN(json tok, PostJson(server->port(), "/tokenize", {{"content", BenchPromptText()}, {"add_special", true}}));
      prompt = StretchTokens(tok["tokens"].get<std::vector<int32_t>>(), cfg.pp);
    }
    EMBER_ASSIGN_OR_RETURN(turns, ConversationTurnIds(server->port(), cfg.turns));
    if (auto t = server->EngineThreads()) threads = *t;
    (void)server->Stop(30);
  }
  if (threads <= 0) return FailedPrecondition("cannot tell the server's thread count (no --threads, /stats has none)");
  if (cfg.threads > 0 && threads != cfg.threads)
    log("note: this `ember serve` has no --threads; both legs use the server's " + std::to_string(threads));
  res.threads = threads;
  res.turns = cfg.turns;
  res.last_turn_prompt = static_cast<int>(turns.back().size());

  // The direct runs get the same ids when `ember bench` takes a token file.
  std::string tokens_file;
  {
    auto help = RunProcess({cfg.ember_binary, "bench", "--help"}, 30);
    if (help.ok() && help->out.find("--tokens-file") != std::string::npos) {
      tokens_file = TempPath("ember-served-tokens", ".json");
      std::ofstream(tokens_file) << json(prompt).dump();
      res.same_tokens = true;
    }
  }
  struct Cleanup {
    std::string path;
    ~Cleanup() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } cleanup{tokens_file};

  // A discarded warm-up of both, then interleaved rounds: direct, served, direct, served, ...
  for (int r = 0; r <= cfg.rounds; ++r) {
    const std::string what = r == 0 ? "warm-up" : "round " + std::to_string(r) + "/" + std::to_string(cfg.rounds);
    EMBER_ASSIGN_OR_RETURN(double direct, OneDirectRound(cfg, threads, tokens_file, prompt.size()));
    log(what + ": direct decode " + std::to_string(direct) + " tok/s");
    EMBER_ASSIGN_OR_RETURN(ServedRound s, OneServedRound(cfg, flags, flags.threads ? threads : 0, prompt, turns, banned, r));
    log(what + ": served decode " + (s.decode ? std::to_string(*s.decode) : std::string("n/a")) + " tok/s, ready " +
        std::to_string(s.ready_ms) + " ms, last turn TTFT warm " + std::to_string(s.warm_last_ms) + " ms / cold " +
        std::to_string(s.cold_last_ms) + " ms");
    AdvanceBar(cfg.progress, what);
    if (r == 0) continue;
    res.direct_decode.push_back(direct);
    if (s.decode) res.served_decode.push_back(*s.decode);
    res.served_ttft_ms.push_back(s.ttft_ms);
    res.ready_ms.push_back(s.ready_ms);
    res.warm_last_ttft_ms.push_back(s.warm_last_ms);
    res.cold_last_ttft_ms.push_back(s.cold_last_ms);
    res.warm_last_cached = s.warm_last_cached;
    res.server_peak_rss = std::max(res.server_peak_rss, s.rss);
  }
  res.direct_decode_median = MedianOf(res.direct_decode);
  res.served_decode_median = MedianOf(res.served_decode);
  res.ready_ms_median = MedianOf(res.ready_ms);
  res.served_ttft_median = MedianOf(res.served_ttft_ms);
  res.warm_ttft_median = MedianOf(res.warm_last_ttft_ms);
  res.cold_ttft_median = MedianOf(res.cold_last_ttft_ms);
  res.server_tax = 1 - res.served_decode_median / res.direct_decode_median;
  return res;
}

nlohmann::json ServedBenchResult::ToJson() const {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"threads", threads},
          {"same_tokens", same_tokens},
          {"direct_decode_tok_s", num(direct_decode_median)},
          {"served_decode_tok_s", num(served_decode_median)},
          {"server_tax", num(server_tax)},
          {"served_ttft_ms", num(served_ttft_median)},
          {"ready_ms", num(ready_ms_median)},
          {"last_turn", {{"turns", turns}, {"prompt_tokens", last_turn_prompt}, {"cached_tokens", warm_last_cached},
                         {"warm_ttft_ms", num(warm_ttft_median)}, {"cold_ttft_ms", num(cold_ttft_median)},
                         {"cold_over_warm", num(cold_ttft_median / warm_ttft_median)}}},
          {"server_peak_rss_bytes", server_peak_rss},
          {"runs", {{"direct_decode_tok_s", direct_decode}, {"served_decode_tok_s", served_decode},
                    {"served_ttft_ms", served_ttft_ms}, {"ready_ms", ready_ms},
                    {"warm_last_ttft_ms", warm_last_ttft_ms}, {"cold_last_ttft_ms", cold_last_ttft_ms}}}};
}

std::string ServedBenchResult::ToText() const {
  char buf[1024];
  std::string s;
  std::snprintf(buf, sizeof(buf), "threads %d (both legs)%s, median of %zu interleaved rounds\n", threads,
                same_tokens ? ", same token ids" : ", direct leg on its own prompt (no --tokens-file)",
                direct_decode.size());
  s += buf;
  std::snprintf(buf, sizeof(buf), "decode   direct %.2f tok/s   served %.2f tok/s   served/direct %.3f   server tax %.1f%%\n",
                direct_decode_median, served_decode_median, served_decode_median / direct_decode_median, 100 * server_tax);
  s += buf;
  std::snprintf(buf, sizeof(buf), "start -> ready %.0f ms   served TTFT (cold prompt) %.1f ms   server peak RSS %.1f MB\n",
                ready_ms_median, served_ttft_median, server_peak_rss / 1048576.0);
  s += buf;
  std::snprintf(buf, sizeof(buf),
                "last turn of a %zu-turn conversation (%d prompt tokens, %d cached): TTFT warm %.1f ms, cold %.1f ms "
                "(cold/warm %.2fx)\n",
                static_cast<size_t>(turns), last_turn_prompt,
                warm_last_cached, warm_ttft_median, cold_ttft_median, cold_ttft_median / warm_ttft_median);
  s += buf;
  return s;
}

}  // namespace ember::bench
