#include "coldtier/entry_file.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "coldtier/entry_format.h"
#include "coldtier/tensor_stream.h"
#include "util/atomic_write.h"

namespace ember {

namespace {

// ---- Little-endian encoding (the format is defined little-endian; ember targets x86-64/aarch64 LE) ----
class Encoder {
 public:
  template <typename T>
  void Put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.insert(out_.end(), b, b + sizeof(T));
  }
  void PutStr(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Bounds-checked reader: the first failure sticks and names the field, so parsing code stays linear.
class Decoder {
 public:
  Decoder(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  T Get(const char* field) {
    T v{};
    if (Need(sizeof(T), field)) {
      std::memcpy(&v, p_ + pos_, sizeof(T));
      pos_ += sizeof(T);
    }
    return v;
  }
  std::string GetStr(const char* field) {
    uint32_t len = Get<uint32_t>(field);
    if (!Need(len, field)) return {};
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }
  bool Need(uint64_t n, const char* field) {
    if (failed_ == nullptr && n > n_ - pos_) failed_ = field;
    return failed_ == nullptr;
  }
  const char* failed() const { return failed_; }
  size_t remaining() const { return n_ - pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const char* failed_ = nullptr;
};

uint64_t AlignUp(uint64_t v) { return (v + kEntryAlign - 1) / kEntryAlign * kEntryAlign; }

uint32_t EntryVersion(const KvConfig& c) {
  return c.has_recurrent() ? kEntryFormatVersionRecurrent : kEntryFormatVersion;
}

void EncodeConfig(Encoder& e, const KvConfig& c, int64_t min_reusable) {
  e.Put<int32_t>(c.n_layer);
  e.Put<int32_t>(c.n_kv_head);
  e.Put<int32_t>(c.head_dim_k);
  e.Put<int32_t>(c.head_dim_v);
  e.Put<int32_t>(c.block_size);
  e.Put<uint8_t>(static_cast<uint8_t>(c.dtype));
  for (int i = 0; i < 3; ++i) e.Put<uint8_t>(0);
  for (int32_t l = 0; l < c.n_layer; ++l) {
    LayerStateSpec spec = c.kinds.empty() ? LayerStateSpec{} : c.kinds[l];
    e.Put<uint8_t>(static_cast<uint8_t>(spec.kind));
    e.Put<uint8_t>(static_cast<uint8_t>(c.dtype));
    e.Put<uint16_t>(0);
    e.Put<int32_t>(spec.window);
    e.Put<int64_t>(min_reusable);
    if (EntryVersion(c) == kEntryFormatVersionRecurrent) e.Put<int64_t>(spec.state_floats);
  }
}

std::vector<uint8_t> EncodeHeader(const EntryView& entry, const TensorRef& kv) {
  Encoder e;
  e.PutStr(entry.identity);
  e.PutStr(entry.ns);
  e.Put<uint64_t>(entry.tokens.size());
  for (int32_t t : entry.tokens) e.Put<int32_t>(t);
  EncodeConfig(e, entry.state->config(), entry.state->min_reusable_offset());
  e.Put<int64_t>(entry.state->n_pos());
  e.Put<uint32_t>(1);
  e.PutStr(kv.name);
  e.Put<uint64_t>(kv.offset);
  e.Put<uint64_t>(kv.size);
  e.Put<uint64_t>(kv.chunk_size);
  e.Put<uint32_t>(static_cast<uint32_t>(kv.chunk_checksums.size()));
  for (uint64_t s : kv.chunk_checksums) e.Put<uint64_t>(s);
  return std::move(e.bytes());
}

std::vector<uint8_t> EncodePreamble(uint32_t version, const std::vector<uint8_t>& header, uint64_t data_offset,
                                    uint64_t file_size) {
  Encoder e;
  e.Put<uint64_t>(kEntryMagic);
  e.Put<uint32_t>(version);
  e.Put<uint32_t>(0);
  e.Put<uint64_t>(header.size());
  e.Put<uint64_t>(data_offset);
  e.Put<uint64_t>(file_size);
  uint64_t seed = XXH3_64bits(e.bytes().data(), kPreambleChecksummed);
  e.Put<uint64_t>(XXH3_64bits_withSeed(header.data(), header.size(), seed));
  return std::move(e.bytes());
}

}  // namespace

bool EntryHeader::Trimmable() const {
  return std::all_of(config.kinds.begin(), config.kinds.end(),
                     [](const LayerStateSpec& s) { return s.kind == StateKind::kFull; });
}

int64_t EntryHeader::MinReusableOffset() const {
  int64_t m = 0;
  for (int64_t v : min_reusable_offset) m = std::max(m, v);
  return m;
}

bool SameGeometry(const KvConfig& a, const KvConfig& b) {
  if (a.n_layer != b.n_layer || a.n_kv_head != b.n_kv_head || a.head_dim_k != b.head_dim_k ||
      a.head_dim_v != b.head_dim_v || a.dtype != b.dtype || a.block_size != b.block_size) {
    return false;
  }
  for (int32_t l = 0; l < a.n_layer; ++l) {
    LayerStateSpec x = a.kinds.empty() ? LayerStateSpec{} : a.kinds[l];
    LayerStateSpec y = b.kinds.empty() ? LayerStateSpec{} : b.kinds[l];
    if (x.kind != y.kind || x.window != y.window || x.state_floats != y.state_floats) return false;
  }
  return true;
}

StatusOr<uint64_t> WriteEntry(Env& env, const std::string& dir, const std::string& name, const EntryView& entry) {
  if (entry.state == nullptr || entry.state->n_pos() != static_cast<int64_t>(entry.tokens.size())) {
    return InvalidArgument("cold entry " + name + ": state positions must equal the token count");
  }
  // Pass 1 sizes the tensor and computes its checksums, storing nothing: the header that carries them
  // comes before the data (coldtier/tensor_stream.h).
  HashingSink hashing(kEntryChunk);
  EMBER_RETURN_IF_ERROR(entry.state->Serialize(hashing));
  TensorRef kv{"kv", 0, hashing.bytes(), kEntryChunk, hashing.Finish()};
  // The header's length does not depend on the tensor offset's value, so encode once to size it.
  uint64_t header_len = EncodeHeader(entry, kv).size();
  kv.offset = AlignUp(kPreambleSize + header_len);
  std::vector<uint8_t> header = EncodeHeader(entry, kv);
  const uint64_t file_size = kv.offset + kv.size;
  std::vector<uint8_t> head = EncodePreamble(EntryVersion(entry.state->config()), header, kv.offset, file_size);
  head.insert(head.end(), header.begin(), header.end());
  head.resize(kv.offset, 0);  // zero padding up to the page-aligned tensor

  // Pass 2 streams the state into the file (util/atomic_write.h: temp file, fsync, rename, dir fsync).
  auto fill = [&](WritableFile& f) -> Status {
    EMBER_RETURN_IF_ERROR(f.Append(head.data(), head.size()));
    FileSink sink(f);
    EMBER_RETURN_IF_ERROR(entry.state->Serialize(sink));
    EMBER_RETURN_IF_ERROR(sink.Flush());
    if (sink.bytes() != kv.size) return Internal("cold entry " + name + ": the state changed while it was written");
    return Status::Ok();
  };
  EMBER_RETURN_IF_ERROR(WriteFileAtomically(env, dir, name + kEntryExtension, fill).WithContext("cold entry write"));
  return file_size;
}

namespace {

struct Preamble {
  uint32_t version = 0;
  uint64_t header_length = 0;
  uint64_t data_offset = 0;
  uint64_t file_size = 0;
  uint64_t header_checksum = 0;
  uint64_t seed = 0;  // XXH3 of the checksummed preamble bytes
};

// The scan reads this much in one go: the preamble and, for all but huge token lists, the whole header
// (one open and one read per file instead of two of each: the startup scan is per-file syscall bound).
constexpr uint64_t kFirstRead = 16 * 1024;

// Reads the preamble; *head receives the first min(file size, kFirstRead) bytes of the file.
StatusOr<Preamble> ReadPreamble(Env& env, const std::string& path, std::vector<uint8_t>* head) {
  EMBER_ASSIGN_OR_RETURN(uint64_t actual_size, env.FileSize(path));
  if (actual_size < kPreambleSize) return Corrupt(path + ": truncated: shorter than the preamble");
  head->resize(std::min(actual_size, kFirstRead));
  EMBER_RETURN_IF_ERROR(env.ReadRange(path, 0, head->size(), head->data()));
  const uint8_t* raw = head->data();
  Decoder d(raw, kPreambleSize);
  Preamble p;
  uint64_t magic = d.Get<uint64_t>("magic");
  p.version = d.Get<uint32_t>("version");
  (void)d.Get<uint32_t>("reserved");
  p.header_length = d.Get<uint64_t>("header_length");
  p.data_offset = d.Get<uint64_t>("data_offset");
  p.file_size = d.Get<uint64_t>("file_size");
  p.header_checksum = d.Get<uint64_t>("header_checksum");
  p.seed = XXH3_64bits(raw, kPreambleChecksummed);
  if (magic != kEntryMagic) return Corrupt(path + ": bad magic (not a cold entry)");
  if (p.version != kEntryFormatVersion && p.version != kEntryFormatVersionRecurrent) {
    return Corrupt(path + ": unsupported format version " + std::to_string(p.version));
  }
  if (p.header_length > kMaxHeaderLength || p.data_offset % kEntryAlign != 0 ||
      p.data_offset < kPreambleSize + p.header_length || p.file_size < p.data_offset) {
    return Corrupt(path + ": preamble lengths out of bounds");
  }
  if (p.file_size != actual_size) {
    return Corrupt(path + ": truncated or overlong: preamble says " + std::to_string(p.file_size) +
                   " bytes, file has " + std::to_string(actual_size));
  }
  return p;
}

// Parses the per-layer part of the header into h.config / h.min_reusable_offset (h.format_version set).
void DecodeConfig(Decoder& d, EntryHeader& h) {
  const bool v2 = h.format_version == kEntryFormatVersionRecurrent;
  KvConfig& c = h.config;
  c.n_layer = d.Get<int32_t>("n_layer");
  c.n_kv_head = d.Get<int32_t>("n_kv_head");
  c.head_dim_k = d.Get<int32_t>("head_dim_k");
  c.head_dim_v = d.Get<int32_t>("head_dim_v");
  c.block_size = d.Get<int32_t>("block_size");
  c.dtype = static_cast<KvDtype>(d.Get<uint8_t>("dtype"));
  for (int i = 0; i < 3; ++i) (void)d.Get<uint8_t>("reserved");
  // 16 bytes per layer (24 in version 2): refuse a layer count the header cannot hold before allocating.
  if (c.n_layer < 0 || !d.Need(uint64_t(c.n_layer) * (v2 ? 24 : 16), "layers")) return;
  for (int32_t l = 0; l < c.n_layer; ++l) {
    LayerStateSpec spec;
    spec.kind = static_cast<StateKind>(d.Get<uint8_t>("layer kind"));
    (void)d.Get<uint8_t>("layer dtype");
    (void)d.Get<uint16_t>("reserved");
    spec.window = d.Get<int32_t>("layer window");
    c.kinds.push_back(spec);
    h.min_reusable_offset.push_back(d.Get<int64_t>("layer min_reusable_offset"));
    if (v2) c.kinds.back().state_floats = d.Get<int64_t>("layer state_floats");
  }
}

bool DecodeTensor(Decoder& d, TensorRef& t) {
  t.name = d.GetStr("tensor name");
  t.offset = d.Get<uint64_t>("tensor offset");
  t.size = d.Get<uint64_t>("tensor size");
  t.chunk_size = d.Get<uint64_t>("tensor chunk size");
  uint32_t n_chunks = d.Get<uint32_t>("tensor chunk count");
  if (!d.Need(uint64_t{n_chunks} * 8, "tensor chunk checksums")) return false;
  for (uint32_t i = 0; i < n_chunks; ++i) t.chunk_checksums.push_back(d.Get<uint64_t>("chunk checksum"));
  return true;
}

// Semantic checks after a successful parse: anything the writer could never have produced.
Status ValidateHeader(const std::string& path, const EntryHeader& h) {
  for (const LayerStateSpec& s : h.config.kinds) {
    if (s.kind != StateKind::kFull && s.kind != StateKind::kWindow && s.kind != StateKind::kRecurrent) {
      return Corrupt(path + ": unknown state kind " + std::to_string(int(s.kind)));
    }
    if ((s.kind == StateKind::kRecurrent) != (s.state_floats != 0) || s.state_floats < 0) {
      return Corrupt(path + ": layer state_floats " + std::to_string(s.state_floats) + " for a " +
                     StateKindName(s.kind) + " layer");
    }
  }
  if (EntryVersion(h.config) != h.format_version) {
    return Corrupt(path + ": format version " + std::to_string(h.format_version) +
                   (h.config.has_recurrent() ? " cannot hold recurrent layers" : " without a recurrent layer"));
  }
  if (h.n_pos != static_cast<int64_t>(h.tokens.size())) return Corrupt(path + ": n_pos != token count");
  for (const TensorRef& t : h.tensors) {
    bool bad_chunks = t.chunk_size == 0 || t.chunk_checksums.size() != (t.size + t.chunk_size - 1) / t.chunk_size;
    if (t.offset % kEntryAlign != 0 || t.offset < h.data_offset || t.offset > h.file_size ||
        t.size > h.file_size - t.offset || bad_chunks) {
      return Corrupt(path + ": tensor '" + t.name + "' out of bounds");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<EntryHeader> ReadHeader(Env& env, const std::string& path) {
  std::vector<uint8_t> head;
  EMBER_ASSIGN_OR_RETURN(Preamble p, ReadPreamble(env, path, &head));
  std::vector<uint8_t> raw(p.header_length);
  if (raw.empty()) {
    // Nothing to read: the checksum or the parse below refuses an empty header (and memcpy from or to
    // an empty vector's null data() is undefined even for zero bytes; found by entry_file_fuzz).
  } else if (kPreambleSize + p.header_length <= head.size()) {
    std::memcpy(raw.data(), head.data() + kPreambleSize, raw.size());
  } else {
    EMBER_RETURN_IF_ERROR(env.ReadRange(path, kPreambleSize, raw.size(), raw.data()));
  }
  if (XXH3_64bits_withSeed(raw.data(), raw.size(), p.seed) != p.header_checksum) {
    return Corrupt(path + ": header checksum mismatch");
  }
  Decoder d(raw.data(), raw.size());
  EntryHeader h;
  h.format_version = p.version;
  h.data_offset = p.data_offset;
  h.file_size = p.file_size;
  h.identity = d.GetStr("identity");
  h.ns = d.GetStr("namespace");
  uint64_t n_tokens = d.Get<uint64_t>("n_tokens");
  if (n_tokens > raw.size()) return Corrupt(path + ": token count out of bounds");
  if (d.Need(n_tokens * 4, "tokens")) {
    h.tokens.resize(n_tokens);
    for (uint64_t i = 0; i < n_tokens; ++i) h.tokens[i] = d.Get<int32_t>("tokens");
  }
  DecodeConfig(d, h);
  h.n_pos = d.Get<int64_t>("n_pos");
  uint32_t n_tensors = d.Get<uint32_t>("n_tensors");
  if (n_tensors > kMaxTensors) return Corrupt(path + ": too many tensors");
  for (uint32_t i = 0; i < n_tensors && d.failed() == nullptr; ++i) {
    TensorRef t;
    if (DecodeTensor(d, t)) h.tensors.push_back(std::move(t));
  }
  if (d.failed() != nullptr) return Corrupt(path + ": header truncated at " + d.failed());
  if (d.remaining() != 0) return Corrupt(path + ": trailing bytes after the header");
  EMBER_RETURN_IF_ERROR(ValidateHeader(path, h));
  return h;
}

StatusOr<LoadedEntry> ReadEntry(Env& env, const std::string& path, bool verify_tensors) {
  EMBER_ASSIGN_OR_RETURN(EntryHeader h, ReadHeader(env, path));
  const TensorRef* kv = nullptr;
  for (const TensorRef& t : h.tensors) {
    if (t.name == "kv") kv = &t;
  }
  if (kv == nullptr) return Corrupt(path + ": no 'kv' tensor");
  // Streamed: read in pieces straight into the KV blocks, checksummed as they arrive
  // (coldtier/tensor_stream.h); the checksums are settled at the end, before the state is handed out.
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env.NewRandomAccessFile(path));
  TensorSource source(*file, kv->offset, kv->size, kv->chunk_size, verify_tensors);
  StatusOr<KvState> state = KvState::Deserialize(h.config, source);
  if (!source.read_error().ok()) return source.read_error();
  if (verify_tensors) {
    // A checksum mismatch outranks whatever the deserializer made of the damaged bytes.
    EMBER_ASSIGN_OR_RETURN(bool intact, source.VerifyRest(kv->chunk_checksums));
    if (!intact) return Corrupt(path + ": tensor 'kv' checksum mismatch");
  }
  if (!state.ok()) return Corrupt(path + ": tensor 'kv': " + state.status().message());
  if (state->n_pos() != h.n_pos) return Corrupt(path + ": tensor 'kv' holds the wrong number of positions");
  return LoadedEntry{std::move(h), std::move(state).value()};
}

}  // namespace ember
