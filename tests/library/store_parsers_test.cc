// The parsers of other tools' files: Ollama manifests, safetensors headers, config.json, LM Studio's
// settings and home pointer. Each bad shape is an error naming what is wrong, never a crash.
#include <gtest/gtest.h>

#include "library/lmstudio_settings.h"
#include "library/ollama_manifest.h"
#include "library/safetensors_meta.h"

namespace ember::library {
namespace {

const std::string kHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::string Layer(const std::string& type, const std::string& digest_json, const std::string& extra = "") {
  return R"({"mediaType":")" + type + R"(","digest":)" + digest_json + extra + "}";
}

std::string ModelLayer(const std::string& digest_json, const std::string& extra = "") {
  return Layer("application/vnd.ollama.image.model", digest_json, extra);
}

std::string Layers(const std::string& layers) { return R"({"schemaVersion":2,"layers":[)" + layers + "]}"; }

void ExpectManifestError(const std::string& text, const std::string& needle) {
  StatusOr<OllamaManifest> m = ParseOllamaManifest(text);
  ASSERT_FALSE(m.ok()) << text.substr(0, 200);
  EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
}

TEST(OllamaManifest, FindsTheModelLayer) {
  StatusOr<OllamaManifest> m = ParseOllamaManifest(
      Layers(Layer("application/vnd.ollama.image.license", "\"sha256:" + std::string(64, 'c') + "\"") + "," +
             ModelLayer("\"sha256:" + kHex + "\"", R"(,"size":12345)") + "," +
             Layer("application/vnd.ollama.image.projector", "\"sha256:" + std::string(64, 'd') + "\"")));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->model_blob, "sha256-" + kHex);
  EXPECT_EQ(m->model_size, 12345u);
  EXPECT_TRUE(m->has_projector);
  EXPECT_FALSE(m->has_adapter);
}

TEST(OllamaManifest, RefusesWhatIsNotAManifest) {
  ExpectManifestError("", "");
  ExpectManifestError("{\"layers\": [", "");
  ExpectManifestError("[]", "not a JSON object");
  ExpectManifestError("{}", "no 'layers' array");
  ExpectManifestError(R"({"layers":"x"})", "no 'layers' array");
  ExpectManifestError(Layers("7"), "layer 0 is not an object");
  ExpectManifestError(Layers(R"({"mediaType":5})"), "layer 0: mediaType is not a string");
  ExpectManifestError(Layers(Layer("application/vnd.ollama.image.license", "\"sha256:" + kHex + "\"")),
                      "no layer of type application/vnd.ollama.image.model");
  ExpectManifestError(Layers(ModelLayer("\"sha256:" + kHex + "\"") + "," + ModelLayer("\"sha256:" + kHex + "\"")),
                      "more than one model layer");
  ExpectManifestError(Layers(R"({"mediaType":"application/vnd.ollama.image.model"})"), "has no digest");
  ExpectManifestError(Layers(ModelLayer("\"sha256:" + kHex + "\"", R"(,"size":-1)")), "size is not a count");
  ExpectManifestError(Layers(ModelLayer("\"sha256:" + kHex + "\"", R"(,"size":"big")")), "size is not a count");
}

TEST(OllamaManifest, DigestsCannotNameAPathOutsideTheBlobs) {
  const std::string digests[] = {"\"sha256:../../../etc/passwd\"", "\"sha256:" + kHex.substr(0, 63) + "\"",
                                 "\"sha256:" + kHex + "0\"", "\"md5:" + kHex + "\"", "\"" + kHex + "\""};
  for (const std::string& digest : digests) {
    ExpectManifestError(Layers(ModelLayer(digest)), "is not sha256:<64 hex digits>");
  }
  std::string upper = kHex;
  upper[10] = 'A';
  ExpectManifestError(Layers(ModelLayer("\"sha256:" + upper + "\"")), "is not lowercase hex");
  ExpectManifestError(Layers(ModelLayer("\"sha256:" + kHex.substr(0, 61) + "/..\"")), "is not lowercase hex");
  ExpectManifestError(Layers(ModelLayer("null")), "digest is not a string");
}

TEST(OllamaManifest, BoundsSizeDepthAndLayers) {
  ExpectManifestError(std::string(kMaxManifestBytes + 1, ' '), "larger than 1048576 bytes");
  ExpectManifestError(std::string(100000, '[') + std::string(100000, ']'), "nested deeper than 64");
  std::string many;
  for (size_t i = 0; i <= kMaxManifestLayers; ++i) many += std::string(i ? "," : "") + "{}";
  ExpectManifestError(Layers(many), "more than 1024 layers");
}

void ExpectHeaderError(const std::string& header, const std::string& needle) {
  StatusOr<SafetensorsSummary> s = ParseSafetensorsHeader(header);
  ASSERT_FALSE(s.ok()) << header.substr(0, 200);
  EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status().message();
}

TEST(SafetensorsHeader, ARepeatedFieldIsRefused) {
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2,3],"shape":[4],"data_offsets":[0,24]}})", "shape appears twice");
  ExpectHeaderError(R"({"a":{"dtype":"F32","dtype":"I8","shape":[1],"data_offsets":[0,4]}})", "dtype appears twice");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"data_offsets":[0,4]}})",
                    "data_offsets appears twice");
}

// Found by model_store_fuzz: an empty dtype counted bytes under "" (a dtype the summary cannot name).
TEST(SafetensorsHeader, AnEmptyDtypeIsRefused) {
  ExpectHeaderError(R"({"a":{"dtype":"","shape":[1024],"data_offsets":[311164928,311166976]}})", "dtype is empty");
}

TEST(SafetensorsHeader, TotalsParametersAndBytesPerDtype) {
  StatusOr<SafetensorsSummary> s = ParseSafetensorsHeader(
      R"({"__metadata__":{"format":"pt","nested":{"deep":[1,2,{"x":null}]}},)"
      R"("a":{"dtype":"BF16","shape":[4,8],"data_offsets":[0,64],"future_key":{"ignored":[true]}},)"
      R"("b":{"shape":[3],"data_offsets":[64,76],"dtype":"F32"},)"
      R"("scalar":{"dtype":"F32","shape":[],"data_offsets":[76,80]},)"
      R"("empty":{"dtype":"I8","shape":[0,5],"data_offsets":[80,80]}})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->tensors, 4u);
  EXPECT_EQ(s->parameters, 32u + 3u + 1u + 0u);
  EXPECT_EQ(s->bytes_by_dtype.at("BF16"), 64u);
  EXPECT_EQ(s->bytes_by_dtype.at("F32"), 16u);
  EXPECT_EQ(DominantDtype(*s), "BF16");
  EXPECT_TRUE(ParseSafetensorsHeader("{}").ok());
}

TEST(SafetensorsHeader, RefusesWrongShapesAndTypes) {
  ExpectHeaderError("[]", "not a JSON object");
  ExpectHeaderError("7", "not a JSON object");
  ExpectHeaderError("{\"a\":", "");
  ExpectHeaderError(R"({"a":5})", "tensor 'a' is a number, not an object");
  ExpectHeaderError(R"({"a":[]})", "tensor 'a' is an array");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2]}})", "lacks dtype, shape or data_offsets");
  ExpectHeaderError(R"({"a":{"dtype":1,"shape":[2],"data_offsets":[0,8]}})", "dtype holds a number");
  ExpectHeaderError(R"({"a":{"dtype":["F32"],"shape":[2],"data_offsets":[0,8]}})", "dtype has the wrong type");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "shape holds a negative number");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", "shape holds a fraction");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", "shape holds a string");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}})", "nests arrays or objects");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":{"n":2},"data_offsets":[0,8]}})", "shape has the wrong type");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,8]}})",
                    "shape has more than 8 entries");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "begin <= end");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", "begin <= end");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,1,2]}})", "more than 2 entries");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                    "shape overflows");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                    "totals overflow");
  ExpectHeaderError(std::string(100000, '[') + std::string(100000, ']'), "not a JSON object");
  ExpectHeaderError("{\"__metadata__\":" + std::string(100000, '[') + std::string(100000, ']') + "}",
                    "nested deeper than 64");
}

TEST(SafetensorsHeader, LengthIsCheckedAgainstTheFileAndTheLimit) {
  const auto le = [](uint64_t n) {
    std::vector<uint8_t> b(8);
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(n >> (8 * i));
    return b;
  };
  EXPECT_EQ(*SafetensorsHeaderLength(le(100).data(), 108), 100u);
  EXPECT_FALSE(SafetensorsHeaderLength(le(100).data(), 107).ok());
  EXPECT_FALSE(SafetensorsHeaderLength(le(100).data(), 4).ok());
  EXPECT_FALSE(SafetensorsHeaderLength(le(UINT64_MAX).data(), UINT64_MAX).ok());
  EXPECT_FALSE(SafetensorsHeaderLength(le(kMaxSafetensorsHeaderBytes + 1).data(), UINT64_MAX).ok());
}

TEST(HfConfig, ReadsTypedFieldsAndRefusesWrongTypes) {
  StatusOr<HfModelConfig> c = ParseHfConfig(
      R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","max_position_embeddings":131072,)"
      R"("quantization_config":{"quant_method":"gptq","bits":4}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->model_type, "llama");
  EXPECT_EQ(c->context_length, 131072);
  EXPECT_EQ(c->quant_method, "gptq");

  c = ParseHfConfig(R"({"model_type":"gemma3","text_config":{"max_position_embeddings":32768}})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->context_length, 32768);
  EXPECT_TRUE(ParseHfConfig("{}").ok());

  for (const char* bad : {"[]", "nope", R"({"model_type":1})", R"({"max_position_embeddings":-5})",
                          R"({"max_position_embeddings":1.5})", R"({"max_position_embeddings":1099511627776})",
                          R"({"architectures":"x"})", R"({"architectures":[1]})",
                          R"({"quantization_config":{"quant_method":4}})"}) {
    EXPECT_FALSE(ParseHfConfig(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseHfConfig(std::string(kMaxConfigBytes + 1, ' ')).ok());
}

TEST(LmStudioSettings, DownloadsFolderAndHomePointer) {
  EXPECT_EQ(*ParseLmStudioDownloadsFolder(R"({"downloadsFolder":"/big/models","theme":"dark"})"), "/big/models");
  EXPECT_EQ(*ParseLmStudioDownloadsFolder(R"({"theme":"dark"})"), "");
  EXPECT_EQ(*ParseLmStudioDownloadsFolder(R"({"downloadsFolder":null})"), "");
  EXPECT_FALSE(ParseLmStudioDownloadsFolder(R"({"downloadsFolder":["/x"]})").ok());
  EXPECT_FALSE(ParseLmStudioDownloadsFolder("[]").ok());
  EXPECT_FALSE(ParseLmStudioDownloadsFolder("{").ok());

  EXPECT_EQ(ParseLmStudioHomePointer("  /home/me/lmstudio\n"), "/home/me/lmstudio");
  EXPECT_EQ(ParseLmStudioHomePointer("relative/path"), "");
  EXPECT_EQ(ParseLmStudioHomePointer(""), "");
  EXPECT_EQ(ParseLmStudioHomePointer("/a\n/b"), "");
  EXPECT_EQ(ParseLmStudioHomePointer(std::string("/a\0b", 4)), "");
  EXPECT_EQ(ParseLmStudioHomePointer("/" + std::string(kMaxHomePointerBytes, 'a')), "");
}

}  // namespace
}  // namespace ember::library
