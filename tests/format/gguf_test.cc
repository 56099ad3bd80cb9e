// GGUF reader: round trips through the writer, the typed accessors, and one named test per kind of
// corruption (each must be a clear Status naming the file and the byte offset, never a crash).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "format/gguf.h"
#include "format/gguf_format.h"
#include "format/gguf_writer.h"

namespace ember {
namespace {

// Raw little-endian byte builder for hand-made (broken) files.
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return put<uint32_t>(gguf::kMagic).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
  Bytes& pad(size_t align) {
    b.resize((b.size() + align - 1) / align * align, 0);
    return *this;
  }
};

StatusOr<std::unique_ptr<GgufFile>> ParseBytes(const std::vector<uint8_t>& b) {
  return GgufFile::Parse(b.data(), b.size(), "test.gguf");
}

void ExpectCorrupt(const std::vector<uint8_t>& b, const std::string& fragment) {
  auto f = ParseBytes(b);
  ASSERT_FALSE(f.ok()) << "expected failure containing: " << fragment;
  EXPECT_NE(f.status().message().find(fragment), std::string::npos) << f.status().ToString();
  EXPECT_NE(f.status().message().find("test.gguf"), std::string::npos) << f.status().ToString();
}

GgufWriter SampleWriter() {
  GgufWriter w;
  w.SetStr("general.architecture", "llama");
  w.SetU32("llama.block_count", 2);
  w.SetI32("answer", -42);
  w.SetU64("big", 1ull << 40);
  w.SetF32("llama.rope.freq_base", 10000.0f);
  w.SetBool("flag", true);
  w.SetU8("small", 7);
  w.SetStrArray("tokenizer.ggml.tokens", {"a", "b", "", "ünï"});
  w.SetI32Array("types", {1, 2, 3});
  w.SetF32Array("scores", {0.5f, -1.25f});
  std::vector<uint8_t> t1(4 * 8 * 2);
  for (size_t i = 0; i < t1.size(); ++i) t1[i] = static_cast<uint8_t>(i);
  EXPECT_TRUE(w.AddTensor("t1", GgmlType::F32, {8, 2}, t1).ok());
  EXPECT_TRUE(w.AddTensor("t2", GgmlType::Q8_0, {64}, std::vector<uint8_t>(68, 1)).ok());
  return w;
}

TEST(Gguf, RoundTripsMetadataAndTensors) {
  auto bytes = SampleWriter().ToBytes();
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.Str("general.architecture"), "llama");
  EXPECT_EQ(*g.U32("llama.block_count"), 2u);
  EXPECT_EQ(*g.I32("answer"), -42);
  EXPECT_EQ(*g.U64("big"), 1ull << 40);
  EXPECT_FLOAT_EQ(*g.F32("llama.rope.freq_base"), 10000.0f);
  EXPECT_TRUE(*g.Bool("flag"));
  EXPECT_EQ(*g.U8("small"), 7);
  EXPECT_EQ(*g.Int("answer"), -42);
  EXPECT_EQ(*g.Int("llama.block_count"), 2);
  auto toks = g.StrArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(toks.ok());
  ASSERT_EQ(toks->size(), 4u);
  EXPECT_EQ((*toks)[3], "ünï");
  EXPECT_EQ((*toks)[2], "");
  EXPECT_EQ(*g.IntArray("types"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(*g.F32Array("scores"), (std::vector<float>{0.5f, -1.25f}));
  ASSERT_EQ(g.tensors().size(), 2u);
  const GgufTensorInfo* t1 = g.FindTensor("t1");
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->ne[0], 8u);
  EXPECT_EQ(t1->ne[1], 2u);
  EXPECT_EQ(t1->n_bytes, 64u);
  EXPECT_EQ(t1->data[5], 5);
  EXPECT_EQ((t1->data - g.bytes()) % 32, 0);
  EXPECT_EQ(g.FindTensor("t2")->n_bytes, 68u);
  EXPECT_EQ(g.FindTensor("nope"), nullptr);
}

TEST(Gguf, TypedAccessorErrorsNameKeyExpectedAndActual) {
  auto bytes = SampleWriter().ToBytes();
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok());
  auto bad = (*f)->U32("general.architecture");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'general.architecture'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("expected uint32"), std::string::npos);
  EXPECT_NE(bad.status().message().find("found string"), std::string::npos);
  auto missing = (*f)->U32("llama.nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("llama.nope"), std::string::npos);
  EXPECT_FALSE((*f)->StrArray("types").ok());
  EXPECT_FALSE((*f)->F32Array("tokenizer.ggml.tokens").ok());
  EXPECT_EQ(*(*f)->IntOr("absent", 9), 9);
  EXPECT_FALSE((*f)->IntOr("general.architecture", 9).ok());  // present with the wrong type is an error
}

TEST(Gguf, ReadsVersion2AndCustomAlignment) {
  GgufWriter w;
  w.SetAlignment(64);
  ASSERT_TRUE(w.AddTensor("a", GgmlType::F32, {3}, std::vector<uint8_t>(12, 0)).ok());
  ASSERT_TRUE(w.AddTensor("b", GgmlType::F16, {5}, std::vector<uint8_t>(10, 0)).ok());
  auto bytes = w.ToBytes();
  bytes[4] = 2;  // version 2 shares the v3 layout for little-endian files
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 2u);
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset() % 64, 0u);
  EXPECT_EQ((*f)->FindTensor("b")->offset, 64u);
}

TEST(Gguf, OpensFromDiskThroughMmap) {
  auto path = std::filesystem::temp_directory_path() / "ember_gguf_open_test.gguf";
  ASSERT_TRUE(SampleWriter().WriteFile(path.string()).ok());
  auto f = GgufFile::Open(path.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->tensors().size(), 2u);
  std::filesystem::remove(path);
  auto missing = GgufFile::Open(path.string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(GgufCorrupt, BadMagic) {
  auto b = SampleWriter().ToBytes();
  b[0] = 'X';
  ExpectCorrupt(b, "bad magic");
}

TEST(GgufCorrupt, EmptyFile) { ExpectCorrupt({}, "truncated"); }

TEST(GgufCorrupt, UnsupportedVersion) {
  for (uint32_t v : {1u, 4u, 0x03000000u}) {
    Bytes b;
    b.header(0, 0, v);
    auto f = ParseBytes(b.b);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(f.status().message().find("unsupported GGUF version"), std::string::npos);
  }
}

TEST(GgufCorrupt, TruncatedAtEveryPrefix) {
  auto full = SampleWriter().ToBytes();
  auto parsed = ParseBytes(full);
  ASSERT_TRUE(parsed.ok());
  const size_t need = (*parsed)->FindTensor("t2")->data - (*parsed)->bytes() + 68;
  for (size_t n = 0; n < need; ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    auto f = ParseBytes(cut);
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(f.status().code(), StatusCode::kCorrupt) << f.status().ToString();
  }
}

TEST(GgufCorrupt, StringLengthPastEnd) {
  Bytes b;
  b.header(0, 1).put<uint64_t>(5).b.insert(b.b.end(), {'a', 'b', 'c', 'd', 'e'});
  b.put<uint32_t>(static_cast<uint32_t>(GgufType::kString)).put<uint64_t>(1000).put<uint8_t>('x');
  ExpectCorrupt(b.b, "runs past the end");
}

TEST(GgufCorrupt, AbsurdKeyLength) {
  Bytes b;
  b.header(0, 1).put<uint64_t>(1ull << 62);
  b.b.resize(b.b.size() + 32, 'k');
  ExpectCorrupt(b.b, "metadata key length");
}

TEST(GgufCorrupt, ArrayLengthPastEnd) {
  Bytes b;
  b.header(0, 1).str("arr").put<uint32_t>(static_cast<uint32_t>(GgufType::kArray));
  b.put<uint32_t>(static_cast<uint32_t>(GgufType::kU32)).put<uint64_t>(1ull << 60).put<uint32_t>(1);
  ExpectCorrupt(b.b, "array length");
}

TEST(GgufCorrupt, StringArrayLengthPastEnd) {
  Bytes b;
  b.header(0, 1).str("arr").put<uint32_t>(static_cast<uint32_t>(GgufType::kArray));
  b.put<uint32_t>(static_cast<uint32_t>(GgufType::kString)).put<uint64_t>(3).str("a").put<uint64_t>(99);
  ExpectCorrupt(b.b, "runs past the end");
}

TEST(GgufCorrupt, AbsurdCounts) {
  Bytes kv;
  kv.header(0, 1ull << 40);
  ExpectCorrupt(kv.b, "absurd metadata count");
  Bytes tensors;
  tensors.header(1ull << 50, 0);
  ExpectCorrupt(tensors.b, "absurd tensor count");
}

TEST(GgufCorrupt, UnknownValueType) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(99).put<uint64_t>(0);
  ExpectCorrupt(b.b, "unknown value type 99");
}

TEST(GgufCorrupt, BadBoolAndDuplicateKey) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(static_cast<uint32_t>(GgufType::kBool)).put<uint8_t>(7);
  ExpectCorrupt(b.b, "neither 0 nor 1");
  Bytes d;
  d.header(0, 2);
  for (int i = 0; i < 2; ++i) d.str("k").put<uint32_t>(static_cast<uint32_t>(GgufType::kU8)).put<uint8_t>(1);
  ExpectCorrupt(d.b, "duplicate metadata key");
}

TEST(GgufCorrupt, NestedArraysTooDeep) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(static_cast<uint32_t>(GgufType::kArray));
  for (uint32_t d = 0; d < gguf::kMaxArrayDepth + 1; ++d)
    b.put<uint32_t>(static_cast<uint32_t>(GgufType::kArray)).put<uint64_t>(1);
  b.b.resize(b.b.size() + 64, 0);
  ExpectCorrupt(b.b, "nested too deeply");
}

// One tensor info with the given fields, then the data section.
std::vector<uint8_t> OneTensor(uint32_t n_dims, std::vector<uint64_t> ne, uint32_t type, uint64_t offset,
                               size_t data_bytes) {
  Bytes b;
  b.header(1, 0).str("w").put<uint32_t>(n_dims);
  for (uint64_t d : ne) b.put<uint64_t>(d);
  b.put<uint32_t>(type).put<uint64_t>(offset).pad(32);
  b.b.resize(b.b.size() + data_bytes, 0);
  return b.b;
}

TEST(GgufCorrupt, TensorTooManyDims) { ExpectCorrupt(OneTensor(5, {1, 1, 1, 1, 1}, 0, 0, 64), "n_dims 5"); }
TEST(GgufCorrupt, TensorZeroDims) { ExpectCorrupt(OneTensor(0, {}, 0, 0, 64), "n_dims 0"); }
TEST(GgufCorrupt, UnknownTensorType) { ExpectCorrupt(OneTensor(1, {4}, 77, 0, 64), "unknown type 77"); }
TEST(GgufCorrupt, DimensionOverflow) {
  ExpectCorrupt(OneTensor(3, {1ull << 32, 1ull << 32, 4}, 0, 0, 64), "dimensions overflow");
}
// ne = 2^31 x 2^31 f32: 2^62 elements fit, but 2^64 bytes wrap to 0, which would pass the bounds check.
TEST(GgufCorrupt, TensorByteSizeOverflow) {
  ExpectCorrupt(OneTensor(2, {1ull << 31, 1ull << 31}, 0, 0, 64), "byte size overflows");
  ExpectCorrupt(OneTensor(1, {(1ull << 61) + 1}, 28, 0, 64), "byte size overflows");  // f64
  // Quantized types stay below 2^64 for any element count < 2^63: out of bounds, not wrapped.
  ExpectCorrupt(OneTensor(2, {1ull << 32, 1ull << 30}, 8, 0, 64), "out of bounds");
}
TEST(GgufCorrupt, NegativeDimension) {
  ExpectCorrupt(OneTensor(1, {~0ull}, 0, 0, 64), "negative dimension -1");
  ExpectCorrupt(OneTensor(2, {4, 1ull << 63}, 0, 0, 64), "negative dimension");
}
TEST(GgufCorrupt, OffsetPlusSizeCannotWrap) {
  // offset + n_bytes would wrap past 2^64 to a small number; each is checked against what is left.
  ExpectCorrupt(OneTensor(1, {16}, 0, ~0ull - 31, 64), "out of bounds");
}
TEST(GgufCorrupt, ArrayByteSizeCannotWrap) {
  // (2^61 + 1) u64 elements are 2^64 + 8 bytes: the count is refused before anything is multiplied.
  Bytes b;
  b.header(0, 1).str("arr").put<uint32_t>(static_cast<uint32_t>(GgufType::kArray));
  b.put<uint32_t>(static_cast<uint32_t>(GgufType::kU64)).put<uint64_t>((1ull << 61) + 1).put<uint64_t>(1);
  ExpectCorrupt(b.b, "array length");
}
TEST(GgufCorrupt, StringLengthsNearTheTopOfUint64) {
  Bytes key;
  key.header(0, 1).put<uint64_t>(~0ull).b.resize(64, 'k');
  ExpectCorrupt(key.b, "metadata key length");
  Bytes value;
  value.header(0, 1).str("k").put<uint32_t>(static_cast<uint32_t>(GgufType::kString)).put<uint64_t>(~0ull - 7);
  value.b.resize(value.b.size() + 32, 'v');
  ExpectCorrupt(value.b, "string value length");
  Bytes elem;
  elem.header(0, 1).str("k").put<uint32_t>(static_cast<uint32_t>(GgufType::kArray));
  elem.put<uint32_t>(static_cast<uint32_t>(GgufType::kString)).put<uint64_t>(1).put<uint64_t>(~0ull);
  elem.b.resize(elem.b.size() + 32, 'v');
  ExpectCorrupt(elem.b, "array string length");
}
TEST(GgufCorrupt, HugeAlignmentLeavesNoDataSection) {
  Bytes b;
  b.header(1, 1).str("general.alignment").put<uint32_t>(static_cast<uint32_t>(GgufType::kU32)).put<uint32_t>(1u << 31);
  b.str("w").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(0);
  b.b.resize(b.b.size() + 64, 0);
  ExpectCorrupt(b.b, "data section missing");
}
TEST(GgufCorrupt, RowNotMultipleOfBlock) { ExpectCorrupt(OneTensor(1, {33}, 8, 0, 64), "block size"); }
TEST(GgufCorrupt, MisalignedOffset) { ExpectCorrupt(OneTensor(1, {4}, 0, 4, 64), "not a multiple of the alignment"); }
TEST(GgufCorrupt, DataOutOfBounds) { ExpectCorrupt(OneTensor(1, {64}, 0, 0, 100), "out of bounds"); }
TEST(GgufCorrupt, OffsetFarOutOfBounds) { ExpectCorrupt(OneTensor(1, {4}, 0, 1ull << 62, 64), "out of bounds"); }

TEST(GgufCorrupt, OverlappingTensors) {
  Bytes b;
  b.header(2, 0);
  b.str("a").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(0);
  b.str("b").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(32);
  b.pad(32);
  b.b.resize(b.b.size() + 128, 0);
  ExpectCorrupt(b.b, "overlap");
}

TEST(GgufCorrupt, DuplicateTensorName) {
  Bytes b;
  b.header(2, 0);
  for (uint64_t off : {0, 32}) b.str("a").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(off);
  b.pad(32);
  b.b.resize(b.b.size() + 64, 0);
  ExpectCorrupt(b.b, "duplicate tensor name");
}

TEST(GgufCorrupt, BadAlignment) {
  Bytes b;
  b.header(0, 1).str("general.alignment").put<uint32_t>(static_cast<uint32_t>(GgufType::kU32)).put<uint32_t>(48);
  auto f = ParseBytes(b.b);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("not a power of two"), std::string::npos);
}

TEST(GgufWriter, RejectsBadTensors) {
  GgufWriter w;
  EXPECT_FALSE(w.AddTensor("x", GgmlType::Q8_0, {31}, std::vector<uint8_t>(34)).ok());
  EXPECT_FALSE(w.AddTensor("x", GgmlType::F32, {4}, std::vector<uint8_t>(15)).ok());
  EXPECT_FALSE(w.AddTensor(std::string(64, 'n'), GgmlType::F32, {1}, std::vector<uint8_t>(4)).ok());
  EXPECT_TRUE(w.AddTensor("x", GgmlType::F32, {1}, std::vector<uint8_t>(4)).ok());
  EXPECT_FALSE(w.AddTensor("x", GgmlType::F32, {1}, std::vector<uint8_t>(4)).ok());
}

}  // namespace
}  // namespace ember
