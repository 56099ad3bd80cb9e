#include "bench/load_legs.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "bench/stats.h"
#include "util/env.h"

namespace ember::bench {
namespace {

using nlohmann::json;

int64_t NowUs() { return Env::Default()->MonotonicMicros(); }
double MsSince(int64_t t0_us) { return static_cast<double>(NowUs() - t0_us) / 1e3; }

// Computed (not cached) prompt tokens of one request, -1 when the server did not say.
int64_t Recomputed(const CompletionTiming& t) {
  if (t.timings_prompt_n >= 0) return t.timings_prompt_n;
  if (t.cached_reported) return t.prompt_tokens - t.cached_tokens;
  return -1;
}

const char* RecomputedSource(const CompletionTiming& t) {
  if (t.timings_prompt_n >= 0) return "timings.prompt_n";
  if (t.cached_reported) return "usage.prompt_tokens_details.cached_tokens";
  return "unknown";
}

// Runs fn(i) for i in [0, n) on n threads; the first error wins (every thread still finishes).
template <typename Fn>
Status RunConcurrently(int n, Fn fn) {
  std::vector<Status> status(static_cast<size_t>(n), Status::Ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back([&status, &fn, i] { status[static_cast<size_t>(i)] = fn(i); });
  for (auto& t : threads) t.join();
  for (const auto& s : status)
    if (!s.ok()) return s;
  return Status::Ok();
}

// The preamble's clauses: a plain-English operations policy, numbered per section, so the text reads
// as one long document rather than a repeated line.
constexpr const char* kTopics[] = {"data handling", "customer contact", "incident response", "change control",
                                   "access review", "vendor management", "record keeping", "quality checks"};
constexpr const char* kClauses[] = {
    "Every request is logged with its time, its requester and the system it touches, and the log is kept for "
    "at least one year in a store that nobody on the team can edit.",
    "Personal details are shared only with people who need them for the task at hand, and never copied into "
    "tickets, chat rooms or documents that a wider audience can read.",
    "When something looks wrong, stop, write down what you saw and when, and tell the person on call before "
    "you try to fix it, so that two people never repair the same fault in opposite directions.",
    "A change to a production system needs a written plan, a second reviewer and a way back; changes without "
    "all three wait for the next review meeting, however small they seem.",
    "Answers to customers are polite, short and specific: say what happened, what we are doing about it and "
    "when they will hear from us next, and keep that promise.",
    "Accounts that have not been used for ninety days are disabled, and every quarter each team lead confirms "
    "in writing that the people with access still need it.",
    "Suppliers who handle our data sign the same confidentiality terms as staff and are reviewed once a year "
    "against the checklist kept by the operations office.",
    "Numbers quoted to anyone outside the company come from the reporting system, never from a spreadsheet "
    "someone made by hand, and carry the date they were taken.",
    "Work that is handed over between shifts comes with a note: what is done, what is open, what is risky, "
    "and who to call if the risky part goes wrong.",
    "If a rule here conflicts with the law or with a safety instruction, the law and the safety instruction "
    "win, and the conflict is reported so this policy can be corrected.",
};

constexpr const char* kRoles[] = {
    "the release coordinator, who plans and announces every change",
    "the support lead, who answers customers and keeps them informed",
    "the security reviewer, who checks access and data handling",
    "the on-call engineer, who responds to incidents as they happen",
    "the finance analyst, who prepares the monthly figures",
    "the vendor manager, who deals with our suppliers",
    "the quality auditor, who samples finished work",
    "the team lead, who assigns work and reviews handovers",
};

constexpr const char* kAsks[] = {
    "Introduce yourself in one sentence and name the rule that matters most for your role.",
    "A colleague asks you to skip one step of the policy to save time. What do you say?",
    "Write the note you would leave for the next shift about your current work.",
    "Summarise in two sentences what you would check first tomorrow morning.",
    "Which part of the policy is hardest to follow in your role, and why?",
    "Draft a short message to a customer who reported a delay.",
};

}  // namespace

json LoadRequestExtra() { return {{"ignore_eos", true}}; }

std::vector<int32_t> ClientPrompt(const std::vector<int32_t>& base, int client, int n) {
  std::vector<int32_t> out;
  if (base.empty() || n <= 0) return out;
  out.push_back(base[0]);
  const size_t body = base.size() - 1;
  for (int k = 1; k < n; ++k) {
    if (body == 0) {
      out.push_back(base[0]);
      continue;
    }
    // Offsets 7 apart: clients start on different ids (distinct prefixes) for any base of 8+ ids.
    out.push_back(base[1 + (static_cast<size_t>(client) * 7 + static_cast<size_t>(k - 1)) % body]);
  }
  return out;
}

std::vector<int32_t> WarmupPrompt(const std::vector<int32_t>& base, int n) {
  std::vector<int32_t> out;
  if (base.empty() || n <= 0) return out;
  out.push_back(base[0]);
  for (int k = 1; k < n; ++k) out.push_back(base[base.size() - 1 - static_cast<size_t>(k - 1) % base.size()]);
  return out;
}

LoadMeasurement SummarizeLoad(int clients, const std::vector<CompletionTiming>& requests, double wall_ms) {
  LoadMeasurement m;
  m.clients = clients;
  m.requests = static_cast<int>(requests.size());
  m.wall_ms = wall_ms;
  std::vector<double> ttft;
  json per = json::array();
  bool known = !requests.empty();
  int64_t recomputed = 0;
  for (const auto& t : requests) {
    ttft.push_back(t.ttft_ms);
    m.prompt_tokens += t.prompt_tokens;
    m.completion_tokens += t.completion_tokens;
    const int64_t r = Recomputed(t);
    if (r < 0) known = false;
    else recomputed += r;
    per.push_back({{"ttft_ms", t.ttft_ms}, {"total_ms", t.total_ms}, {"prompt_tokens", t.prompt_tokens},
                   {"completion_tokens", t.completion_tokens}, {"cached_tokens", t.cached_tokens},
                   {"recomputed", r}, {"recomputed_from", RecomputedSource(t)}, {"finish_reason", t.finish_reason}});
  }
  m.recomputed_tokens = known ? recomputed : -1;
  m.ttft_p50_ms = Percentile(ttft, 50);
  m.ttft_p95_ms = Percentile(ttft, 95);
  m.aggregate_tok_s = wall_ms > 0 ? static_cast<double>(m.completion_tokens) / (wall_ms / 1e3) : 0;
  m.raw = {{"clients", clients},         {"wall_ms", wall_ms},
           {"aggregate_tok_s", m.aggregate_tok_s}, {"ttft_p50_ms", m.ttft_p50_ms},
           {"ttft_p95_ms", m.ttft_p95_ms}, {"prompt_tokens", m.prompt_tokens},
           {"completion_tokens", m.completion_tokens},
           {"recomputed_tokens", known ? json(recomputed) : json(nullptr)}, {"requests", per}};
  return m;
}

StatusOr<LoadMeasurement> RunClientLevel(const LoadTarget& target, const std::vector<std::vector<int32_t>>& prompts,
                                         int gen_tokens) {
  if (prompts.empty()) return InvalidArgument("a concurrency level needs at least one client");
  const int n = static_cast<int>(prompts.size());
  std::vector<CompletionTiming> results(prompts.size());
  const int64_t t0 = NowUs();
  Status st = RunConcurrently(n, [&](int i) -> Status {
    auto t = StreamCompletion(target.port, {prompts[static_cast<size_t>(i)], gen_tokens, "", target.banned, target.timeout_s},
                              {nullptr, LoadRequestExtra()});
    if (!t.ok()) return Internal("client " + std::to_string(i + 1) + "/" + std::to_string(n) + ": " + t.status().message());
    results[static_cast<size_t>(i)] = std::move(t).value();
    return Status::Ok();
  });
  const double wall = MsSince(t0);
  EMBER_RETURN_IF_ERROR(st);
  return SummarizeLoad(n, results, wall);
}

AgentScript MakeAgentScript(int agents, int turns, int preamble_tokens) {
  AgentScript s;
  // This text runs 4.6 characters per token in the llama 3 vocabulary (6,167 characters were 1,337 tokens
  // for the demo model); other vocabularies differ a little, and the rows record the real prompt tokens.
  const size_t target_chars = static_cast<size_t>(std::max(0, preamble_tokens)) * 46 / 10;
  s.preamble = "Operations policy. Read it fully; every answer you give must follow it.\n";
  const size_t n_topics = std::size(kTopics), n_clauses = std::size(kClauses);
  for (size_t i = 0; s.preamble.size() < target_chars; ++i) {
    const size_t section = i / n_clauses, clause = i % n_clauses;
    if (clause == 0)
      s.preamble += "\nSection " + std::to_string(section + 1) + ": " + kTopics[section % n_topics] + ".\n";
    s.preamble += std::to_string(section + 1) + "." + std::to_string(clause + 1) + " " +
                  kClauses[(clause + section * 3) % n_clauses] + "\n";
  }
  const size_t n_roles = std::size(kRoles), n_asks = std::size(kAsks);
  for (int a = 0; a < agents; ++a) {
    std::string role = std::string("You are ") + kRoles[static_cast<size_t>(a) % n_roles];
    if (static_cast<size_t>(a) >= n_roles) role += " (desk " + std::to_string(a / static_cast<int>(n_roles) + 1) + ")";
    s.roles.push_back(role + ". Keep every answer under three sentences.");
    std::vector<std::string> asks;
    for (int t = 0; t < turns; ++t) asks.push_back(kAsks[(static_cast<size_t>(a) + static_cast<size_t>(t)) % n_asks]);
    s.asks.push_back(std::move(asks));
  }
  return s;
}

StatusOr<LoadMeasurement> RunAgents(const LoadTarget& target, const AgentScript& script, int gen_tokens) {
  const int k = static_cast<int>(script.roles.size());
  if (k == 0 || script.asks.size() != script.roles.size()) return InvalidArgument("an agents workload needs agents");
  std::vector<std::vector<CompletionTiming>> per_agent(static_cast<size_t>(k));
  const int64_t t0 = NowUs();
  Status st = RunConcurrently(k, [&](int a) -> Status {
    const auto& asks = script.asks[static_cast<size_t>(a)];
    // The shared preamble is the whole system message; the role opens the agent's own history.
    json messages = json::array({{{"role", "system"}, {"content", script.preamble}}});
    for (size_t t = 0; t < asks.size(); ++t) {
      const std::string ask = t == 0 ? script.roles[static_cast<size_t>(a)] + "\n\n" + asks[t] : asks[t];
      messages.push_back({{"role", "user"}, {"content", ask}});
      // Rendered and tokenized by the server itself, then sent as ids to /v1/completions: the server's own
      // template and tokenizer, without its chat endpoint's output parsing (llama-server's refuses the
      // demo model's random text with a 500, "does not match the expected peg-native format").
      auto ids = RenderChatIds(target.port, messages);
      if (!ids.ok())
        return Internal("agent " + std::to_string(a + 1) + " turn " + std::to_string(t + 1) + ": " + ids.status().message());
      auto r = StreamCompletion(target.port, {*ids, gen_tokens, "", target.banned, target.timeout_s},
                                {nullptr, LoadRequestExtra()});
      if (!r.ok())
        return Internal("agent " + std::to_string(a + 1) + " turn " + std::to_string(t + 1) + ": " + r.status().message());
      messages.push_back({{"role", "assistant"}, {"content", r->text}});
      per_agent[static_cast<size_t>(a)].push_back(std::move(r).value());
    }
    return Status::Ok();
  });
  const double wall = MsSince(t0);
  EMBER_RETURN_IF_ERROR(st);
  std::vector<CompletionTiming> all;
  for (auto& v : per_agent) all.insert(all.end(), v.begin(), v.end());
  LoadMeasurement m = SummarizeLoad(k, all, wall);
  m.raw["turns"] = script.asks.empty() ? 0 : script.asks[0].size();
  m.raw["preamble_chars"] = script.preamble.size();
  return m;
}

StatusOr<RunMeasurement> RunLoadLeg(Leg leg, const BenchRequest& req, LoadTarget target, const LoadLegHooks& hooks) {
  if (!IsLoadLeg(leg)) return InvalidArgument(std::string("not a load leg: ") + LegName(leg));
  if (req.tokens.empty()) return InvalidArgument("load leg without prompt ids");
  const std::vector<int> levels = leg == Leg::kAgents ? std::vector<int>{req.agents} : req.clients;
  if (levels.empty()) return InvalidArgument("load leg without client counts");
  const AgentScript script = leg == Leg::kAgents ? MakeAgentScript(req.agents, req.agent_turns, req.preamble_tokens)
                                                 : AgentScript{};
  RunMeasurement m;
  json ready = json::array();
  const std::vector<int32_t> head = WarmupPrompt(req.tokens, 16);
  for (int lanes : levels) {
    if (lanes < 1) return InvalidArgument("client counts must be >= 1");
    EMBER_ASSIGN_OR_RETURN(auto server, hooks.start(lanes));
    target.port = server->port();
    ready.push_back(server->ready_ms());
    EMBER_RETURN_IF_ERROR(
        StreamCompletion(target.port, {head, 8, "h2h-warmup", target.banned, target.timeout_s}, {nullptr, LoadRequestExtra()})
            .status()
            .WithContext("warm-up request"));
    StatusOr<LoadMeasurement> level = InvalidArgument("unreachable");
    if (leg == Leg::kAgents) {
      level = RunAgents(target, script, req.agent_gen_tokens);
    } else {
      std::vector<std::vector<int32_t>> prompts;
      for (int c = 0; c < lanes; ++c) prompts.push_back(ClientPrompt(req.tokens, c, req.client_prompt_tokens));
      level = RunClientLevel(target, prompts, req.client_gen_tokens);
    }
    if (!level.ok()) return level.status().WithContext(std::to_string(lanes) + (leg == Leg::kAgents ? " agents" : " clients"));
    m.peak_rss_bytes = std::max(m.peak_rss_bytes, server->PeakRssBytes());
    level->raw["ready_ms"] = server->ready_ms();
    m.levels.push_back(std::move(level).value());
    EMBER_RETURN_IF_ERROR(hooks.stop(*server));
  }
  json levels_raw = json::array();
  for (const auto& l : m.levels) levels_raw.push_back(l.raw);
  m.raw = {{"levels", levels_raw}, {"ready_ms", ready}, {"arena", "served"}};
  return m;
}

}  // namespace ember::bench
