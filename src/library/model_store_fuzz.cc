// libFuzzer target for the parsers of other tools' model-store files (docs/fuzzing.md). Byte 0 picks
// the parser, the rest is the file: 0 an Ollama manifest, 1 a safetensors JSON header, 2 a whole
// safetensors file's start (8-byte length, then the header it claims), 3 a Hugging Face config.json,
// 4 LM Studio's settings.json and home pointer. Beyond "no crash": a manifest that parses names a blob
// file inside blobs/ ("sha256-" and 64 lowercase hex digits), and a header's totals agree with its
// tensor count.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "library/lmstudio_settings.h"
#include "library/ollama_manifest.h"
#include "library/safetensors_meta.h"

namespace {

void Require(bool ok) {
  if (!ok) std::abort();
}

void CheckManifest(std::string_view text) {
  ember::StatusOr<ember::library::OllamaManifest> m = ember::library::ParseOllamaManifest(text);
  if (!m.ok()) return;
  const std::string& blob = m->model_blob;
  Require(blob.size() == 7 + 64 && blob.compare(0, 7, "sha256-") == 0);
  for (size_t i = 7; i < blob.size(); ++i) {
    Require((blob[i] >= '0' && blob[i] <= '9') || (blob[i] >= 'a' && blob[i] <= 'f'));
  }
}

void CheckHeader(std::string_view header) {
  ember::StatusOr<ember::library::SafetensorsSummary> s = ember::library::ParseSafetensorsHeader(header);
  if (!s.ok()) return;
  Require((s->tensors == 0) == s->bytes_by_dtype.empty());
  Require(ember::library::DominantDtype(*s).empty() == s->bytes_by_dtype.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: CheckManifest(text); break;
    case 1: CheckHeader(text); break;
    case 2: {
      if (size - 1 < 8) break;
      ember::StatusOr<uint64_t> n = ember::library::SafetensorsHeaderLength(data + 1, size - 1);
      if (n.ok()) CheckHeader(text.substr(8, *n));
      break;
    }
    case 3: (void)ember::library::ParseHfConfig(text); break;
    default:
      (void)ember::library::ParseLmStudioDownloadsFolder(text);
      (void)ember::library::ParseLmStudioHomePointer(text);
      break;
  }
  return 0;
}
