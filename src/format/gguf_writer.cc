#include "format/gguf_writer.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "format/gguf_format.h"

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

Status GgufWriter::AddTensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne,
                             std::vector<uint8_t> data) {
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
  const uint64_t bytes = n / tr.block_elems * tr.block_bytes;
  if (bytes != data.size())
    return InvalidArgument("tensor '" + name + "': expected " + std::to_string(bytes) + " bytes, got " +
                           std::to_string(data.size()));
  tensors_.push_back({name, type, ne, std::move(data)});
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::ToBytes() const {
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
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  const std::vector<uint8_t> bytes = ToBytes();
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("open", tmp, errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoStatus("write", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus("fsync", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus("rename", path, err);
  }
  return Status::Ok();
}

}  // namespace ember
