// libFuzzer target for the GGUF reader: any byte string must parse or fail with a Status — never crash,
// hang, read out of bounds, or allocate without bound. On success every accessor is exercised too, and
// the first row of every tensor of a supported type is dequantized: block decoders (scales, grids,
// E8M0 exponents) take any bits.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/gguf.h"
#include "format/quant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = ember::GgufFile::Parse(data, size, "fuzz.gguf");
  if (!file.ok()) return 0;
  const ember::GgufFile& g = **file;
  volatile uint64_t sink = 0;
  for (const auto& [key, value] : g.metadata()) {
    sink = sink + g.Int(key).ok() + g.Float(key).ok() + g.Str(key).ok();
    if (auto s = g.StrArray(key); s.ok()) for (auto v : *s) sink = sink + v.size();
    if (auto n = g.IntArray(key); n.ok()) for (auto v : *n) sink = sink + static_cast<uint64_t>(v);
    if (auto f = g.F32Array(key); f.ok()) sink = sink + f->size();
  }
  for (const auto& t : g.tensors()) {
    // Touch the first and last byte of every tensor: bounds validation must make this safe.
    if (t.n_bytes) sink = sink + t.data[0] + t.data[t.n_bytes - 1];
    const ember::GgmlTypeTraits tr = ember::TypeInfo(t.type);
    const uint64_t row = t.ne[0];
    if (!tr.supported || row == 0 || row % tr.block_elems != 0 || row > (1u << 16)) continue;
    if (ember::RowBytes(t.type, row) > t.n_bytes) continue;
    std::vector<float> out(row);
    if (ember::Dequantize(t.type, t.data, out.data(), row).ok()) sink = sink + static_cast<uint64_t>(out[0] == out[0]);
  }
  (void)sink;
  return 0;
}
