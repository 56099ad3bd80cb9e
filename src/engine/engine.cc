#include "engine/engine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "tokenizer/tokenizer_spec.h"

namespace ember {

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kEog: return "eog";
    case StopReason::kLength: return "length";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kCallback: return "callback";
  }
  return "unknown";
}

Status Sequence::Adopt(KvState state, std::vector<int32_t> tokens) {
  const KvConfig& a = state.config();
  const KvConfig& b = kv_.config();
  if (a.n_layer != b.n_layer || a.n_kv_head != b.n_kv_head || a.head_dim_k != b.head_dim_k ||
      a.head_dim_v != b.head_dim_v || a.dtype != b.dtype || a.block_size != b.block_size) {
    return InvalidArgument("sequence: adopted KV state has a different geometry or dtype");
  }
  for (int32_t l = 0; l < a.n_layer; ++l) {  // a window layer's state would be wrong for a full one
    if (a.kind(l).kind != b.kind(l).kind || a.kind(l).window != b.kind(l).window) {
      return InvalidArgument("sequence: adopted KV state has a different state kind or window at layer " +
                             std::to_string(l));
    }
  }
  if (static_cast<int64_t>(tokens.size()) != state.n_pos()) {
    return InvalidArgument("sequence: " + std::to_string(tokens.size()) + " tokens for a state of " +
                           std::to_string(state.n_pos()) + " positions");
  }
  if (state.n_pos() > fo_.max_ctx) return InvalidArgument("sequence: adopted state exceeds the context");
  kv_ = std::move(state);
  tokens_ = std::move(tokens);
  return Status::Ok();
}

ForwardContext& Sequence::fwd() {
  if (!fwd_) fwd_ = std::make_unique<ForwardContext>(model_, fo_);
  return *fwd_;
}

OpTimes& Sequence::op_times() { return fwd().times(); }

Status Sequence::TrimTo(int64_t p) {
  EMBER_RETURN_IF_ERROR(kv_.TrimTo(p));
  tokens_.resize(static_cast<size_t>(p));
  return Status::Ok();
}

namespace {

// The weight bytes a forward pass reads, as ranges of the mapping: all tensor data, less the token
// embedding table when the output projection is a separate tensor (decode reads only a few of its rows).
// Empty for files larger than half of physical memory (they could not all stay resident anyway) and
// for a model parsed from a caller's buffer.
std::vector<WeightRange> StreamedRanges(const Model& m) {
  const GgufFile& f = m.gguf();
  const long page = sysconf(_SC_PAGESIZE);
  const long phys = sysconf(_SC_PHYS_PAGES);
  if (f.region() == nullptr || page <= 0 || f.file_size() <= f.data_offset()) return {};
  if (phys > 0 && f.file_size() / static_cast<size_t>(page) > static_cast<size_t>(phys) / 2) return {};
  const uint8_t* begin = f.bytes() + f.data_offset();
  const uint8_t* end = f.bytes() + f.file_size();
  const GgufTensorInfo& embd = m.token_embd();
  if (m.tied_output() || embd.data < begin || embd.data + embd.n_bytes > end) return {{begin, end}};
  return {{begin, embd.data}, {embd.data + embd.n_bytes, end}};
}

// `ranges` less `cut` (both sorted and disjoint; every cut range inside one of the ranges): the pieces
// left, in order.
std::vector<WeightRange> Without(const std::vector<WeightRange>& ranges, const std::vector<WeightRange>& cut) {
  std::vector<WeightRange> out;
  size_t c = 0;
  for (const WeightRange& r : ranges) {
    const uint8_t* p = r.begin;
    for (; c < cut.size() && cut[c].begin < r.end; ++c) {
      if (cut[c].begin > p) out.push_back({p, cut[c].begin});
      p = std::max(p, cut[c].end);
    }
    if (p < r.end) out.push_back({p, r.end});
  }
  return out;
}

// EMBER_REPACK=0 (or off/false/no) vetoes repacking whatever the options say, e.g. for A/B timing.
bool RepackAllowedByEnvironment() {
  const char* v = std::getenv("EMBER_REPACK");
  if (v == nullptr) return true;
  const std::string_view s(v);
  return !(s == "0" || s == "off" || s == "false" || s == "no");
}

// A packed copy replaces its rows' pages in the file mapping: MatMul reads those rows only from the
// copy, so the pages are dropped from this process (they stay in the page cache, clean and
// reclaimable; a later read would fault them back in). The mapping is Env::Default()'s read-only
// MAP_SHARED file mapping (Model::Load), where MADV_DONTNEED discards nothing but page-table entries.
void ReleasePackedRows(const kernels::WeightView& w) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(w.data), e = b + kernels::PackedSourceBytes(w);
  const uintptr_t lo = (b + page - 1) & ~(page - 1), hi = e & ~(page - 1);  // whole pages inside
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::Load(const std::string& path, const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->opts_ = options;
  EMBER_ASSIGN_OR_RETURN(e->model_, Model::Load(path));
  // Startup is dominated by building the tokenizer (vocab and merge maps, ~0.25 s of CPU for a 128k
  // Llama 3 vocab) and by faulting in the weights; they are independent, so they run side by side.
  Status tok_status = Status::Ok();
  std::thread tok_thread;
  if (options.load_tokenizer) {
    tok_thread = std::thread([&e, &tok_status] {
      StatusOr<TokenizerSpec> spec = TokenizerSpecFromGguf(e->model_->gguf());
      if (!spec.ok()) {
        tok_status = spec.status();
        return;
      }
      StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::Create(std::move(*spec));
      if (!tok.ok()) {
        tok_status = tok.status();
        return;
      }
      e->tokenizer_ = std::move(*tok);
    });
  }
  // Maps the weight pages now (MADV_POPULATE_READ; reads them from disk too when they are not cached),
  // so the first forward pass does not take ~7k page faults on the critical path, on 2 MiB pages where
  // the kernel can (engine/weight_pages.h). Nothing is copied: the weights stay in the shared mapping.
  // The rows about to be repacked are only read once, to pack, so they get no 2 MiB placement.
  const bool repack = options.repack_weights && RepackAllowedByEnvironment();
  if (std::vector<WeightRange> ranges = StreamedRanges(*e->model_); !ranges.empty()) {
    std::vector<WeightRange> once;
    if (repack) {
      for (const auto& [data, bytes] : e->model_->PackableSources()) once.push_back({data, data + bytes});
      ranges = Without(ranges, once);
    }
    SystemPageOps ops(*e->model_->gguf().region());
    WeightPagesOptions wo;
    wo.populate = options.prefault_weights;
    wo.huge = options.huge_pages;
    wo.progress = options.load_progress;
    wo.read_once = once;
    e->weight_pages_ = PlaceWeights(ops, ranges, wo);
  }
  if (e->opts_.threads <= 0) e->opts_.threads = kernels::PhysicalCoreCount();
  e->pool_ = std::make_unique<kernels::ThreadPool>(e->opts_.threads);
  Status pack_status = Status::Ok();
  if (repack) {
    MutexLock lock(&e->pool_mu_);  // the pool's one owner (uncontended: nothing else has the engine yet)
    pack_status = e->model_->PackWeights(*e->pool_, ReleasePackedRows);
  }
  if (tok_thread.joinable()) tok_thread.join();
  EMBER_RETURN_IF_ERROR(pack_status);
  EMBER_RETURN_IF_ERROR(tok_status);
  if (e->opts_.ubatch <= 0) e->opts_.ubatch = 512;
  if (e->opts_.n_ctx <= 0) e->opts_.n_ctx = std::min<int64_t>(e->model_->config().n_ctx_train, 32768);
  EMBER_RETURN_IF_ERROR(KvConfig(e->kv_config()).Validate());
  return e;
}

StatusOr<std::unique_ptr<Sequence>> Engine::NewSequence(bool all_logits) const {
  EMBER_ASSIGN_OR_RETURN(KvState kv, KvState::Create(kv_config()));
  ForwardOptions fo;
  // Evaluate keeps a full logits row per ubatch token; cap its ubatch to bound that buffer.
  fo.max_ubatch = all_logits ? std::min<int64_t>(opts_.ubatch, 64) : opts_.ubatch;
  fo.max_ctx = opts_.n_ctx;
  fo.all_logits = all_logits;
  return std::unique_ptr<Sequence>(new Sequence(std::move(kv), *model_, fo));
}

Status Engine::Forward(Sequence& seq, std::span<const int32_t> tokens, LogitsMode mode) {
  MutexLock lock(&pool_mu_);
  EMBER_RETURN_IF_ERROR(seq.fwd().Run(seq.kv_, tokens.data(), static_cast<int64_t>(tokens.size()), mode, *pool_));
  seq.tokens_.insert(seq.tokens_.end(), tokens.begin(), tokens.end());
  return Status::Ok();
}

std::unique_ptr<StepContext> Engine::NewStepContext(int64_t max_tokens, int max_seqs, int64_t max_logit_rows) const {
  return std::make_unique<StepContext>(*model_, max_tokens, max_seqs, opts_.n_ctx, max_logit_rows);
}

Status Engine::Step(StepContext& ctx, std::span<const StepSlice> slices, std::vector<Status>* status) {
  if (static_cast<int>(slices.size()) > ctx.max_seqs()) {
    return InvalidArgument("step: " + std::to_string(slices.size()) + " sequences (room for " +
                           std::to_string(ctx.max_seqs()) + ")");
  }
  std::vector<ForwardSlice> fs(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    if (slices[i].seq == nullptr) return InvalidArgument("step: slice without a sequence");
    fs[i] = {&slices[i].seq->kv_, slices[i].tokens.data(), static_cast<int64_t>(slices[i].tokens.size()),
             slices[i].all_logits ? LogitsMode::kAll : slices[i].logits ? LogitsMode::kLast : LogitsMode::kNone};
  }
  {
    MutexLock lock(&pool_mu_);
    EMBER_RETURN_IF_ERROR(ctx.fwd_.RunBatch(fs, *pool_, status));
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    if ((*status)[i].ok()) {
      std::vector<int32_t>& t = slices[i].seq->tokens_;
      t.insert(t.end(), slices[i].tokens.begin(), slices[i].tokens.end());
    }
  }
  return Status::Ok();
}

StatusOr<const float*> Engine::Prefill(Sequence& seq, std::span<const int32_t> tokens, int64_t ubatch,
                                       const std::atomic<bool>* cancel) {
  if (tokens.empty()) return InvalidArgument("prefill: no tokens");
  const int64_t chunk = std::min(ubatch > 0 ? ubatch : opts_.ubatch, seq.fo_.max_ubatch);
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t i = 0; i < n; i += chunk) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return static_cast<const float*>(nullptr);
    const int64_t len = std::min(chunk, n - i);
    EMBER_RETURN_IF_ERROR(Forward(seq, tokens.subspan(static_cast<size_t>(i), static_cast<size_t>(len)),
                                  i + len == n ? LogitsMode::kLast : LogitsMode::kNone));
  }
  return seq.last_logits();
}

StatusOr<const float*> Engine::Decode(Sequence& seq, int32_t token) {
  EMBER_RETURN_IF_ERROR(Forward(seq, std::span<const int32_t>(&token, 1), LogitsMode::kLast));
  return seq.last_logits();
}

Status Engine::Evaluate(Sequence& seq, std::span<const int32_t> tokens, int64_t ubatch, std::vector<float>* out) {
  const int64_t chunk = std::min(ubatch > 0 ? ubatch : opts_.ubatch, seq.fo_.max_ubatch);
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t nv = model_->config().n_vocab;
  for (int64_t i = 0; i < n; i += chunk) {
    const int64_t len = std::min(chunk, n - i);
    EMBER_RETURN_IF_ERROR(
        Forward(seq, tokens.subspan(static_cast<size_t>(i), static_cast<size_t>(len)), LogitsMode::kAll));
    out->insert(out->end(), seq.last_logits(), seq.last_logits() + len * nv);
  }
  return Status::Ok();
}

}  // namespace ember
