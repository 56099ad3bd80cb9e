#include "session/kv_budget.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "cache/cache_options.h"

namespace ember {

KvBudget::KvBudget(KvBudgetOptions options, TieredCache* tiers) : opts_(options), tiers_(tiers) {}

uint64_t KvBudget::ReservationBytes(int64_t prompt_tokens, int64_t cached_tokens, int64_t max_tokens) const {
  const int64_t positions = std::max<int64_t>(prompt_tokens - cached_tokens, 0) + std::max<int64_t>(max_tokens, 0) +
                            std::max<int64_t>(opts_.block_positions, 0);
  // Clamped: a request CheckAdmissible lets through always fits once it runs alone.
  return std::min(static_cast<uint64_t>(positions) * opts_.bytes_per_position + opts_.bytes_per_sequence,
                  opts_.budget_bytes);
}

Status KvBudget::CheckAdmissible(int64_t prompt_tokens, int64_t max_tokens) const {
  const int64_t positions = std::max<int64_t>(prompt_tokens, 0) + std::max<int64_t>(max_tokens, 0);
  const uint64_t bytes = static_cast<uint64_t>(positions) * opts_.bytes_per_position + opts_.bytes_per_sequence;
  if (bytes <= opts_.budget_bytes) return Status::Ok();
  return InvalidArgument("the request needs " + std::to_string(positions) + " KV positions (" +
                         std::to_string(prompt_tokens) + " prompt + " + std::to_string(max_tokens) +
                         " max_tokens) = " + std::to_string(bytes) + " bytes (" + FormatBytes(bytes) +
                         "), more than the server's whole KV budget of " + std::to_string(opts_.budget_bytes) +
                         " bytes (" + FormatBytes(opts_.budget_bytes) + ", --kv-budget); lower max_tokens or "
                         "shorten the prompt");
}

uint64_t KvBudget::CacheBytes() const { return tiers_ != nullptr ? tiers_->ram().stats().bytes : 0; }

void KvBudget::ShrinkCacheTo(int64_t cache_bytes) {
  if (tiers_ == nullptr || CacheBytes() <= static_cast<uint64_t>(std::max<int64_t>(cache_bytes, 0))) return;
  {
    MutexLock lock(&mu_);
    ++shrinks_;
  }
  tiers_->ShrinkTo(static_cast<uint64_t>(std::max<int64_t>(cache_bytes, 0)));
}

KvBudgetStats KvBudget::stats() const {
  KvBudgetStats s;
  s.budget_bytes = opts_.budget_bytes;
  s.cache_bytes = CacheBytes();
  MutexLock lock(&mu_);
  s.shrinks = shrinks_;
  return s;
}

std::optional<uint64_t> ParseMemAvailable(std::string_view meminfo) {
  std::istringstream in{std::string(meminfo)};
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream f(line.substr(13));
    uint64_t kb = 0;
    std::string unit;
    if (!(f >> kb >> unit) || unit != "kB") return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

uint64_t DefaultKvBudgetBytes(uint64_t resident_bytes, std::string* how) {
  // A machine fact under /proc: read directly (docs/conventions.md "Files go through the Env").
  std::optional<uint64_t> avail;
  {
    std::ifstream f("/proc/meminfo");
    std::stringstream text;
    if (f) {
      text << f.rdbuf();
      avail = ParseMemAvailable(text.str());
    }
  }
  std::string source = "MemAvailable";
  if (!avail) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    avail = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : uint64_t{4} << 30;
    source = "physical RAM";
  }
  const uint64_t left = *avail > resident_bytes ? *avail - resident_bytes : 0;
  const uint64_t budget = std::max<uint64_t>(left / 4 * 3, uint64_t{64} << 20);
  if (how != nullptr) {
    *how = "75% of " + source + " " + FormatBytes(*avail) + " less the weights " + FormatBytes(resident_bytes);
  }
  return budget;
}

}  // namespace ember
