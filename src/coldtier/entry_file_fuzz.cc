// libFuzzer target for cold-tier entry files and the KV state deserializer behind them: the input is
// an entry file (after one flags byte), read with ReadHeader and ReadEntry from an in-memory Env. Any
// bytes must read or fail with a Status: no crash, no out-of-bounds access, no allocation the file's
// own size does not justify.
//
// Random bytes almost never get past the header checksum, so the flags byte can repair the preamble
// before reading, letting mutations reach the header decoder and the KV deserializer:
//   bit 0  set the preamble's file_size to the real size
//   bit 1  recompute the header checksum (over header_length bytes, when they lie inside the file)
//   bit 2  ReadEntry verifies the tensor chunk checksums
// A state that loads is serialized again, deserialized and serialized once more: the two streams must
// be identical (Serialize is canonical, so a state that reads back differently is a bug).
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coldtier/entry_file.h"
#include "coldtier/entry_format.h"
#include "support/fault_injection_env.h"
#include "kv/byte_stream.h"
#include "kv/kv_state.h"

namespace {

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void Store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// Preamble field offsets (coldtier/entry_format.h).
constexpr size_t kHeaderLengthAt = 16, kFileSizeAt = 32, kChecksumAt = 40;

void Repair(std::vector<uint8_t>& f, uint8_t flags) {
  if (f.size() < ember::kPreambleSize) return;
  if (flags & 1) Store64(f.data() + kFileSizeAt, f.size());
  if (flags & 2) {
    const uint64_t len = Load64(f.data() + kHeaderLengthAt);
    if (len <= f.size() - ember::kPreambleSize) {
      const uint64_t seed = XXH3_64bits(f.data(), ember::kPreambleChecksummed);
      Store64(f.data() + kChecksumAt, XXH3_64bits_withSeed(f.data() + ember::kPreambleSize, len, seed));
    }
  }
}

void RoundTrip(const ember::KvState& state) {
  ember::VectorSink first;
  if (!state.Serialize(first).ok()) __builtin_trap();
  ember::SpanSource src(first.bytes().data(), first.bytes().size());
  auto again = ember::KvState::Deserialize(state.config(), src);
  if (!again.ok() || src.remaining() != 0) __builtin_trap();
  ember::VectorSink second;
  if (!again->Serialize(second).ok() || second.bytes() != first.bytes()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<uint8_t> file(data + 1, data + size);
  Repair(file, flags);

  ember::FaultInjectionEnv env;
  const std::string path = "/cache/fuzz.entry";
  env.PutDurableFile(path, std::move(file));
  auto header = ember::ReadHeader(env, path);
  if (!header.ok()) return 0;
  volatile int64_t sink = header->MinReusableOffset() + header->Trimmable() + header->tokens.size();
  auto entry = ember::ReadEntry(env, path, /*verify_tensors=*/(flags & 4) != 0);
  if (!entry.ok()) return 0;
  const ember::KvState& state = entry->state;
  if (state.n_pos() != static_cast<int64_t>(entry->header.tokens.size())) __builtin_trap();
  RoundTrip(state);
  if (state.CanTrimTo(state.n_pos() / 2)) {
    auto view = state.View(state.n_pos() / 2);
    if (!view.ok()) __builtin_trap();
    sink = sink + view->n_pos();
  }
  (void)sink;
  return 0;
}
