// GGUF v3 writer: metadata in insertion order, tensors aligned to general.alignment (default 32).
// Used by `ember gen-model` and by tests that make their own tiny (and deliberately broken) files.
#pragma once

#include <cstdint>
#include <functional>
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

  // A tensor whose bytes are made only when the file is written (WriteFile / ToBytes call `make` once,
  // in the order tensors were added, and drop the bytes after writing them): a model larger than memory
  // can be written. `make` must fill exactly the tensor's byte size.
  using TensorMaker = std::function<Status(std::vector<uint8_t>* data)>;
  Status AddTensorLazy(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne, TensorMaker make);

  // Status of a lazy tensor's maker is lost here: a maker that fails gives an empty result.
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
    uint64_t n_bytes = 0;
    TensorMaker make;  // set: data is made at write time
  };
  Status CheckTensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne, uint64_t* bytes) const;
  // The tensor's bytes: its data, or what its maker makes (checked against n_bytes) into *scratch.
  StatusOr<const std::vector<uint8_t>*> Bytes(const Tensor& t, std::vector<uint8_t>* scratch) const;
  void Put(const std::string& key, std::vector<uint8_t> encoded);
  // Everything before the first tensor's data: metadata, tensor infos, padding to the alignment.
  std::vector<uint8_t> HeadBytes() const;
  uint64_t Padded(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  std::vector<Kv> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace ember
