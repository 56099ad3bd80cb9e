#include "bench/h2h.h"

#include <algorithm>
#include <cmath>

#include "bench/eval_format.h"
#include "bench/preflight.h"
#include "bench/stats.h"

namespace ember::bench {
namespace {

Env* ClockOf(const H2hEnv& env) { return env.clock != nullptr ? env.clock : Env::Default(); }

struct StackCell {
  StackRunner* runner;
  std::vector<RunMeasurement> runs;  // measured rounds only (warm-up discarded)
  std::string error;                 // non-empty: the cell failed
};

std::vector<double> Values(const RunMeasurement& m, const std::vector<LegMetric>& metrics) {
  std::vector<double> v;
  for (const auto& lm : metrics) v.push_back(MetricValue(m, lm));
  return v;
}

const TurnMeasurement* FindTurn(const RunMeasurement& m, int turn) {
  for (const auto& t : m.turns)
    if (t.turn == turn) return &t;
  return nullptr;
}

const LoadMeasurement* FindLevel(const RunMeasurement& m, int clients) {
  for (const auto& l : m.levels)
    if (l.clients == clients) return &l;
  return nullptr;
}

std::vector<int> LevelsOf(Leg leg, const H2hConfig& cfg) {
  if (leg == Leg::kConcurrency) return cfg.clients;
  if (leg == Leg::kAgents) return {cfg.agents};
  return {};
}


nlohmann::json SampleJson(const RunMeasurement& m, size_t round, bool extra) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"round", round},          {"extra", extra},
          {"prefill_tok_s", opt(m.prefill_tok_s)}, {"decode_tok_s", opt(m.decode_tok_s)},
          {"ttft_ms", opt(m.ttft_ms)}, {"ready_ms", opt(m.ready_ms)}, {"peak_rss_bytes", m.peak_rss_bytes},
          {"raw", m.raw}};
}

// One turn of one run, as a cache-leg row's sample.
nlohmann::json TurnSampleJson(const RunMeasurement& m, int turn, size_t round, bool extra) {
  const TurnMeasurement* t = FindTurn(m, turn);
  nlohmann::json j = {{"round", round}, {"extra", extra}, {"turn", turn}, {"peak_rss_bytes", m.peak_rss_bytes}};
  if (t) j.update({{"ttft_ms", t->ttft_ms}, {"prompt_tokens", t->prompt_tokens}, {"cached_tokens", t->cached_tokens},
                   {"tier", t->tier}});
  else j["ttft_ms"] = nullptr;
  if (m.raw.is_object() && m.raw.contains("arena")) j["arena"] = m.raw["arena"];
  return j;
}

// One model x one leg: warm-up, interleaved rounds, stability, rows.
class LegRun {
 public:
  LegRun(const H2hConfig& cfg, H2hEnv& env, const std::string& model, const std::string& hash, Leg leg,
         const std::vector<StackRunner*>& stacks, const std::vector<int32_t>& tokens)
      : cfg_(cfg), env_(env), model_(model), hash_(hash), leg_(leg),
        metrics_(MetricsForLeg(leg, cfg.turns, LevelsOf(leg, cfg))) {
    for (StackRunner* s : stacks) cells_.push_back({s, {}, ""});
    req_ = {model, tokens, cfg.gen_tokens, cfg.threads, {}, cfg.turn_gen_tokens};
    req_.clients = cfg.clients;
    req_.client_gen_tokens = cfg.client_gen_tokens;
    req_.client_prompt_tokens = cfg.client_prompt_tokens;
    req_.agents = cfg.agents;
    req_.agent_turns = cfg.agent_turns;
    req_.agent_gen_tokens = cfg.agent_gen_tokens;
    req_.preamble_tokens = cfg.preamble_tokens;
  }

  void SetTurns(std::vector<std::vector<int32_t>> turns) { req_.turns = std::move(turns); }

  void Execute(H2hSummary& out) {
    before_ = env_.preflight ? env_.preflight() : PreflightSnapshot{};
    if (cfg_.warmup)
      for (auto& c : cells_) Measure(c, "warm-up", /*keep=*/false);
    for (int r = 0; r < cfg_.rounds; ++r)
      for (auto& c : cells_)  // interleaved: A B A B ...
        Measure(c, "round " + std::to_string(r + 1) + "/" + std::to_string(cfg_.rounds), true);
    std::vector<std::optional<CellStability>> verdicts;
    for (auto& c : cells_) verdicts.push_back(Stabilize(c));
    after_ = env_.preflight ? env_.preflight() : PreflightSnapshot{};
    for (size_t i = 0; i < cells_.size(); ++i) Store(cells_[i], verdicts[i], out);
  }

 private:
  void Measure(StackCell& c, const std::string& what, bool keep) {
    if (!c.error.empty()) {
      if (env_.progress) env_.progress->Advance(1, Label(c, what + " (skipped)"));
      return;
    }
    auto m = c.runner->Run(leg_, req_);
    if (env_.progress) env_.progress->Advance(1, Label(c, what));
    if (!m.ok()) {
      c.error = what + ": " + m.status().ToString();
      Log("FAILED " + Label(c, c.error));
      return;
    }
    if (keep) c.runs.push_back(std::move(m).value());
  }

  std::optional<CellStability> Stabilize(StackCell& c) {
    if (!c.error.empty() || c.runs.empty()) return std::nullopt;
    std::vector<std::vector<double>> rounds;
    for (const auto& m : c.runs) rounds.push_back(Values(m, metrics_));
    MoreRound more = [&]() -> StatusOr<std::vector<double>> {
      if (env_.progress) env_.progress->AddTotal(1);
      const size_t before = c.runs.size();
      Measure(c, "stability round", true);
      if (c.runs.size() == before) return Internal(c.error);
      return Values(c.runs.back(), metrics_);
    };
    auto v = StabilizeCell(std::move(rounds), MetricSpecs(), more, cfg_.policy);
    if (!v.ok()) {
      c.error = v.status().ToString();
      return std::nullopt;
    }
    return std::move(v).value();
  }

  std::vector<MetricSpec> MetricSpecs() const {
    std::vector<MetricSpec> specs;
    for (const auto& m : metrics_) specs.push_back(m.spec);
    return specs;
  }

  EvalRow BaseRow(const StackCell& c) const {
    EvalRow r;
    r.created_at = UtcIso(ClockOf(env_)->WallMicros());
    r.ember_commit = env_.revision.commit;
    r.ember_dirty = env_.revision.dirty;
    r.stack = c.runner->name();
    r.model_path = model_;
    r.model_hash = hash_;
    r.leg = LegName(leg_);
    r.threads = cfg_.threads;
    r.prompt_tokens = static_cast<int64_t>(req_.tokens.size());
    r.gen_tokens = cfg_.gen_tokens;
    r.cached_tokens = 0;
    r.preflight_ok = before_.ok && after_.ok;
    r.machine_state = nlohmann::json{{"before", before_.state}, {"after", after_.state}}.dump();
    // Model identity is the same for every stack: take it from whichever stack reported it.
    for (const auto& other : cells_)
      for (const auto& m : other.runs) {
        if (!r.arch && m.arch) r.arch = m.arch;
        if (!r.dtype && m.dtype) r.dtype = m.dtype;
        if (!r.params && m.params) r.params = m.params;
      }
    return r;
  }

  void Store(const StackCell& c, const std::optional<CellStability>& v, H2hSummary& out) {
    CellOutcome o{model_, c.runner->name(), LegName(leg_), "", std::nullopt, std::nullopt, {}};
    if (!v) {
      o.status = "failed: " + (c.error.empty() ? std::string("no measured rounds") : c.error);
      ++out.failed;
      out.cells.push_back(std::move(o));
      return;
    }
    if (IsCacheLeg(leg_)) return StoreTurns(c, *v, out);
    if (IsLoadLeg(leg_)) return StoreLevels(c, *v, out);
    EvalRow r = BaseRow(c);
    nlohmann::json samples = nlohmann::json::array();
    double spread = 1;
    for (size_t i = 0; i < c.runs.size(); ++i) {
      const RunMeasurement& m = c.runs[i];
      samples.push_back(SampleJson(m, i + 1, i >= static_cast<size_t>(cfg_.rounds)));
      r.peak_rss_bytes = std::max(r.peak_rss_bytes.value_or(0), m.peak_rss_bytes);
      if (!r.stack_version && m.version) r.stack_version = m.version;
      if (!r.stack_variant && m.variant) r.stack_variant = m.variant;
    }
    for (size_t k = 0; k < metrics_.size(); ++k) {
      const MetricOutcome& mo = v->metrics[k];
      if (std::isfinite(mo.value)) r.*(RowField(metrics_[k])) = mo.value;
      if (std::isfinite(mo.spread)) spread = std::max(spread, mo.spread);
    }
    if (!r.stack_version && r.stack == "ember") r.stack_version = env_.revision.commit.substr(0, 12);
    r.n_runs = static_cast<int64_t>(c.runs.size());
    r.spread = spread;
    r.tag = StabilityTagName(v->tag);
    r.samples = samples.dump();
    auto id = env_.db->Insert(r);
    if (!id.ok()) {
      o.status = "failed: " + id.status().ToString();
      ++out.failed;
    } else {
      o.status = "stored";
      o.row_id = *id;
      o.tag = v->tag;
      ++out.stored;
    }
    Log(o.status + ": " + Label(c, std::string(StabilityTagName(v->tag)) + (*r.preflight_ok ? "" : " (preflight failed)")));
    out.cells.push_back(std::move(o));
  }

  // What every row of a per-turn or per-level cell takes from all its runs.
  struct RunFacts {
    int64_t peak = 0;
    std::optional<std::string> version, variant;
  };
  static RunFacts FactsOf(const StackCell& c) {
    RunFacts f;
    for (const auto& m : c.runs) {
      f.peak = std::max(f.peak, m.peak_rss_bytes);
      if (!f.version && m.version) f.version = m.version;
      if (!f.variant && m.variant) f.variant = m.variant;
    }
    return f;
  }
  // Fills the fields those rows share and inserts one; false (o.status says why) when the DB refused it.
  bool InsertRow(EvalRow& r, const StackCell& c, const RunFacts& f, const nlohmann::json& samples, CellOutcome& o) {
    r.n_runs = static_cast<int64_t>(c.runs.size());
    r.peak_rss_bytes = f.peak;
    r.stack_version = f.version;
    r.stack_variant = f.variant;
    if (!r.stack_version && r.stack == "ember") r.stack_version = env_.revision.commit.substr(0, 12);
    r.samples = samples.dump();
    auto id = env_.db->Insert(r);
    if (!id.ok()) {
      o.status = "failed: " + id.status().ToString();
      return false;
    }
    if (!o.row_id) o.row_id = *id;
    return true;
  }

  // Cache legs: one row per turn, each with its own stability verdict, spread and cached tokens.
  void StoreTurns(const StackCell& c, const CellStability& v, H2hSummary& out) {
    CellOutcome o{model_, c.runner->name(), LegName(leg_), "stored", std::nullopt, v.tag, {}};
    const RunFacts facts = FactsOf(c);
    for (size_t k = 0; k < metrics_.size(); ++k) {
      const int turn = metrics_[k].turn;
      const MetricOutcome& mo = v.metrics[k];
      EvalRow r = BaseRow(c);
      r.turn = turn;
      r.gen_tokens = cfg_.turn_gen_tokens;
      r.prompt_tokens = static_cast<int64_t>(req_.turns[static_cast<size_t>(turn - 1)].size());
      nlohmann::json samples = nlohmann::json::array();
      std::vector<double> cached;
      for (size_t i = 0; i < c.runs.size(); ++i) {
        samples.push_back(TurnSampleJson(c.runs[i], turn, i + 1, i >= static_cast<size_t>(cfg_.rounds)));
        if (const TurnMeasurement* t = FindTurn(c.runs[i], turn)) cached.push_back(static_cast<double>(t->cached_tokens));
      }
      if (!cached.empty()) r.cached_tokens = static_cast<int64_t>(*std::min_element(cached.begin(), cached.end()));
      if (std::isfinite(mo.value)) r.ttft_ms = mo.value;
      r.spread = std::isfinite(mo.spread) ? mo.spread : 1.0;
      r.tag = StabilityTagName(mo.tag);
      if (!InsertRow(r, c, facts, samples, o)) break;
    }
    (o.status == "stored" ? out.stored : out.failed)++;
    Log(o.status + ": " + Label(c, std::string(StabilityTagName(v.tag)) + ", " + std::to_string(metrics_.size()) + " turns"));
    out.cells.push_back(std::move(o));
  }

  // Load legs: one row per level. The judged metrics (see MetricsForLeg) carry the stability verdict;
  // p95, wall time, aggregate rate and token counts are the median over the measured rounds.
  void StoreLevels(const StackCell& c, const CellStability& v, H2hSummary& out) {
    CellOutcome o{model_, c.runner->name(), LegName(leg_), "stored", std::nullopt, v.tag, nlohmann::json::array()};
    const RunFacts facts = FactsOf(c);
    for (int level : LevelsOf(leg_, cfg_)) {
      EvalRow r = BaseRow(c);
      r.clients = level;
      r.prompt_tokens = leg_ == Leg::kAgents ? std::nullopt : std::optional<int64_t>(cfg_.client_prompt_tokens);
      r.gen_tokens = leg_ == Leg::kAgents ? cfg_.agent_gen_tokens : cfg_.client_gen_tokens;
      StabilityTag tag = StabilityTag::kStable;
      double spread = 1;
      for (size_t k = 0; k < metrics_.size(); ++k) {
        if (metrics_[k].clients != level) continue;
        const MetricOutcome& mo = v.metrics[k];
        tag = WorseTag(tag, mo.tag);
        if (std::isfinite(mo.spread)) spread = std::max(spread, mo.spread);
        if (!std::isfinite(mo.value)) continue;
        if (metrics_[k].load_field == &LoadMeasurement::aggregate_tok_s) r.decode_tok_s = mo.value;
        if (metrics_[k].load_field == &LoadMeasurement::ttft_p50_ms) r.ttft_ms = mo.value;
        if (metrics_[k].load_field == &LoadMeasurement::wall_ms) r.wall_ms = mo.value;
      }
      std::vector<double> p95, wall, agg, prompt, recomputed;
      nlohmann::json samples = nlohmann::json::array();
      for (size_t i = 0; i < c.runs.size(); ++i) {
        const LoadMeasurement* l = FindLevel(c.runs[i], level);
        nlohmann::json j = {{"round", i + 1}, {"extra", i >= static_cast<size_t>(cfg_.rounds)}, {"clients", level}};
        if (l) {
          p95.push_back(l->ttft_p95_ms);
          wall.push_back(l->wall_ms);
          agg.push_back(l->aggregate_tok_s);
          prompt.push_back(static_cast<double>(l->prompt_tokens));
          if (l->recomputed_tokens >= 0) recomputed.push_back(static_cast<double>(l->recomputed_tokens));
          j["raw"] = l->raw;
        }
        samples.push_back(std::move(j));
      }
      if (!p95.empty()) r.ttft_p95_ms = Median(p95);
      if (!r.wall_ms && !wall.empty()) r.wall_ms = Median(wall);
      if (!r.decode_tok_s && !agg.empty()) r.decode_tok_s = Median(agg);
      if (leg_ == Leg::kAgents && !prompt.empty()) r.prompt_tokens = static_cast<int64_t>(Median(prompt));
      // cached = prompt - recomputed; unknown (NULL) when the stack never said what it recomputed.
      if (r.prompt_tokens && recomputed.size() == c.runs.size() && !recomputed.empty())
        r.cached_tokens = leg_ == Leg::kAgents ? *r.prompt_tokens - static_cast<int64_t>(Median(recomputed))
                                               : static_cast<int64_t>(level) * *r.prompt_tokens -
                                                     static_cast<int64_t>(Median(recomputed));
      else
        r.cached_tokens = std::nullopt;
      r.spread = spread;
      r.tag = StabilityTagName(tag);
      auto opt = [](const auto& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
      o.figures.push_back({{"clients", level},
                           {"aggregate_tok_s", opt(r.decode_tok_s)},
                           {"ttft_p50_ms", opt(r.ttft_ms)},
                           {"ttft_p95_ms", opt(r.ttft_p95_ms)},
                           {"wall_ms", opt(r.wall_ms)},
                           {"prompt_tokens", opt(r.prompt_tokens)},
                           {"recomputed_tokens", recomputed.empty() ? nlohmann::json(nullptr) : nlohmann::json(Median(recomputed))},
                           {"tag", StabilityTagName(tag)}});
      if (!InsertRow(r, c, facts, samples, o)) break;
    }
    (o.status == "stored" ? out.stored : out.failed)++;
    Log(o.status + ": " + Label(c, std::string(StabilityTagName(v.tag)) + ", " + std::to_string(o.figures.size()) +
                                       (leg_ == Leg::kAgents ? " workload" : " levels")));
    out.cells.push_back(std::move(o));
  }

  static std::optional<double> EvalRow::*RowField(const LegMetric& m) {
    if (m.field == &RunMeasurement::prefill_tok_s) return &EvalRow::prefill_tok_s;
    if (m.field == &RunMeasurement::decode_tok_s) return &EvalRow::decode_tok_s;
    if (m.field == &RunMeasurement::ready_ms) return &EvalRow::ready_ms;
    return &EvalRow::ttft_ms;
  }

  std::string Label(const StackCell& c, const std::string& what) const {
    return BaseName(model_) + " " + c.runner->name() + " " + LegName(leg_) + " " + what;
  }
  void Log(const std::string& s) const {
    if (env_.log) env_.log(s);
  }

  const H2hConfig& cfg_;
  H2hEnv& env_;
  std::string model_, hash_;
  Leg leg_;
  std::vector<LegMetric> metrics_;
  std::vector<StackCell> cells_;
  BenchRequest req_;
  PreflightSnapshot before_, after_;
};

Status CheckSetup(const H2hConfig& cfg, const H2hEnv& env) {
  if (env.stacks.empty()) return InvalidArgument("h2h: no stacks to compare");
  if (!env.db) return InvalidArgument("h2h: no eval DB");
  if (!env.tokenize) return InvalidArgument("h2h: no tokenizer");
  if (cfg.models.empty()) return InvalidArgument("h2h: no models");
  if (cfg.rounds < 1 || cfg.threads < 1 || cfg.prompt_tokens < 1 || cfg.gen_tokens < 2)
    return InvalidArgument("h2h: rounds, threads and prompt tokens must be >= 1 and gen tokens >= 2");
  for (Leg l : cfg.legs) {
    if (IsCacheLeg(l) && (cfg.turns < 1 || cfg.turn_gen_tokens < 1))
      return InvalidArgument("h2h: cache legs need turns and turn tokens >= 1");
    if (l == Leg::kConcurrency) {
      if (cfg.clients.empty()) return InvalidArgument("h2h: the concurrency leg needs client counts (--clients)");
      for (int c : cfg.clients)
        if (c < 1 || c > 64) return InvalidArgument("h2h: --clients must each be 1..64, not " + std::to_string(c));
      if (cfg.client_gen_tokens < 2 || cfg.client_prompt_tokens < 2)
        return InvalidArgument("h2h: --client-tokens and --client-prompt must be >= 2");
    }
    if (l == Leg::kAgents && (cfg.agents < 1 || cfg.agents > 32 || cfg.agent_turns < 1 || cfg.agent_gen_tokens < 1 ||
                              cfg.preamble_tokens < 0))
      return InvalidArgument("h2h: the agents leg needs 1..32 agents, turns and agent tokens >= 1, preamble >= 0");
  }
  return Status::Ok();
}

// A stack that is not applicable to a leg gets a row saying so (tag n/a, the reason in its samples).
Status StoreNotApplicable(const H2hConfig& cfg, H2hEnv& env, const std::string& model, const std::string& hash,
                          Leg leg, const StackRunner& s, const std::string& reason) {
  EvalRow r;
  r.created_at = UtcIso(ClockOf(env)->WallMicros());
  r.ember_commit = env.revision.commit;
  r.ember_dirty = env.revision.dirty;
  r.stack = s.name();
  r.model_path = model;
  r.model_hash = hash;
  r.leg = LegName(leg);
  r.threads = cfg.threads;
  r.prompt_tokens = cfg.prompt_tokens;
  r.gen_tokens = cfg.gen_tokens;
  r.n_runs = 0;
  r.tag = "n/a";
  r.samples = nlohmann::json::array({{{"reason", reason}}}).dump();
  return env.db->Insert(r).status();
}

}  // namespace

std::vector<LegMetric> MetricsForLeg(Leg leg, int turns, const std::vector<int>& levels) {
  switch (leg) {
    case Leg::kConcurrency: {
      std::vector<LegMetric> v;
      for (int c : levels) {
        const std::string n = std::to_string(c);
        v.push_back({{"aggregate_tok_s_c" + n, Direction::kHigherIsFaster}, nullptr, 0, c, &LoadMeasurement::aggregate_tok_s});
        v.push_back({{"ttft_p50_ms_c" + n, Direction::kLowerIsFaster}, nullptr, 0, c, &LoadMeasurement::ttft_p50_ms});
      }
      return v;
    }
    case Leg::kAgents: {
      std::vector<LegMetric> v;
      for (int c : levels) {
        v.push_back({{"wall_ms", Direction::kLowerIsFaster}, nullptr, 0, c, &LoadMeasurement::wall_ms});
        v.push_back({{"ttft_p50_ms", Direction::kLowerIsFaster}, nullptr, 0, c, &LoadMeasurement::ttft_p50_ms});
      }
      return v;
    }
    case Leg::kDirect:
      return {{{"prefill_tok_s", Direction::kHigherIsFaster}, &RunMeasurement::prefill_tok_s},
              {{"decode_tok_s", Direction::kHigherIsFaster}, &RunMeasurement::decode_tok_s}};
    case Leg::kServed:
      return {{{"ttft_ms", Direction::kLowerIsFaster}, &RunMeasurement::ttft_ms},
              {{"decode_tok_s", Direction::kHigherIsFaster}, &RunMeasurement::decode_tok_s},
              {{"ready_ms", Direction::kLowerIsFaster}, &RunMeasurement::ready_ms}};
    default: {
      std::vector<LegMetric> v;
      for (int t = 1; t <= turns; ++t)
        v.push_back({{"ttft_ms_turn_" + std::to_string(t), Direction::kLowerIsFaster}, &RunMeasurement::ttft_ms, t});
      return v;
    }
  }
}

double MetricValue(const RunMeasurement& m, const LegMetric& metric) {
  if (metric.clients > 0 && metric.load_field) {
    const LoadMeasurement* l = FindLevel(m, metric.clients);
    return l ? l->*metric.load_field : std::nan("");
  }
  if (metric.turn > 0) {
    const TurnMeasurement* t = FindTurn(m, metric.turn);
    return t ? t->ttft_ms : std::nan("");
  }
  return (m.*metric.field).value_or(std::nan(""));
}

StatusOr<H2hSummary> RunH2h(const H2hConfig& cfg, H2hEnv& env) {
  EMBER_RETURN_IF_ERROR(CheckSetup(cfg, env));
  H2hSummary out;
  for (const std::string& model : cfg.models) {
    auto hash = env.db->ModelHash(model);
    std::optional<std::vector<int32_t>> tokens;  // tokenized once per model, on first need
    std::optional<std::vector<std::vector<int32_t>>> turns;  // the conversation, likewise
    for (Leg leg : cfg.legs) {
      std::vector<StackRunner*> todo;
      for (StackRunner* s : env.stacks) {
        CellOutcome o{model, s->name(), LegName(leg), "", std::nullopt, std::nullopt, {}};
        bool have = false;
        if (hash.ok() && !cfg.redo) {
          // A stack that can run the leg now is not held back by an n/a row of an earlier run (a peer
          // that was not built then).
          auto h = env.db->HasCell(env.revision.commit, *hash, s->name(), LegName(leg), cfg.threads, s->Supports(leg));
          have = h.ok() && *h;
        }
        if (!hash.ok()) o.status = "failed: " + hash.status().ToString();
        else if (have) o.status = "skipped: already in the eval DB (use --redo)";
        else if (!s->Supports(leg)) {
          o.status = s->SkipReason(leg);
          if (o.status.rfind("n/a", 0) == 0) {
            Status st = StoreNotApplicable(cfg, env, model, *hash, leg, *s, o.status);
            if (!st.ok()) o.status = "failed: " + st.ToString();
          }
        } else {
          todo.push_back(s);
          continue;
        }
        (o.status.rfind("failed", 0) == 0 ? out.failed : out.skipped)++;
        out.cells.push_back(std::move(o));
      }
      if (todo.empty()) continue;
      if (IsCacheLeg(leg) && !turns) {
        auto t = env.conversation ? env.conversation(model, cfg.turns)
                                  : StatusOr<std::vector<std::vector<int32_t>>>(InvalidArgument("no conversation tokenizer"));
        if (!t.ok() || t->size() != static_cast<size_t>(cfg.turns)) {
          const std::string why = t.ok() ? "wrong number of turns" : t.status().ToString();
          for (StackRunner* s : todo)
            out.cells.push_back({model, s->name(), LegName(leg), "failed: conversation: " + why, {}, {}, {}});
          out.failed += static_cast<int>(todo.size());
          continue;
        }
        turns = std::move(t).value();
      }
      if (!tokens) {
        auto t = env.tokenize(model, cfg.prompt_tokens);
        if (!t.ok()) {
          for (StackRunner* s : todo)
            out.cells.push_back({model, s->name(), LegName(leg), "failed: tokenize: " + t.status().ToString(), {}, {}, {}});
          out.failed += static_cast<int>(todo.size());
          continue;
        }
        tokens = std::move(t).value();
      }
      LegRun run(cfg, env, model, *hash, leg, todo, *tokens);
      if (IsCacheLeg(leg)) run.SetTurns(*turns);
      run.Execute(out);
    }
  }
  if (env.progress) env.progress->Finish();
  return out;
}

nlohmann::json H2hSummaryToJson(const H2hSummary& s) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : s.cells) {
    cells.push_back({{"model", c.model}, {"stack", c.stack}, {"leg", c.leg}, {"status", c.status},
                     {"row_id", c.row_id ? nlohmann::json(*c.row_id) : nlohmann::json(nullptr)},
                     {"tag", c.tag ? nlohmann::json(StabilityTagName(*c.tag)) : nlohmann::json(nullptr)}});
    if (!c.figures.is_null()) cells.back()["figures"] = c.figures;
  }
  return {{"stored", s.stored}, {"skipped", s.skipped}, {"failed", s.failed}, {"cells", cells}};
}

}  // namespace ember::bench
