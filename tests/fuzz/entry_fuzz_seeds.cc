// Writes the seed corpus of entry_file_fuzz (tests/fuzz/entry_file_corpus/) with the real writer
// (WriteEntry): small entries of an all-full state (format version 1 stream), a state with window
// layers that released blocks (version 2), an f32 one, and a hybrid with recurrent layers (kv stream
// version 3 in entry format version 2), each behind the flags byte the fuzzer reads
// (src/coldtier/entry_file_fuzz.cc). Run after a format change:
//   cmake --build build-fuzz --target entry_fuzz_seeds && build-fuzz/entry_fuzz_seeds tests/fuzz/entry_file_corpus
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "coldtier/entry_file.h"
#include "support/fault_injection_env.h"
#include "kv/kv_state.h"

namespace {

using namespace ember;

KvState MakeState(const KvConfig& c, int64_t n) {
  KvState s = std::move(KvState::Create(c)).value();
  if (!s.Reserve(n).ok()) std::abort();
  std::vector<float> k(c.kv_dim_k()), v(c.kv_dim_v());
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.kind(l).kind != StateKind::kRecurrent) continue;
    for (int64_t i = 0; i < c.kind(l).state_floats; ++i) s.RecurrentState(l)[i] = l * 10.0f + n - i * 0.5f;
  }
  for (int64_t p = 0; p < n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      if (c.kind(l).kind == StateKind::kRecurrent) continue;
      for (int64_t i = 0; i < c.kv_dim_k(); ++i) k[i] = l * 100.0f + p + i * 0.125f;
      for (int64_t i = 0; i < c.kv_dim_v(); ++i) v[i] = -(l * 100.0f + p + i * 0.25f);
      s.StoreK(l, p, k.data());
      s.StoreV(l, p, v.data());
    }
  }
  s.Commit(n);
  return s;
}

bool WriteSeed(const std::string& out_dir, const std::string& name, const KvConfig& c, int64_t n,
               const std::vector<uint8_t>& flag_variants) {
  FaultInjectionEnv env;
  const KvState state = MakeState(c, n);
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < n; ++i) tokens.push_back(static_cast<int32_t>(1000 + i));
  const EntryView view{"ident-0123", "ns/tenant", tokens, &state};
  if (!env.CreateDirs("/d").ok() || !WriteEntry(env, "/d", name, view).ok()) return false;
  auto bytes = env.ReadFile("/d/" + name + ".entry");
  if (!bytes.ok()) return false;
  for (uint8_t flags : flag_variants) {
    std::ofstream f(out_dir + "/" + name + "_flags" + std::to_string(flags), std::ios::binary);
    f.put(static_cast<char>(flags));
    f.write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
    if (!f) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: entry_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  KvConfig full = KvConfig::Uniform(2, 2, 4, 3, KvDtype::kF16, 4);
  KvConfig window = KvConfig::Uniform(3, 1, 4, 4, KvDtype::kF16, 4);
  window.kinds = {{StateKind::kWindow, 4}, {StateKind::kFull, 0}, {StateKind::kWindow, 4}};
  KvConfig f32 = KvConfig::Uniform(1, 1, 2, 2, KvDtype::kF32, 2);
  KvConfig hybrid = KvConfig::Uniform(3, 1, 4, 4, KvDtype::kF16, 4);
  hybrid.kinds = {{StateKind::kRecurrent, 0, 6}, {StateKind::kFull, 0, 0}, {StateKind::kRecurrent, 0, 3}};
  const bool ok = WriteSeed(out, "full_f16", full, 6, {0, 7}) &&  // 6 positions: a partial last block
                  WriteSeed(out, "window_f16", window, 20, {3}) &&  // window layers hold from 12
                  WriteSeed(out, "f32", f32, 3, {4}) &&
                  WriteSeed(out, "recurrent_f16", hybrid, 5, {3, 7});  // entry version 2, kv version 3
  if (!ok) std::fprintf(stderr, "entry_fuzz_seeds: writing failed\n");
  return ok ? 0 : 1;
}
