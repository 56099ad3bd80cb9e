#include "format/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "format/gguf_format.h"

namespace ember {
namespace {

// Bounds-checked little-endian cursor; every failure names the byte offset where it happened.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  Status Fail(const std::string& what) const { return Fail(what, pos_); }
  Status Fail(const std::string& what, uint64_t at) const {
    return Corrupt(name_ + ": " + what + " at byte " + std::to_string(at));
  }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (left() < sizeof(T)) return Fail(std::string("truncated file: cannot read ") + what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status Skip(uint64_t n, const char* what) {
    if (left() < n) return Fail(std::string("truncated file: ") + what + " runs past the end");
    pos_ += n;
    return Status::Ok();
  }
  Status String(std::string_view* out, uint64_t max_len, const char* what) {
    const uint64_t at = pos_;
    uint64_t len = 0;
    EMBER_RETURN_IF_ERROR(Read(&len, what));
    if (len > max_len) return Fail(std::string(what) + " length " + std::to_string(len) + " is absurd", at);
    if (len > left()) return Fail(std::string(what) + " length " + std::to_string(len) + " runs past the end", at);
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }
  const uint8_t* here() const { return data_ + pos_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& name_;
};

}  // namespace

uint64_t GgufScalarSize(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

namespace {

bool KnownType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

Status ReadScalar(Cursor& c, GgufType t, GgufValue* v) {
  const uint64_t at = c.pos();
  switch (t) {
    case GgufType::kU8: { uint8_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "uint8 value")); v->u = x; break; }
    case GgufType::kI8: { int8_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "int8 value")); v->i = x; break; }
    case GgufType::kU16: { uint16_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "uint16 value")); v->u = x; break; }
    case GgufType::kI16: { int16_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "int16 value")); v->i = x; break; }
    case GgufType::kU32: { uint32_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "uint32 value")); v->u = x; break; }
    case GgufType::kI32: { int32_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "int32 value")); v->i = x; break; }
    case GgufType::kU64: { uint64_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "uint64 value")); v->u = x; break; }
    case GgufType::kI64: { int64_t x; EMBER_RETURN_IF_ERROR(c.Read(&x, "int64 value")); v->i = x; break; }
    case GgufType::kF32: { float x; EMBER_RETURN_IF_ERROR(c.Read(&x, "float32 value")); v->f = x; break; }
    case GgufType::kF64: { double x; EMBER_RETURN_IF_ERROR(c.Read(&x, "float64 value")); v->f = x; break; }
    case GgufType::kBool: {
      uint8_t x;
      EMBER_RETURN_IF_ERROR(c.Read(&x, "bool value"));
      if (x > 1) return c.Fail("bool value " + std::to_string(x) + " is neither 0 nor 1", at);
      v->u = x;
      break;
    }
    default: return c.Fail("not a scalar type", at);
  }
  return Status::Ok();
}

Status ReadValue(Cursor& c, GgufType t, GgufValue* v, uint32_t depth);

// Arrays: numeric elements stay in place (pointer + count); strings are indexed as views.
Status ReadArray(Cursor& c, GgufValue* v, uint32_t depth) {
  const uint64_t at = c.pos();
  if (depth >= gguf::kMaxArrayDepth) return c.Fail("arrays nested too deeply", at);
  uint32_t raw_elem = 0;
  EMBER_RETURN_IF_ERROR(c.Read(&raw_elem, "array element type"));
  if (!KnownType(raw_elem)) return c.Fail("unknown array element type " + std::to_string(raw_elem), at);
  v->elem_type = static_cast<GgufType>(raw_elem);
  const uint64_t count_at = c.pos();
  EMBER_RETURN_IF_ERROR(c.Read(&v->count, "array length"));
  const uint64_t elem_size = GgufScalarSize(v->elem_type);
  // Every element takes at least this many bytes, so the count is bounded by what is left.
  const uint64_t min_elem = elem_size ? elem_size : (v->elem_type == GgufType::kString ? 8 : 12);
  if (v->count > c.left() / min_elem)
    return c.Fail("array length " + std::to_string(v->count) + " runs past the end", count_at);
  v->elems = c.here();
  if (elem_size) {
    if (v->elem_type == GgufType::kBool) {
      for (uint64_t k = 0; k < v->count; ++k)
        if (v->elems[k] > 1) return c.Fail("bool array element is neither 0 nor 1", c.pos() + k);
    }
    return c.Skip(v->count * elem_size, "array");  // no overflow: count <= left / elem_size
  }
  if (v->elem_type == GgufType::kString) {
    v->strings.reserve(v->count);
    for (uint64_t k = 0; k < v->count; ++k) {
      std::string_view s;
      EMBER_RETURN_IF_ERROR(c.String(&s, std::numeric_limits<uint64_t>::max(), "array string"));
      v->strings.push_back(s);
    }
    return Status::Ok();
  }
  for (uint64_t k = 0; k < v->count; ++k) {  // nested arrays: validated, exposed only as raw bytes
    GgufValue inner;
    EMBER_RETURN_IF_ERROR(ReadValue(c, GgufType::kArray, &inner, depth + 1));
  }
  return Status::Ok();
}

Status ReadValue(Cursor& c, GgufType t, GgufValue* v, uint32_t depth) {
  v->type = t;
  if (t == GgufType::kString)
    return c.String(&v->str, std::numeric_limits<uint64_t>::max(), "string value");
  if (t == GgufType::kArray) return ReadArray(c, v, depth);
  return ReadScalar(c, t, v);
}

// x rounded up to a multiple of a (a power of two), or false if that does not fit in 64 bits.
bool AlignUp(uint64_t x, uint64_t a, uint64_t* out) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(x, a - 1, &sum)) return false;
  *out = sum / a * a;
  return true;
}

}  // namespace

const char* GgufTypeName(GgufType t) {
  static const char* kNames[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                 "bool", "string", "array", "uint64", "int64", "float64"};
  const auto i = static_cast<uint32_t>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path, Env* env) {
  EMBER_ASSIGN_OR_RETURN(auto map, env->MapFile(path));
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->data_ = map->data();
  f->size_ = map->size();
  f->name_ = path;
  f->map_ = std::move(map);
  EMBER_RETURN_IF_ERROR(f->ParseAll());
  return f;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(const uint8_t* data, size_t size, std::string name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->data_ = data;
  f->size_ = size;
  f->name_ = std::move(name);
  EMBER_RETURN_IF_ERROR(f->ParseAll());
  return f;
}

namespace {

Status ParseTensorInfo(Cursor& c, GgufTensorInfo* t) {
  std::string_view name;
  EMBER_RETURN_IF_ERROR(c.String(&name, gguf::kMaxTensorNameLength, "tensor name"));
  t->name = std::string(name);
  const uint64_t dims_at = c.pos();
  EMBER_RETURN_IF_ERROR(c.Read(&t->n_dims, "tensor n_dims"));
  if (t->n_dims == 0 || t->n_dims > gguf::kMaxDims)
    return c.Fail("tensor '" + t->name + "' has n_dims " + std::to_string(t->n_dims) + " (must be 1..4)", dims_at);
  uint64_t n = 1;
  for (uint32_t d = 0; d < t->n_dims; ++d) {
    const uint64_t dim_at = c.pos();
    EMBER_RETURN_IF_ERROR(c.Read(&t->ne[d], "tensor dimension"));
    if (t->ne[d] == 0) return c.Fail("tensor '" + t->name + "' has a zero dimension", dim_at);
    if (t->ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))  // ggml's int64 ne < 0
      return c.Fail("tensor '" + t->name + "' has a negative dimension " +
                        std::to_string(static_cast<int64_t>(t->ne[d])), dim_at);
    if (t->ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n)
      return c.Fail("tensor '" + t->name + "' dimensions overflow", dim_at);
    n *= t->ne[d];
  }
  t->n_elements = n;
  const uint64_t type_at = c.pos();
  uint32_t raw_type = 0;
  EMBER_RETURN_IF_ERROR(c.Read(&raw_type, "tensor type"));
  auto info = GgmlTypeInfo(raw_type);
  if (!info) return c.Fail("tensor '" + t->name + "' has unknown type " + std::to_string(raw_type), type_at);
  t->type = static_cast<GgmlType>(raw_type);
  if (t->ne[0] % info->block_elems != 0)
    return c.Fail("tensor '" + t->name + "' row length " + std::to_string(t->ne[0]) +
                      " is not a multiple of the " + info->name + " block size", type_at);
  // n < 2^63 elements, but up to 8 bytes each (f32, f64): the byte size itself can wrap, and a wrapped
  // size would pass the bounds check below.
  if (__builtin_mul_overflow(n / info->block_elems, uint64_t{info->block_bytes}, &t->n_bytes))
    return c.Fail("tensor '" + t->name + "' byte size overflows (" + std::to_string(n) + " " + info->name +
                      " elements)", type_at);
  EMBER_RETURN_IF_ERROR(c.Read(&t->offset, "tensor offset"));
  return Status::Ok();
}

}  // namespace

Status GgufFile::ParseAll() {
  Cursor c(data_, size_, name_);
  uint32_t magic = 0;
  EMBER_RETURN_IF_ERROR(c.Read(&magic, "magic"));
  if (magic != gguf::kMagic) return c.Fail("bad magic (not a GGUF file)", 0);
  EMBER_RETURN_IF_ERROR(c.Read(&version_, "version"));
  if (version_ < gguf::kMinVersion || version_ > gguf::kMaxVersion) {
    std::string why = (version_ & 0xffff) == 0 ? " (a big-endian file?)" : "";
    return Unimplemented(name_ + ": unsupported GGUF version " + std::to_string(version_) + why +
                         " at byte 4; ember reads versions 2 and 3");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  EMBER_RETURN_IF_ERROR(c.Read(&n_tensors, "tensor count"));
  EMBER_RETURN_IF_ERROR(c.Read(&n_kv, "metadata count"));
  if (n_kv > c.left() / gguf::kMinKvBytes) return c.Fail("absurd metadata count " + std::to_string(n_kv), 16);
  if (n_tensors > c.left() / gguf::kMinTensorInfoBytes)
    return c.Fail("absurd tensor count " + std::to_string(n_tensors), 8);

  kv_.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    const uint64_t at = c.pos();
    std::string_view key;
    EMBER_RETURN_IF_ERROR(c.String(&key, gguf::kMaxKeyLength, "metadata key"));
    if (key.empty()) return c.Fail("empty metadata key", at);
    const uint64_t type_at = c.pos();
    uint32_t raw = 0;
    EMBER_RETURN_IF_ERROR(c.Read(&raw, "metadata value type"));
    if (!KnownType(raw))
      return c.Fail("key '" + std::string(key) + "' has unknown value type " + std::to_string(raw), type_at);
    GgufValue v;
    EMBER_RETURN_IF_ERROR(ReadValue(c, static_cast<GgufType>(raw), &v, 0));
    std::string skey(key);
    if (!index_.emplace(skey, kv_.size()).second) return c.Fail("duplicate metadata key '" + skey + "'", at);
    kv_.emplace_back(std::move(skey), std::move(v));
  }

  if (const GgufValue* a = Find("general.alignment")) {
    if (a->type != GgufType::kU32) return Corrupt(name_ + ": general.alignment must be uint32, found " +
                                                  GgufTypeName(a->type));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      return Corrupt(name_ + ": general.alignment " + std::to_string(a->u) + " is not a power of two");
    alignment_ = a->u;
  }

  tensors_.resize(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    const uint64_t at = c.pos();
    EMBER_RETURN_IF_ERROR(ParseTensorInfo(c, &tensors_[k]));
    if (!tensor_index_.emplace(tensors_[k].name, k).second)
      return c.Fail("duplicate tensor name '" + tensors_[k].name + "'", at);
  }
  if (!AlignUp(c.pos(), alignment_, &data_offset_)) return c.Fail("data section offset overflows", c.pos());
  if (n_tensors > 0 && data_offset_ > size_) return c.Fail("truncated file: data section missing", c.pos());
  if (data_offset_ > size_) data_offset_ = size_;  // metadata-only file without trailing padding

  // Bounds, alignment and overlap: sort by offset and check each ends before the next starts.
  std::vector<size_t> order(tensors_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  for (auto& t : tensors_) {
    if (t.offset % alignment_ != 0)
      return Corrupt(name_ + ": tensor '" + t.name + "' offset " + std::to_string(t.offset) +
                     " is not a multiple of the alignment " + std::to_string(alignment_));
    const uint64_t avail = size_ - data_offset_;
    if (t.offset > avail || t.n_bytes > avail - t.offset)
      return Corrupt(name_ + ": tensor '" + t.name + "' data [" + std::to_string(data_offset_ + t.offset) + ", +" +
                     std::to_string(t.n_bytes) + ") is out of bounds of the " + std::to_string(size_) +
                     "-byte file");
    t.data = data_ + data_offset_ + t.offset;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const auto& prev = tensors_[order[k - 1]];
    const auto& cur = tensors_[order[k]];
    if (prev.offset + prev.n_bytes > cur.offset)  // both within the data section: no overflow
      return Corrupt(name_ + ": tensors '" + prev.name + "' and '" + cur.name + "' overlap at byte " +
                     std::to_string(data_offset_ + cur.offset));
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<const GgufValue*> GgufFile::Typed(const std::string& key, GgufType want) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound(name_ + ": key '" + key + "' not found");
  if (v->type != want)
    return InvalidArgument(name_ + ": key '" + key + "': expected " + GgufTypeName(want) + ", found " +
                           GgufTypeName(v->type));
  return v;
}

StatusOr<uint8_t> GgufFile::U8(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kU8));
  return static_cast<uint8_t>(v->u);
}
StatusOr<uint32_t> GgufFile::U32(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kU32));
  return static_cast<uint32_t>(v->u);
}
StatusOr<int32_t> GgufFile::I32(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kI32));
  return static_cast<int32_t>(v->i);
}
StatusOr<uint64_t> GgufFile::U64(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kU64));
  return v->u;
}
StatusOr<float> GgufFile::F32(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kF32));
  return static_cast<float>(v->f);
}
StatusOr<bool> GgufFile::Bool(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kBool));
  return v->u != 0;
}
StatusOr<std::string> GgufFile::Str(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kString));
  return std::string(v->str);
}

namespace {
bool IsUnsigned(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kU16 || t == GgufType::kU32 || t == GgufType::kU64;
}
bool IsSigned(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}
}  // namespace

StatusOr<int64_t> GgufFile::Int(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound(name_ + ": key '" + key + "' not found");
  if (IsSigned(v->type)) return v->i;
  if (IsUnsigned(v->type)) {
    if (v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return InvalidArgument(name_ + ": key '" + key + "': value " + std::to_string(v->u) + " is out of range");
    return static_cast<int64_t>(v->u);
  }
  return InvalidArgument(name_ + ": key '" + key + "': expected an integer, found " + GgufTypeName(v->type));
}

StatusOr<double> GgufFile::Float(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound(name_ + ": key '" + key + "' not found");
  if (v->type == GgufType::kF32 || v->type == GgufType::kF64) return v->f;
  return InvalidArgument(name_ + ": key '" + key + "': expected a float, found " + GgufTypeName(v->type));
}

StatusOr<std::vector<std::string_view>> GgufFile::StrArray(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kArray));
  if (v->elem_type != GgufType::kString)
    return InvalidArgument(name_ + ": key '" + key + "': expected array of string, found array of " +
                           GgufTypeName(v->elem_type));
  return v->strings;
}

StatusOr<std::vector<int64_t>> GgufFile::IntArray(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kArray));
  std::vector<int64_t> out;
  out.reserve(v->count);
  const GgufType t = v->elem_type;
  for (uint64_t k = 0; k < v->count; ++k) {
    const uint8_t* p = v->elems + k * GgufScalarSize(t);
    switch (t) {
      case GgufType::kU8: out.push_back(Load<uint8_t>(p)); break;
      case GgufType::kBool: out.push_back(Load<uint8_t>(p) != 0 ? 1 : 0); break;
      case GgufType::kI8: out.push_back(Load<int8_t>(p)); break;
      case GgufType::kU16: out.push_back(Load<uint16_t>(p)); break;
      case GgufType::kI16: out.push_back(Load<int16_t>(p)); break;
      case GgufType::kU32: out.push_back(Load<uint32_t>(p)); break;
      case GgufType::kI32: out.push_back(Load<int32_t>(p)); break;
      case GgufType::kI64: out.push_back(Load<int64_t>(p)); break;
      case GgufType::kU64: {
        uint64_t x = Load<uint64_t>(p);
        if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return InvalidArgument(name_ + ": key '" + key + "': element " + std::to_string(k) + " out of range");
        out.push_back(static_cast<int64_t>(x));
        break;
      }
      default:
        return InvalidArgument(name_ + ": key '" + key + "': expected array of integers, found array of " +
                               GgufTypeName(t));
    }
  }
  return out;
}

StatusOr<std::vector<float>> GgufFile::F32Array(const std::string& key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, GgufType::kArray));
  if (v->elem_type != GgufType::kF32 && v->elem_type != GgufType::kF64)
    return InvalidArgument(name_ + ": key '" + key + "': expected array of float32, found array of " +
                           GgufTypeName(v->elem_type));
  std::vector<float> out(v->count);
  for (uint64_t k = 0; k < v->count; ++k)
    out[k] = v->elem_type == GgufType::kF32 ? Load<float>(v->elems + 4 * k)
                                            : static_cast<float>(Load<double>(v->elems + 8 * k));
  return out;
}

StatusOr<int64_t> GgufFile::IntOr(const std::string& key, int64_t fallback) const {
  return Has(key) ? Int(key) : StatusOr<int64_t>(fallback);
}
StatusOr<double> GgufFile::FloatOr(const std::string& key, double fallback) const {
  return Has(key) ? Float(key) : StatusOr<double>(fallback);
}
StatusOr<bool> GgufFile::BoolOr(const std::string& key, bool fallback) const {
  return Has(key) ? Bool(key) : StatusOr<bool>(fallback);
}
StatusOr<std::string> GgufFile::StrOr(const std::string& key, const std::string& fallback) const {
  return Has(key) ? Str(key) : StatusOr<std::string>(fallback);
}

}  // namespace ember
