// GGUF reader (v2 and v3) over a memory map or a caller-owned buffer. Parsing validates everything a
// later reader would trust — lengths, counts, types, tensor bounds, alignment, overlap — and reports the
// first problem as a Corrupt/Unimplemented Status naming the file, what, and the byte offset. It never
// crashes, hangs, or allocates more than a small multiple of the input size.
//
// Thread-safety: a parsed GgufFile is immutable and safe to read from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/ggml_types.h"
#include "util/env.h"
#include "util/status.h"

namespace ember {

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// Bytes of one element of a fixed-size metadata type; 0 for string and array.
uint64_t GgufScalarSize(GgufType t);
const char* GgufTypeName(GgufType t);  // "uint32", "string", "array"

// One metadata value. Strings point into the file's bytes (valid while the GgufFile lives).
struct GgufValue {
  GgufType type = GgufType::kU8;
  uint64_t u = 0;          // unsigned ints and bool
  int64_t i = 0;           // signed ints
  double f = 0;            // floats
  std::string_view str;    // kString
  // kArray: element type, count, and for numeric elements the packed little-endian bytes.
  GgufType elem_type = GgufType::kU8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;
  std::vector<std::string_view> strings;  // kArray of kString
};

struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<uint64_t, 4> ne = {1, 1, 1, 1};  // ggml order: ne[0] is the contiguous (row) length
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;    // relative to the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the file's bytes
};

class GgufFile {
 public:
  // Maps (env->MapFile) and parses `path`.
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path, Env* env = Env::Default());
  // Parses a buffer the caller keeps alive for the GgufFile's lifetime (fuzzing, tests). `name` is used
  // in error messages.
  static StatusOr<std::unique_ptr<GgufFile>> Parse(const uint8_t* data, size_t size, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  size_t file_size() const { return size_; }
  const uint8_t* bytes() const { return data_; }
  // The mapping bytes() lies in (Open), or nullptr (Parse of a caller's buffer).
  const MappedRegion* region() const { return map_.get(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  bool Has(const std::string& key) const { return index_.count(key) != 0; }
  const GgufValue* Find(const std::string& key) const;

  // Strictly typed accessors: the error names the key, the expected and the actual type.
  StatusOr<uint8_t> U8(const std::string& key) const;
  StatusOr<uint32_t> U32(const std::string& key) const;
  StatusOr<int32_t> I32(const std::string& key) const;
  StatusOr<uint64_t> U64(const std::string& key) const;
  StatusOr<float> F32(const std::string& key) const;
  StatusOr<bool> Bool(const std::string& key) const;
  StatusOr<std::string> Str(const std::string& key) const;
  // Any integer type whose value fits in int64 (converters disagree on u32 vs i32 for some keys).
  StatusOr<int64_t> Int(const std::string& key) const;
  // f32 or f64.
  StatusOr<double> Float(const std::string& key) const;
  StatusOr<std::vector<std::string_view>> StrArray(const std::string& key) const;
  StatusOr<std::vector<int64_t>> IntArray(const std::string& key) const;    // any integer element type
  StatusOr<std::vector<float>> F32Array(const std::string& key) const;      // f32 (or f64) elements
  // Defaults for optional keys; a present key of the wrong type is still an error.
  StatusOr<int64_t> IntOr(const std::string& key, int64_t fallback) const;
  StatusOr<double> FloatOr(const std::string& key, double fallback) const;
  StatusOr<bool> BoolOr(const std::string& key, bool fallback) const;
  StatusOr<std::string> StrOr(const std::string& key, const std::string& fallback) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(const std::string& name) const;

 private:
  GgufFile() = default;
  Status ParseAll();
  StatusOr<const GgufValue*> Typed(const std::string& key, GgufType want) const;

  std::unique_ptr<MappedRegion> map_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace ember
