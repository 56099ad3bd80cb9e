#include "bench/direct_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "bench/read_bandwidth.h"
#include "bench/stats.h"
#include "engine/batch_runner.h"
#include "engine/engine.h"
#include "format/model_summary.h"
#include "util/stopwatch.h"

namespace ember::bench {
namespace {

using nlohmann::json;

double Secs(const Stopwatch& t0) { return t0.ElapsedSeconds(); }

struct RepResult {
  double pp_tok_s = 0, tg_tok_s = 0;
};

StatusOr<RepResult> RunOnce(Engine& e, const std::vector<int32_t>& prompt, int64_t tg, int64_t ubatch,
                            OpTimes* pp_ops, OpTimes* tg_ops) {
  EMBER_ASSIGN_OR_RETURN(auto seq, e.NewSequence());
  RepResult r;
  seq->op_times() = *pp_ops;
  Stopwatch t0;
  EMBER_ASSIGN_OR_RETURN(const float* logits, e.Prefill(*seq, prompt, ubatch));
  r.pp_tok_s = static_cast<double>(prompt.size()) / Secs(t0);
  *pp_ops = seq->op_times();
  seq->op_times() = *tg_ops;
  const int64_t nv = e.model().config().n_vocab;
  t0.Reset();
  for (int64_t i = 0; i < tg; ++i) {  // greedy, as the peer's bench does
    const int32_t tok = static_cast<int32_t>(std::max_element(logits, logits + nv) - logits);
    EMBER_ASSIGN_OR_RETURN(logits, e.Decode(*seq, tok));
  }
  r.tg_tok_s = tg > 0 ? static_cast<double>(tg) / Secs(t0) : 0;
  *tg_ops = seq->op_times();
  return r;
}

// N sequences with their own prompts (prefilled before the clock starts, all but the last token) decode
// `tg` greedy tokens each through one BatchRunner: aggregate decode tok/s.
StatusOr<double> BatchDecodeOnce(Engine& e, const std::vector<int32_t>& prompt, int64_t tg, int n) {
  BatchRunnerOptions ro;
  ro.max_seqs = n;
  BatchRunner runner(e, ro);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(n), prompt);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < n; ++i) {
    prompts[static_cast<size_t>(i)][0] = static_cast<int32_t>(i + 1);  // distinct sequences
    EMBER_ASSIGN_OR_RETURN(auto seq, e.NewSequence());
    const auto& p = prompts[static_cast<size_t>(i)];
    if (p.size() > 1) EMBER_RETURN_IF_ERROR(e.Prefill(*seq, std::span<const int32_t>(p).first(p.size() - 1)).status());
    seqs.push_back(std::move(seq));
  }
  std::vector<Status> status(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  const Stopwatch t0;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      BatchJob job;
      job.seq = seqs[static_cast<size_t>(i)].get();
      job.prompt = prompts[static_cast<size_t>(i)];
      job.options.max_tokens = tg + 1;  // the first token comes from the prompt's last position
      job.options.sampling.temperature = 0;
      job.options.stop_at_eog = false;
      status[static_cast<size_t>(i)] = runner.Run(std::move(job)).status();
    });
  }
  for (auto& t : threads) t.join();
  const double s = Secs(t0);
  for (const Status& st : status) EMBER_RETURN_IF_ERROR(st);
  return static_cast<double>(n) * static_cast<double>(tg) / s;
}

json OpsJson(const OpTimes& o) {
  const double total = o.matmul_s + o.attention_s + o.norm_s + o.rope_s + o.other_s;
  return {{"matmul_s", o.matmul_s}, {"attention_s", o.attention_s}, {"norm_s", o.norm_s},
          {"rope_s", o.rope_s}, {"other_s", o.other_s}, {"total_s", total}};
}

}  // namespace

StatusOr<std::vector<int32_t>> ReadTokensFile(const std::string& path, int64_t n_vocab) {
  std::ifstream in(path);
  if (!in) return IoError("--tokens-file: cannot read " + path);
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty()) {
    return InvalidArgument("--tokens-file: " + path + " is not a non-empty JSON array of token ids");
  }
  std::vector<int32_t> ids;
  for (const json& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n_vocab) {
      return InvalidArgument("--tokens-file: " + path + ": " + v.dump() + " is not a token id in [0, " +
                             std::to_string(n_vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

namespace {

// One round of the peer: prefill of the prompt, decode after it, and the long prefill if asked for.
StatusOr<RoundSpeeds> PeerRound(const DirectBenchConfig& a, const PeerChoice& peer, const LlamaBenchSettings& lb,
                                const std::vector<int32_t>& prompt, const std::vector<int32_t>& long_prompt,
                                int64_t tg) {
  RoundSpeeds r;
  const auto pp = static_cast<int64_t>(prompt.size());
  if (peer.kind == PeerKind::kLlamaBench) {
    EMBER_ASSIGN_OR_RETURN(LlamaBenchTest t, RunLlamaBench(peer.llama_bench, a.model, pp, 0, 0, lb));
    r.pp = t.median_ts();
    if (tg > 0) {
      EMBER_ASSIGN_OR_RETURN(t, RunLlamaBench(peer.llama_bench, a.model, 0, tg, pp, lb));
      r.tg = t.median_ts();
    }
    if (!long_prompt.empty()) {
      EMBER_ASSIGN_OR_RETURN(t, RunLlamaBench(peer.llama_bench, a.model, static_cast<int64_t>(long_prompt.size()), 0, 0, lb));
      r.long_pp = t.median_ts();
    }
    return r;
  }
  // The binding's first token comes out of prefill: tg + 1 gives tg timed decode steps.
  EMBER_ASSIGN_OR_RETURN(json pj, RunPeerDecodeBench(a.peer, a.model, prompt, tg + 1, lb.threads, a.kv));
  r.pp = pj.value("prefill_tok_s", 0.0);
  r.tg = pj.value("decode_tok_s", 0.0);
  if (!long_prompt.empty()) {
    EMBER_ASSIGN_OR_RETURN(pj, RunPeerDecodeBench(a.peer, a.model, long_prompt, 1, lb.threads, a.kv));
    r.long_pp = pj.value("prefill_tok_s", 0.0);
  }
  return r;
}

}  // namespace

StatusOr<json> RunDirectBench(const DirectBenchConfig& a, PeerComparison* comparison) {
  EngineOptions eo;
  eo.threads = a.threads;
  eo.ubatch = a.ubatch;
  eo.huge_pages = a.huge_pages;
  eo.load_tokenizer = false;
  eo.repack_weights = a.repack;
  eo.kv_dtype = a.kv == "f32" ? KvDtype::kF32 : KvDtype::kF16;
  if (a.kv != "f16" && a.kv != "f32") return InvalidArgument("--kv must be f16 or f32");
  if (a.pp < 1 || a.tg < 0 || a.reps < 1) return InvalidArgument("--pp >= 1, --tg >= 0, --reps >= 1");
  if (a.long_pp < 0 || a.peer_reps < 1) return InvalidArgument("--long-pp >= 0, --peer-reps >= 1");
  // Before loading anything: a missing native peer under --peer native is the first thing said.
  PeerChoice peer;
  if (a.vs_llamacpp) {
    EMBER_ASSIGN_OR_RETURN(peer, ChoosePeer(a.peer_mode, a.llama_bench, a.build_peer_script));
  }
  ProgressBar* bar = a.progress;
  // Rounds: the warm-up and each rep, then the same for every batched level.
  if (bar != nullptr) bar->SetTotal(static_cast<uint64_t>(1 + a.reps) * (1 + a.parallel.size()));
  LabelBar(bar, "loading model");
  EMBER_ASSIGN_OR_RETURN(auto engine, Engine::Load(a.model, eo));
  const int64_t nv = engine->model().config().n_vocab;
  std::mt19937 rng(1234);
  auto random_ids = [&](int64_t n) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(std::min<int64_t>(nv, 32000))));
    return ids;
  };
  std::vector<int32_t> prompt;
  if (!a.tokens_file.empty()) {
    // --tokens-file: these exact ids (a JSON array) for ember and, through --tokens, the peer.
    EMBER_ASSIGN_OR_RETURN(prompt, ReadTokensFile(a.tokens_file, nv));
  } else {
    prompt = random_ids(a.pp);
  }
  const std::vector<int32_t> long_prompt = a.long_pp > 0 ? random_ids(a.long_pp) : std::vector<int32_t>{};

  LlamaBenchSettings lb;
  lb.threads = engine->threads();
  lb.kv = a.kv;
  lb.ubatch = a.ubatch;
  lb.reps = a.peer_reps;
  lb.timeout_s = a.peer.timeout_s;
  PeerComparison cmp;
  cmp.kind = peer.kind;
  cmp.fallback_reason = peer.fallback_reason;
  cmp.binary = peer.kind == PeerKind::kLlamaBench ? peer.llama_bench : a.peer.runner_mjs;
  cmp.threads = lb.threads;
  cmp.kv = a.kv;
  cmp.ubatch = a.ubatch;
  cmp.pp = static_cast<int64_t>(prompt.size());
  cmp.tg = a.tg;
  cmp.long_pp = a.long_pp;
  cmp.peer_reps = a.peer_reps;
  if (a.vs_llamacpp && peer.kind == PeerKind::kLlamaBench) {
    // What the peer reports about itself (build, CPU) comes from a short run, which also warms it up.
    EMBER_ASSIGN_OR_RETURN(LlamaBenchTest t, RunLlamaBench(peer.llama_bench, a.model, std::min<int64_t>(cmp.pp, 64), 0, 0, lb));
    cmp.build_commit = t.build_commit;
    cmp.cpu_info = t.cpu_info;
  }

  OpTimes pp_ops, tg_ops, scratch;
  // The warm-up round, discarded: ember, then the peer (page cache, lazy allocations, clocks).
  EMBER_RETURN_IF_ERROR(RunOnce(*engine, prompt, std::min<int64_t>(a.tg, 8), a.ubatch, &pp_ops, &tg_ops).status());
  if (!long_prompt.empty()) EMBER_RETURN_IF_ERROR(RunOnce(*engine, long_prompt, 0, a.ubatch, &scratch, &scratch).status());
  if (a.vs_llamacpp) EMBER_RETURN_IF_ERROR(PeerRound(a, peer, lb, prompt, {}, std::min<int64_t>(a.tg, 8)).status());
  AdvanceBar(bar, "warm-up");
  pp_ops = OpTimes{};
  tg_ops = OpTimes{};
  pp_ops.enabled = tg_ops.enabled = true;
  std::vector<double> pp_runs, tg_runs, long_runs;
  for (int rep = 0; rep < a.reps; ++rep) {
    EMBER_ASSIGN_OR_RETURN(RepResult r, RunOnce(*engine, prompt, a.tg, a.ubatch, &pp_ops, &tg_ops));
    pp_runs.push_back(r.pp_tok_s);
    tg_runs.push_back(r.tg_tok_s);
    RoundSpeeds mine{r.pp_tok_s, r.tg_tok_s, 0};
    if (!long_prompt.empty()) {
      EMBER_ASSIGN_OR_RETURN(RepResult l, RunOnce(*engine, long_prompt, 0, a.ubatch, &scratch, &scratch));
      long_runs.push_back(l.pp_tok_s);
      mine.long_pp = l.pp_tok_s;
    }
    if (a.vs_llamacpp) {
      cmp.ember.push_back(mine);
      // Interleaved with ember's reps so both see the same machine state.
      EMBER_ASSIGN_OR_RETURN(RoundSpeeds theirs, PeerRound(a, peer, lb, prompt, long_prompt, a.tg));
      cmp.peer.push_back(theirs);
    }
    AdvanceBar(bar, "rep " + std::to_string(rep + 1) + "/" + std::to_string(a.reps));
  }
  LabelBar(bar, "memory bandwidth");
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double pp = Median(pp_runs), tg = Median(tg_runs);
  const Model& model = engine->model();
  const uint64_t wbytes = model.weight_bytes();
  // Bytes one decoded token read: every dense weight, plus the experts the decode steps actually read
  // (counted per step, so an expert read twice or a skipped one would show against active_weight_bytes).
  const StatusOr<ModelSummary> params = Summarize(model.gguf());  // parameter counts (the file loaded, so it parses)
  const double decoded = static_cast<double>(std::max<int64_t>(1, a.tg) * a.reps);
  const double read_per_token = model.expert_bytes() == 0
                                    ? static_cast<double>(wbytes)
                                    : static_cast<double>(wbytes - model.expert_bytes()) +
                                          static_cast<double>(tg_ops.expert_bytes) / decoded;
  // After the peak RSS is read (its 512 MiB buffer is not the engine's), on the engine's thread count.
  const ReadBandwidth bw = MeasureReadBandwidth(engine->threads());
  const double machine_bw = bw.peak();
  const WeightPages& wp = engine->weight_pages();
  json j = {{"model", a.model}, {"threads", engine->threads()}, {"pp_tokens", static_cast<int64_t>(prompt.size())}, {"tg_tokens", a.tg},
            {"kv", a.kv}, {"reps", a.reps}, {"prefill_tok_s", pp}, {"decode_tok_s", tg},
            {"prefill_runs", pp_runs}, {"decode_runs", tg_runs},
            {"peak_rss_bytes", static_cast<uint64_t>(ru.ru_maxrss) * 1024}, {"weight_bytes", wbytes},
            {"active_weight_bytes", model.active_weight_bytes()}, {"decode_read_bytes_per_token", read_per_token},
            {"n_params", params.ok() ? params->n_params : 0}, {"active_params", params.ok() ? params->active_params : 0},
            {"packed_bytes", engine->model().packed().bytes()}, {"packed_tensors", engine->model().packed().tensors()},
            {"bandwidth_gbs", tg * read_per_token / 1e9}, {"machine_read_gbs", machine_bw},
            {"bandwidth_fraction", machine_bw > 0 ? tg * read_per_token / 1e9 / machine_bw : 0},
            {"machine_read_4k_gbs", bw.small_pages_gbs}, {"machine_read_2m_gbs", bw.huge_pages_gbs},
            {"weights_huge_fraction", wp.bytes > 0 ? static_cast<double>(wp.huge_bytes) / static_cast<double>(wp.bytes) : 0.0},
            {"weights_reread", wp.reread},
            {"ops", {{"prefill", OpsJson(pp_ops)}, {"decode", OpsJson(tg_ops)}}}};
  if (!long_prompt.empty()) {
    j["long_pp_tokens"] = a.long_pp;
    j["long_prefill_tok_s"] = Median(long_runs);
    j["long_prefill_runs"] = long_runs;
  }
  if (a.vs_llamacpp) {
    j["peer"] = PeerJson(cmp);
    j["ratios"] = RatiosJson(cmp);
    if (comparison) *comparison = cmp;
  }
  if (!a.parallel.empty()) {
    const int64_t tg_b = std::max<int64_t>(a.tg, 1);
    std::vector<std::vector<double>> runs(a.parallel.size());
    for (size_t k = 0; k < a.parallel.size(); ++k) {  // warm-up of each level
      if (a.parallel[k] < 1 || a.parallel[k] > 64) return InvalidArgument("--parallel levels must be in 1..64");
      EMBER_RETURN_IF_ERROR(BatchDecodeOnce(*engine, prompt, std::min<int64_t>(tg_b, 8), a.parallel[k]).status());
      AdvanceBar(bar, "batched x" + std::to_string(a.parallel[k]) + " warm-up");
    }
    for (int rep = 0; rep < a.reps; ++rep) {  // levels interleaved within each rep
      for (size_t k = 0; k < a.parallel.size(); ++k) {
        EMBER_ASSIGN_OR_RETURN(double r, BatchDecodeOnce(*engine, prompt, tg_b, a.parallel[k]));
        runs[k].push_back(r);
        AdvanceBar(bar, "batched x" + std::to_string(a.parallel[k]) + " rep " + std::to_string(rep + 1));
      }
    }
    json levels = json::array();
    double one = 0;
    for (size_t k = 0; k < a.parallel.size(); ++k) {
      const double m = Median(runs[k]);
      if (a.parallel[k] == 1) one = m;
      levels.push_back({{"sequences", a.parallel[k]}, {"tok_s", m}, {"runs", runs[k]}});
    }
    // Without a level of 1 there is nothing to compare with: null, not a ratio of 0.
    for (json& l : levels) l["ratio_to_one"] = one > 0 ? json(l["tok_s"].get<double>() / one) : json(nullptr);
    j["batch_decode"] = levels;
  }
  return j;
}

}  // namespace ember::bench
