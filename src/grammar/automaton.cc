#include "grammar/automaton.h"

#include <algorithm>

#include "grammar/utf8.h"

namespace ember::grammar {

Automaton::Automaton(const Grammar& g) : g_(g) { Clear(); }

void Automaton::Clear() {
  frames_.clear();
  frame_ids_.clear();
  states_.clear();
  state_ids_.clear();
  trans_.clear();
  over_budget_ = false;
  total_work_ = 0;
  State st;
  BeginState();
  for (uint32_t alt : g_.rules[g_.root]) Expand(alt, -1, &st.frames, &st.accept);
  start_ = cut_ ? Cut() : InternState(std::move(st));
}

int32_t Automaton::InternFrame(uint32_t pos, int32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | static_cast<uint32_t>(parent);
  auto [it, added] = frame_ids_.emplace(key, static_cast<int32_t>(frames_.size()));
  if (added) frames_.push_back({pos, parent});
  return it->second;
}

void Automaton::BeginState() {
  visited_.clear();
  work_ = 0;
  cut_ = false;
}

int32_t Automaton::Cut() {
  over_budget_ = true;
  return kDead;
}

int32_t Automaton::InternState(State st) {
  total_work_ += st.frames.size();  // sorting, hashing and storing the stacks: time no expansion counts
  std::sort(st.frames.begin(), st.frames.end());
  st.frames.erase(std::unique(st.frames.begin(), st.frames.end()), st.frames.end());
  if (st.frames.size() > kMaxStacks) return Cut();
  if (st.frames.empty() && !st.accept) return kDead;
  std::string key;
  key.reserve(st.frames.size() * 4 + 8);
  key.push_back(st.accept ? 1 : 0);
  key.push_back(static_cast<char>(st.need));
  key.append(st.pending);
  key.push_back('\0');
  key.append(reinterpret_cast<const char*>(st.frames.data()), st.frames.size() * sizeof(int32_t));
  auto [it, added] = state_ids_.emplace(std::move(key), static_cast<int32_t>(states_.size()));
  if (added) {
    states_.push_back(std::move(st));
    trans_.resize(states_.size() * 256, kUnknown);
  }
  return it->second;
}

void Automaton::Expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, bool* accept) {
  if (cut_) return;
  todo_.clear();
  todo_.emplace_back(pos, parent);
  while (!todo_.empty()) {
    const auto [p, par] = todo_.back();
    todo_.pop_back();
    // The same (position, return frame) always expands to the same stacks: once is enough. This also
    // ends the cycles of nullable tail calls (("a"?)*), which grammar_checks allows.
    if (!visited_.insert((uint64_t{p} << 32) | static_cast<uint32_t>(par)).second) continue;
    ++total_work_;
    if (++work_ > g_.max_state_work) {
      cut_ = true;
      return;
    }
    const Element& e = g_.elements[p];
    switch (e.kind) {
      case ElementKind::kEnd:
        if (par < 0) {
          *accept = true;
        } else {
          todo_.emplace_back(frames_[par].pos, frames_[par].parent);
        }
        break;
      case ElementKind::kChars:
        if (!g_.classes[e.arg].empty()) out->push_back(InternFrame(p, par));
        break;
      case ElementKind::kRule: {
        const int32_t ret = g_.elements[p + 1].kind == ElementKind::kEnd ? par : InternFrame(p + 1, par);
        for (uint32_t alt : g_.rules[e.arg]) todo_.emplace_back(alt, ret);
        break;
      }
    }
  }
}

int32_t Automaton::Advance(const State& from, uint32_t cp) {
  State st;
  BeginState();
  total_work_ += from.frames.size();
  for (int32_t f : from.frames) {
    const Frame fr = frames_[f];
    if (g_.classes[g_.elements[fr.pos].arg].Contains(cp)) Expand(fr.pos + 1, fr.parent, &st.frames, &st.accept);
    if (cut_ || st.frames.size() > kMaxStacks * 4) return Cut();
  }
  return InternState(std::move(st));
}

// Inside a UTF-8 character: keep the stacks whose class holds some character starting with `pending`.
int32_t Automaton::Filter(const State& from, std::string pending, uint8_t need) {
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  static constexpr uint32_t kMax[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  const auto lead = static_cast<unsigned char>(pending[0]);
  uint32_t v = need == 2 ? (lead & 0x1F) : need == 3 ? (lead & 0x0F) : (lead & 0x07);
  for (size_t i = 1; i < pending.size(); ++i) v = (v << 6) | (static_cast<unsigned char>(pending[i]) & 0x3F);
  const unsigned rest = 6 * (need - static_cast<unsigned>(pending.size()));
  const uint32_t lo = std::max(v << rest, kMin[need]);
  const uint32_t hi = std::min((v << rest) | ((1u << rest) - 1), kMax[need]);
  if (lo > hi) return kDead;  // an overlong or out-of-range prefix
  State st;
  total_work_ += from.frames.size();  // inside a character: no expansion, but every stack is visited
  st.need = need;
  st.pending = std::move(pending);
  for (int32_t f : from.frames) {
    if (g_.classes[g_.elements[frames_[f].pos].arg].Intersects(lo, hi)) st.frames.push_back(f);
  }
  return InternState(std::move(st));
}

int32_t Automaton::Compute(int32_t s, uint8_t b) {
  const State from = states_[s];  // a copy: interning may move states_
  int32_t t = kDead;
  if (from.need == 0) {
    if (b < 0x80) {
      t = Advance(from, b);
    } else if (b >= 0xC2 && b <= 0xF4) {
      t = Filter(from, std::string(1, static_cast<char>(b)), b <= 0xDF ? 2 : b <= 0xEF ? 3 : 4);
    }
  } else if ((b & 0xC0) == 0x80) {
    std::string pending = from.pending + static_cast<char>(b);
    if (pending.size() < from.need) {
      t = Filter(from, std::move(pending), from.need);
    } else {
      uint32_t cp = 0;
      if (DecodeUtf8(pending, &cp) == pending.size()) t = Advance(from, cp);
    }
  }
  trans_[static_cast<size_t>(s) * 256 + b] = t;
  return t;
}

StateSnapshot Automaton::Export(int32_t s) const {
  StateSnapshot snap;
  if (s == kDead) return snap;  // imports as dead again
  const State& st = states_[s];
  snap.accept = st.accept;
  snap.pending = st.pending;
  for (int32_t f : st.frames) {
    std::vector<uint32_t> stack;
    for (int32_t p = f; p >= 0; p = frames_[p].parent) stack.push_back(frames_[p].pos);
    std::reverse(stack.begin(), stack.end());
    snap.stacks.push_back(std::move(stack));
  }
  return snap;
}

int32_t Automaton::Import(const StateSnapshot& snap) {
  State st;
  st.accept = snap.accept;
  st.pending = snap.pending;
  if (!st.pending.empty()) {
    const auto lead = static_cast<unsigned char>(st.pending[0]);
    st.need = lead <= 0xDF ? 2 : lead <= 0xEF ? 3 : 4;
  }
  for (const auto& stack : snap.stacks) {
    int32_t parent = -1;
    for (uint32_t pos : stack) parent = InternFrame(pos, parent);
    if (parent >= 0) st.frames.push_back(parent);
  }
  return InternState(std::move(st));
}

}  // namespace ember::grammar
