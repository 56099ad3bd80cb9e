#include "server/fake_backend.h"

#include <algorithm>
#include <chrono>

#include "util/env.h"

namespace ember::server {
namespace {

constexpr const char* kWords[] = {"alpha", "bravo", "cache", "delta", "ember", "fjord", "gamma", "hotel",
                                  "india", "juliet", "kilo", "lima", "mango", "nectar", "oscar", "prism"};

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t HashTokens(const std::vector<int32_t>& ids) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (int32_t id : ids) h = (h ^ static_cast<uint32_t>(id)) * 1099511628211ULL;
  return h;
}

std::string BytesOf(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (id >= 0 && id < 256) s.push_back(static_cast<char>(id));
  }
  return s;
}

// The scripted reply: see the header comment.
std::vector<std::string> ReplyPieces(const GenerationRequest& req) {
  const std::string text = BytesOf(req.prompt);
  std::vector<std::string> pieces;
  const size_t echo = text.rfind("echo:");
  if (echo != std::string::npos) {
    size_t begin = echo + 5;
    if (begin < text.size() && text[begin] == ' ') ++begin;
    size_t end = std::min(text.find("<|", begin), text.size());
    if (end > begin && text[end - 1] == '\n') --end;  // the template's turn separator
    for (size_t i = begin; i < end; i += 3) pieces.push_back(text.substr(i, std::min<size_t>(3, end - i)));
    return pieces;
  }
  uint64_t state = req.sampling.seed.has_value() && req.sampling.temperature > 0 ? *req.sampling.seed
                                                                                 : HashTokens(req.prompt);
  const bool endless = text.find("[long]") != std::string::npos;
  const size_t n = endless ? static_cast<size_t>(req.max_tokens) : 8 + SplitMix64(state) % 8;
  for (size_t i = 0; i < n; ++i) {
    const char* word = kWords[SplitMix64(state) % std::size(kWords)];
    pieces.push_back((i == 0 ? std::string() : std::string(" ")) + word);
  }
  return pieces;
}

TokenEvent MakeEvent(const GenerationRequest& req, const std::string& piece, size_t index) {
  TokenEvent ev;
  ev.id = piece.empty() ? 0 : static_cast<unsigned char>(piece[0]);
  ev.piece = piece;
  ev.logprob = -0.125f * static_cast<float>(index % 4);
  for (int32_t k = 0; k < req.top_logprobs; ++k) {
    ev.top_logprobs.push_back({ev.id + k, k == 0 ? piece : "alt" + std::to_string(k),
                               ev.logprob - static_cast<float>(k)});
  }
  return ev;
}

}  // namespace

namespace {

int64_t KvTokensOf(const GenerationRequest& req) {
  return static_cast<int64_t>(req.prompt.size()) + std::max<int64_t>(0, req.max_tokens);
}

}  // namespace

FakeBackend::FakeBackend(Options options) : options_(std::move(options)) {
  MutexLock lock(&mu_);
  for (int i = 0; i < max_parallel(); ++i) lanes_.push_back(LaneStats{i, 0, 0, 0, 0});
}

Status FakeBackend::CheckAdmissible(const GenerationRequest& req) const {
  const int64_t need = KvTokensOf(req);
  if (options_.kv_budget_tokens <= 0 || need <= options_.kv_budget_tokens) return Status::Ok();
  return InvalidArgument("the request needs " + std::to_string(need) + " tokens of KV (prompt " +
                         std::to_string(req.prompt.size()) + " + max_tokens " + std::to_string(req.max_tokens) +
                         ") but the KV budget is " + std::to_string(options_.kv_budget_tokens) + " tokens");
}

bool FakeBackend::AwaitKv(const GenerationRequest& req, int64_t need) {
  Env* env = options_.env != nullptr ? options_.env : Env::Default();
  const auto cancelled = [&req] { return req.cancel != nullptr && req.cancel->load(); };
  MutexLock lock(&mu_);
  const uint64_t ticket = next_ticket_++;
  kv_queue_.push_back({ticket, req.cancel});
  bool refused_once = false;
  while (true) {
    const bool head = kv_queue_.front().ticket == ticket;
    if (cancelled()) {  // left while waiting: nothing ran, nothing to release
      kv_queue_.erase(std::find_if(kv_queue_.begin(), kv_queue_.end(),
                                   [ticket](const KvWaiter& w) { return w.ticket == ticket; }));
      if (head) head_refused_ = false;
      kv_cv_.SignalAll();  // the next call may be the head now
      return false;
    }
    if (head) {
      if (options_.kv_budget_tokens <= 0 || kv_used_ + kv_outside_ + need <= options_.kv_budget_tokens) {
        kv_queue_.pop_front();
        head_refused_ = false;
        kv_used_ += need;
        ++admitted_;
        admission_order_.push_back(BytesOf(req.prompt));
        kv_cv_.SignalAll();  // the next call is the head now and may fit too
        return true;
      }
      ++refused_;
      head_refused_ = true;
      if (!refused_once) ++memory_waits_;
      refused_once = true;
    }
    // Woken when a generation ends or the head changes; the poll catches memory freed unsignalled
    // (set_kv_outside_tokens) and a cancel.
    env->WaitUntil(&kv_cv_, &mu_, env->MonotonicMicros() + kAdmissionPollMicros);
  }
}

MemoryWaits FakeBackend::memory_waits() const {
  MutexLock lock(&mu_);
  // A cancelled head is leaving (within one poll): it holds no queue slot any more.
  const bool head_live =
      !kv_queue_.empty() && (kv_queue_.front().cancel == nullptr || !kv_queue_.front().cancel->load());
  return {head_refused_ && head_live ? size_t{1} : size_t{0}, memory_waits_};
}

void FakeBackend::set_kv_outside_tokens(int64_t tokens) {
  MutexLock lock(&mu_);
  kv_outside_ = tokens;
}

void FakeBackend::ReleaseKv(int64_t tokens) {
  {
    MutexLock lock(&mu_);
    kv_used_ -= tokens;
  }
  kv_cv_.SignalAll();  // the waiting head re-checks now, not at the next poll
}

StatusOr<std::vector<int32_t>> FakeBackend::Tokenize(const std::string& text, bool add_special,
                                                     bool parse_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  if (add_special) ids.push_back(kBos);
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

StatusOr<std::string> FakeBackend::Detokenize(const std::vector<int32_t>& ids) const {
  for (int32_t id : ids) {
    if (id < 0 || id > kBos) return InvalidArgument("token id " + std::to_string(id) + " is out of range");
  }
  return BytesOf(ids);
}

StatusOr<std::string> FakeBackend::ApplyChatTemplate(const ChatTemplateInput& input) const {
  std::string out;
  if (!input.tools.empty()) {
    out += "<|tools|>";
    for (const ToolSpec& t : input.tools) out += t.name + " ";
    out += "\n";
  }
  for (const ChatMessage& m : input.messages) {
    out += "<|" + m.role + "|>" + m.content;
    for (const ToolCall& c : m.tool_calls) out += "[call " + c.name + " " + c.arguments_json + "]";
    out += "\n";
  }
  if (input.add_generation_prompt) out += "<|assistant|>";
  return out;
}

StatusOr<std::vector<int32_t>> FakeBackend::TokenizeChat(const ChatTemplateInput& input) const {
  EMBER_ASSIGN_OR_RETURN(std::string text, ApplyChatTemplate(input));
  return Tokenize(text, /*add_special=*/false, /*parse_special=*/true);
}

bool FakeBackend::WaitWhileHeld(const GenerationRequest& req) {
  Env* env = Env::Default();
  MutexLock lock(&mu_);
  while (held_) {
    if (req.cancel != nullptr && req.cancel->load()) return false;
    env->WaitUntil(&held_cv_, &mu_, env->MonotonicMicros() + 5000);  // 5 ms: polls the cancel flag
  }
  return true;
}

void FakeBackend::StartGeneration(const GenerationRequest& req) {
  MutexLock lock(&mu_);
  ++generations_;
  peak_running_ = std::max(peak_running_, ++running_);
  last_request_ = req;
  last_request_.cancel = nullptr;
  if (req.lane >= 0 && static_cast<size_t>(req.lane) < lanes_.size()) {
    ++lanes_[static_cast<size_t>(req.lane)].requests;
    lanes_[static_cast<size_t>(req.lane)].prompt_tokens += req.prompt.size();
  }
}

Status FakeBackend::Generate(const GenerationRequest& req, const TokenCallback& on_token,
                             GenerationResult* out) {
  *out = GenerationResult{};
  out->prompt_tokens = static_cast<int32_t>(req.prompt.size());
  // Over the whole budget it would wait forever (the server refuses it first: CheckAdmissible).
  EMBER_RETURN_IF_ERROR(CheckAdmissible(req));
  const int64_t need = KvTokensOf(req);
  if (!AwaitKv(req, need)) {
    out->finish_reason = FinishReason::kCancelled;
    return Status::Ok();
  }
  // Gives the tokens back however Generate leaves (an on_token that throws included).
  struct KvRelease {
    FakeBackend* backend;
    int64_t tokens;
    ~KvRelease() { backend->ReleaseKv(tokens); }
  } release{this, need};
  StartGeneration(req);
  const bool released = WaitWhileHeld(req);
  const std::vector<std::string> pieces = ReplyPieces(req);
  out->finish_reason = FinishReason::kStop;
  for (size_t i = 0; released && i < pieces.size(); ++i) {
    if (out->completion_tokens >= req.max_tokens) {
      out->finish_reason = FinishReason::kLength;
      break;
    }
    if (req.cancel != nullptr && req.cancel->load()) break;
    if (options_.token_delay_ms > 0) Env::Default()->SleepForMicros(int64_t{options_.token_delay_ms} * 1000);
    ++out->completion_tokens;
    if (!on_token(MakeEvent(req, pieces[i], i))) break;
  }
  MutexLock lock(&mu_);
  if (!released || (req.cancel != nullptr && req.cancel->load())) {
    out->finish_reason = FinishReason::kCancelled;
    ++cancelled_;
  }
  tokens_generated_ += out->completion_tokens;
  --running_;
  return Status::Ok();
}

BackendStats FakeBackend::Stats() const {
  MutexLock lock(&mu_);
  BackendStats s;
  s.engine = "fake";
  s.engine_values = {{"generations", double(generations_)},
                     {"cancelled_generations", double(cancelled_)},
                     {"tokens_generated", double(tokens_generated_)},
                     {"cache_flushes", double(flushes_)}};
  // Like a batching engine's: only when there is more than one lane or a budget to report.
  if (max_parallel() > 1 || options_.kv_budget_tokens > 0) {
    s.batch_values = {{"running", double(running_), false},
                      {"max_parallel", double(max_parallel()), false},
                      {"kv_budget_tokens", double(options_.kv_budget_tokens), false},
                      {"kv_used_tokens", double(kv_used_), false},
                      {"admitted", double(admitted_)},
                      {"admissions_refused", double(refused_)}};
    s.lanes = lanes_;
  }
  return s;
}

Status FakeBackend::FlushCache() {
  MutexLock lock(&mu_);
  ++flushes_;
  return Status::Ok();
}

void FakeBackend::Hold() {
  MutexLock lock(&mu_);
  held_ = true;
}

void FakeBackend::Release() {
  {
    MutexLock lock(&mu_);
    held_ = false;
  }
  held_cv_.SignalAll();
}

int FakeBackend::generations_started() const {
  MutexLock lock(&mu_);
  return generations_;
}

int FakeBackend::running_generations() const {
  MutexLock lock(&mu_);
  return running_;
}

int FakeBackend::peak_running_generations() const {
  MutexLock lock(&mu_);
  return peak_running_;
}

int64_t FakeBackend::kv_used_tokens() const {
  MutexLock lock(&mu_);
  return kv_used_;
}

int FakeBackend::cancelled_generations() const {
  MutexLock lock(&mu_);
  return cancelled_;
}

int FakeBackend::flush_count() const {
  MutexLock lock(&mu_);
  return flushes_;
}

std::vector<std::string> FakeBackend::admission_order() const {
  MutexLock lock(&mu_);
  return admission_order_;
}

GenerationRequest FakeBackend::last_request() const {
  MutexLock lock(&mu_);
  return last_request_;
}

}  // namespace ember::server
