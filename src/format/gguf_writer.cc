#include "format/gguf_writer.h"

#include <cstring>

#include "format/gguf_format.h"
#include "util/atomic_write.h"

namespace ember {
namespace {

template <typename T>
void Append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void AppendString(std::vector<uint8_t>& out, const std::string& s) {
  Append<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

std::vector<uint8_t> Tagged(GgufType t) {
  std::vector<uint8_t> out;
  Append<uint32_t>(out, static_cast<uint32_t>(t));
  return out;
}

template <typename T>
std::vector<uint8_t> NumArray(GgufType elem, const std::vector<T>& v) {
  auto out = Tagged(GgufType::kArray);
  Append<uint32_t>(out, static_cast<uint32_t>(elem));
  Append<uint64_t>(out, v.size());
  for (const T& x : v) Append<T>(out, x);
  return out;
}

}  // namespace

void GgufWriter::Put(const std::string& key, std::vector<uint8_t> encoded) {
  for (auto& kv : kv_) {
    if (kv.key == key) {
      kv.encoded = std::move(encoded);
      return;
    }
  }
  kv_.push_back({key, std::move(encoded)});
}

void GgufWriter::SetU8(const std::string& key, uint8_t v) { auto e = Tagged(GgufType::kU8); Append(e, v); Put(key, e); }
void GgufWriter::SetU32(const std::string& key, uint32_t v) { auto e = Tagged(GgufType::kU32); Append(e, v); Put(key, e); }
void GgufWriter::SetI32(const std::string& key, int32_t v) { auto e = Tagged(GgufType::kI32); Append(e, v); Put(key, e); }
void GgufWriter::SetU64(const std::string& key, uint64_t v) { auto e = Tagged(GgufType::kU64); Append(e, v); Put(key, e); }
void GgufWriter::SetF32(const std::string& key, float v) { auto e = Tagged(GgufType::kF32); Append(e, v); Put(key, e); }
void GgufWriter::SetBool(const std::string& key, bool v) {
  auto e = Tagged(GgufType::kBool);
  Append<uint8_t>(e, v ? 1 : 0);
  Put(key, e);
}
void GgufWriter::SetStr(const std::string& key, const std::string& v) {
  auto e = Tagged(GgufType::kString);
  AppendString(e, v);
  Put(key, e);
}
void GgufWriter::SetStrArray(const std::string& key, const std::vector<std::string>& v) {
  auto e = Tagged(GgufType::kArray);
  Append<uint32_t>(e, static_cast<uint32_t>(GgufType::kString));
  Append<uint64_t>(e, v.size());
  for (const auto& s : v) AppendString(e, s);
  Put(key, e);
}
void GgufWriter::SetI32Array(const std::string& key, const std::vector<int32_t>& v) {
  Put(key, NumArray(GgufType::kI32, v));
}
void GgufWriter::SetF32Array(const std::string& key, const std::vector<float>& v) {
  Put(key, NumArray(GgufType::kF32, v));
}
void GgufWriter::SetAlignment(uint32_t alignment) {
  alignment_ = alignment;
  SetU32("general.alignment", alignment);
}

Status GgufWriter::CheckTensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne,
                               uint64_t* bytes) const {
  if (name.empty() || name.size() >= 64) return InvalidArgument("tensor name '" + name + "' must be 1..63 bytes");
  if (ne.empty() || ne.size() > gguf::kMaxDims) return InvalidArgument("tensor '" + name + "' needs 1..4 dims");
  for (const auto& t : tensors_)
    if (t.name == name) return InvalidArgument("duplicate tensor '" + name + "'");
  const GgmlTypeTraits tr = TypeInfo(type);
  if (ne[0] % tr.block_elems != 0)
    return InvalidArgument("tensor '" + name + "': row length " + std::to_string(ne[0]) +
                           " is not a multiple of the " + tr.name + " block size " + std::to_string(tr.block_elems));
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  *bytes = n / tr.block_elems * tr.block_bytes;
  return Status::Ok();
}

Status GgufWriter::AddTensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne,
                             std::vector<uint8_t> data) {
  uint64_t bytes = 0;
  EMBER_RETURN_IF_ERROR(CheckTensor(name, type, ne, &bytes));
  if (bytes != data.size())
    return InvalidArgument("tensor '" + name + "': expected " + std::to_string(bytes) + " bytes, got " +
                           std::to_string(data.size()));
  tensors_.push_back({name, type, ne, std::move(data), bytes, nullptr});
  return Status::Ok();
}

Status GgufWriter::AddTensorLazy(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne,
                                 TensorMaker make) {
  uint64_t bytes = 0;
  EMBER_RETURN_IF_ERROR(CheckTensor(name, type, ne, &bytes));
  if (!make) return InvalidArgument("tensor '" + name + "': no maker");
  tensors_.push_back({name, type, ne, {}, bytes, std::move(make)});
  return Status::Ok();
}

StatusOr<const std::vector<uint8_t>*> GgufWriter::Bytes(const Tensor& t, std::vector<uint8_t>* scratch) const {
  if (!t.make) return &t.data;
  scratch->clear();
  EMBER_RETURN_IF_ERROR(t.make(scratch));
  if (scratch->size() != t.n_bytes)
    return Internal("tensor '" + t.name + "': its maker made " + std::to_string(scratch->size()) + " bytes, not " +
                    std::to_string(t.n_bytes));
  return static_cast<const std::vector<uint8_t>*>(scratch);
}

std::vector<uint8_t> GgufWriter::HeadBytes() const {
  std::vector<uint8_t> out;
  Append<uint32_t>(out, gguf::kMagic);
  Append<uint32_t>(out, 3);
  Append<uint64_t>(out, tensors_.size());
  Append<uint64_t>(out, kv_.size());
  for (const auto& kv : kv_) {
    AppendString(out, kv.key);
    out.insert(out.end(), kv.encoded.begin(), kv.encoded.end());
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    AppendString(out, t.name);
    Append<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) Append<uint64_t>(out, d);
    Append<uint32_t>(out, static_cast<uint32_t>(t.type));
    Append<uint64_t>(out, offset);
    offset += Padded(t.n_bytes);
  }
  out.resize(Padded(out.size()), 0);
  return out;
}

std::vector<uint8_t> GgufWriter::ToBytes() const {
  std::vector<uint8_t> out = HeadBytes();
  std::vector<uint8_t> scratch;
  for (const auto& t : tensors_) {
    StatusOr<const std::vector<uint8_t>*> data = Bytes(t, &scratch);
    if (!data.ok()) return {};
    out.insert(out.end(), (*data)->begin(), (*data)->end());
    out.resize(Padded(out.size()), 0);
  }
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // Streamed: the header, then each tensor from where it already lies or as its maker makes it (a model
  // is never copied whole).
  auto fill = [this](WritableFile& f) -> Status {
    const std::vector<uint8_t> head = HeadBytes();
    EMBER_RETURN_IF_ERROR(f.Append(head.data(), head.size()));
    const std::vector<uint8_t> pad(alignment_, 0);
    std::vector<uint8_t> scratch;  // a lazy tensor's bytes, one at a time
    for (const auto& t : tensors_) {
      EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t>* data, Bytes(t, &scratch));
      EMBER_RETURN_IF_ERROR(f.Append(data->data(), data->size()));
      EMBER_RETURN_IF_ERROR(f.Append(pad.data(), Padded(data->size()) - data->size()));
    }
    return Status::Ok();
  };
  // 0644 as before: a model file is not private the way a cache entry is.
  return WriteFileAtomically(*Env::Default(), dir, name, fill, 0644);
}

}  // namespace ember
