#include "cache/prompt_cache.h"

#include <algorithm>

#include "cache/trim_rules.h"

namespace ember {
namespace {

int64_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  const auto mm = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  return mm.first - a.begin();
}

bool IsStrictPrefix(const std::vector<int32_t>& shorter, const std::vector<int32_t>& longer) {
  return shorter.size() < longer.size() && std::equal(shorter.begin(), shorter.end(), longer.begin());
}

}  // namespace

PromptCache::PromptCache(PromptCacheOptions options)
    : capacity_(options.capacity_bytes),
      spill_(std::move(options.spill)),
      env_(options.env != nullptr ? options.env : Env::Default()) {
  st_.capacity = capacity_;
}

StatusOr<CacheHit> PromptCache::Lookup(std::span<const int32_t> prompt, const std::string& ns) {
  CacheHit hit;
  if (!enabled()) return hit;
  const int64_t limit = static_cast<int64_t>(prompt.size()) - 1;  // at least one token is forwarded
  MutexLock lock(&mu_);
  ++st_.lookups;
  size_t best = slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const CacheEntry& e = *slots_[i].entry;
    if (e.ns != ns) continue;
    const int64_t p = std::min(CommonPrefix(e.tokens, prompt), limit);
    if (p <= hit.p) continue;  // not longer than the best so far: ties keep the earlier candidate
    // Kinds were validated on insert, so the rules cannot fail here.
    auto usable = CanServeAt(*e.state, p);
    if (!usable.ok() || !*usable) {
      ++st_.skipped_untrimmable;
      continue;
    }
    hit.p = p;
    best = i;
  }
  if (best == slots_.size()) {
    ++st_.misses;
    st_.tokens_recomputed += prompt.size();
    return hit;
  }
  const CacheEntry& donor = *slots_[best].entry;
  // Pointer copies only: cheap enough to stay under the mutex, which keeps counters and view consistent.
  EMBER_ASSIGN_OR_RETURN(hit.view, donor.state->View(hit.p));
  slots_[best].last_used = ++tick_;
  slots_[best].last_used_us = NowMicros();
  hit.donor_tokens = static_cast<int64_t>(donor.tokens.size());
  ++st_.hits;
  st_.tokens_served += static_cast<uint64_t>(hit.p);
  st_.tokens_recomputed += prompt.size() - static_cast<size_t>(hit.p);
  return hit;
}

Status PromptCache::Insert(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state,
                           const std::string& ns) {
  if (state == nullptr) return InvalidArgument("prompt cache: insert without a state");
  if (static_cast<int64_t>(tokens.size()) != state->n_pos()) {
    return InvalidArgument("prompt cache: " + std::to_string(tokens.size()) + " tokens for a state of " +
                           std::to_string(state->n_pos()) + " positions");
  }
  EMBER_RETURN_IF_ERROR(ValidateStateKinds(*state));
  if (!enabled()) return Status::Ok();
  auto entry = std::make_shared<CacheEntry>();
  entry->tokens = std::move(tokens);
  entry->ns = ns;
  entry->bytes = state->bytes();
  EMBER_ASSIGN_OR_RETURN(entry->trimmable, FullyTrimmable(*state));
  entry->state = std::move(state);

  std::vector<std::shared_ptr<const CacheEntry>> victims;
  {
    MutexLock lock(&mu_);
    ++st_.inserts;
    if (entry->bytes > capacity_) {
      ++st_.oversize;
      if (spill_) victims.push_back(entry);
    } else {
      slots_.push_back(Slot{entry, ++tick_, NowMicros()});
      ChargeLocked(*entry->state);
      DropRedundantLocked(*entry, slots_.size() - 1);
      victims = EvictLocked(entry.get());
    }
  }
  if (spill_) Spill(victims);
  return Status::Ok();
}

// Duplicates (identical tokens) are replaced whatever their kind: the fresh entry serves exactly what
// they served, and keeping them leaks a full entry per repeat. Strict prefixes are dropped only when the
// fresh entry can be trimmed to their length, i.e. can serve them.
void PromptCache::DropRedundantLocked(const CacheEntry& fresh, size_t fresh_index) {
  const int64_t mro = fresh.state->min_reusable_offset();
  for (size_t i = slots_.size(); i-- > 0;) {
    if (i == fresh_index) continue;
    const CacheEntry& old = *slots_[i].entry;
    if (old.ns != fresh.ns) continue;
    if (old.tokens == fresh.tokens) {
      RemoveLocked(i);
      ++st_.replaced;
    } else if (fresh.trimmable && static_cast<int64_t>(old.tokens.size()) >= mro &&
               IsStrictPrefix(old.tokens, fresh.tokens)) {
      RemoveLocked(i);
      ++st_.superseded;
    } else {
      continue;
    }
    if (i < fresh_index) --fresh_index;
  }
}

std::vector<std::shared_ptr<const CacheEntry>> PromptCache::EvictLocked(const CacheEntry* fresh) {
  std::vector<std::shared_ptr<const CacheEntry>> victims;
  while (charged_bytes_ > capacity_) {
    size_t lru = slots_.size();
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].entry.get() == fresh) continue;
      if (lru == slots_.size() || slots_[i].last_used < slots_[lru].last_used) lru = i;
    }
    if (lru == slots_.size()) break;  // only the fresh entry is left
    victims.push_back(RemoveLocked(lru));
    ++st_.evictions;
  }
  return victims;
}

void PromptCache::Spill(const std::vector<std::shared_ptr<const CacheEntry>>& victims) {
  for (const auto& v : victims) {
    spill_(v);
    MutexLock lock(&mu_);
    ++st_.spills;
  }
}

std::shared_ptr<const CacheEntry> PromptCache::RemoveLocked(size_t i) {
  std::shared_ptr<const CacheEntry> e = std::move(slots_[i].entry);
  slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(i));
  UnchargeLocked(*e->state);
  return e;
}

void PromptCache::ChargeLocked(const EntryState& s) {
  s.ForEachBuffer([&](const void* id, size_t bytes) {
    mu_.AssertHeld();  // ForEachBuffer calls back synchronously, on this thread: mu_ is still held
    Charge& c = charges_[id];
    if (c.refs++ == 0) {
      c.bytes = bytes;
      charged_bytes_ += bytes;
    }
  });
}

void PromptCache::UnchargeLocked(const EntryState& s) {
  s.ForEachBuffer([&](const void* id, size_t) {
    mu_.AssertHeld();  // as in ChargeLocked
    auto it = charges_.find(id);
    if (it == charges_.end()) return;
    if (--it->second.refs == 0) {
      charged_bytes_ -= it->second.bytes;
      charges_.erase(it);
    }
  });
}

void PromptCache::Clear() {
  std::vector<Slot> dropped;
  {
    MutexLock lock(&mu_);
    dropped.swap(slots_);
    charges_.clear();
    charged_bytes_ = 0;
  }
  // `dropped` frees the states here, outside the mutex; nothing is spilled (§2.6).
}

void PromptCache::NoteBypass(int64_t prompt_tokens) {
  MutexLock lock(&mu_);
  ++st_.bypassed;
  st_.tokens_recomputed += static_cast<uint64_t>(std::max<int64_t>(prompt_tokens, 0));
}

void PromptCache::NoteCopiedBytes(uint64_t bytes) {
  MutexLock lock(&mu_);
  st_.cow_bytes_copied += bytes;
}

PromptCacheStats PromptCache::stats() const {
  MutexLock lock(&mu_);
  PromptCacheStats s = st_;
  s.entries = slots_.size();
  s.bytes = charged_bytes_;
  return s;
}

std::vector<std::shared_ptr<const CacheEntry>> PromptCache::EntriesByRecency() const {
  MutexLock lock(&mu_);
  std::vector<const Slot*> order;
  for (const Slot& s : slots_) order.push_back(&s);
  std::sort(order.begin(), order.end(), [](const Slot* a, const Slot* b) { return a->last_used < b->last_used; });
  std::vector<std::shared_ptr<const CacheEntry>> out;
  for (const Slot* s : order) out.push_back(s->entry);
  return out;
}

int64_t PromptCache::NowMicros() const { return env_->MonotonicMicros(); }

std::shared_ptr<const CacheEntry> PromptCache::FindExact(std::span<const int32_t> tokens,
                                                         const std::string& ns) const {
  MutexLock lock(&mu_);
  for (const Slot& s : slots_) {
    const CacheEntry& e = *s.entry;
    if (e.ns == ns && std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end())) return s.entry;
  }
  return nullptr;
}

std::vector<std::shared_ptr<const CacheEntry>> PromptCache::IdleSince(int64_t cutoff_us) const {
  MutexLock lock(&mu_);
  std::vector<const Slot*> idle;
  for (const Slot& s : slots_) {
    if (s.last_used_us <= cutoff_us) idle.push_back(&s);
  }
  std::sort(idle.begin(), idle.end(), [](const Slot* a, const Slot* b) { return a->last_used < b->last_used; });
  std::vector<std::shared_ptr<const CacheEntry>> out;
  for (const Slot* s : idle) out.push_back(s->entry);
  return out;
}

bool PromptCache::Remove(const CacheEntry* e, int64_t cutoff_us) {
  std::shared_ptr<const CacheEntry> removed;  // freed after the mutex is released
  MutexLock lock(&mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].entry.get() != e) continue;
    if (cutoff_us >= 0 && slots_[i].last_used_us > cutoff_us) return false;
    removed = RemoveLocked(i);
    return true;
  }
  return false;
}

}  // namespace ember
