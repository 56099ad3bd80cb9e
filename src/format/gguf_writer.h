// GGUF v3 writer: metadata in insertion order, tensors aligned to general.alignment (default 32).
// Used by `ember gen-model` and by tests that make their own tiny (and deliberately broken) files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/ggml_types.h"
#include "format/gguf.h"
#include "util/status.h"

namespace ember {

class GgufWriter {
 public:
  // Setting a key twice replaces the earlier value (keeps its position).
  void SetU8(const std::string& key, uint8_t v);
  void SetU32(const std::string& key, uint32_t v);
  void SetI32(const std::string& key, int32_t v);
  void SetU64(const std::string& key, uint64_t v);
  void SetF32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetStr(const std::string& key, const std::string& v);
  void SetStrArray(const std::string& key, const std::vector<std::string>& v);
  void SetI32Array(const std::string& key, const std::vector<int32_t>& v);
  void SetF32Array(const std::string& key, const std::vector<float>& v);
  // general.alignment (a power of two); also written as metadata.
  void SetAlignment(uint32_t alignment);

  // ne in ggml order (ne[0] = row length, must be a multiple of the type's block size).
  // `data` must hold exactly the tensor's byte size.
  Status AddTensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne,
                   std::vector<uint8_t> data);

  std::vector<uint8_t> ToBytes() const;
  // Streams the file to path through util/atomic_write.h (temp file, fsync, rename, directory fsync): a
  // reader never sees a half-written model, a crash leaves the old file or the new one. Mode 0644.
  Status WriteFile(const std::string& path) const;

 private:
  struct Kv {
    std::string key;
    std::vector<uint8_t> encoded;  // type tag + value, GGUF encoding
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    std::vector<uint8_t> data;
  };
  void Put(const std::string& key, std::vector<uint8_t> encoded);
  // Everything before the first tensor's data: metadata, tensor infos, padding to the alignment.
  std::vector<uint8_t> HeadBytes() const;
  uint64_t Padded(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  std::vector<Kv> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace ember
