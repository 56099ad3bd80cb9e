// ember inspect FILE: metadata (long arrays summarized), tensor table, and derived sizes.
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "format/gguf.h"
#include "format/model_summary.h"
#include "model/model.h"

namespace ember::cli {
namespace {

using nlohmann::json;
constexpr uint64_t kShownElems = 8;  // long arrays print their length and first elements only

json ScalarJson(const GgufValue& v) {
  switch (v.type) {
    case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64: return v.u;
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64: return v.i;
    case GgufType::kF32: case GgufType::kF64: return v.f;
    case GgufType::kBool: return v.u != 0;
    case GgufType::kString: return std::string(v.str);
    default: return nullptr;
  }
}

json ValueJson(const GgufFile& f, const std::string& key, const GgufValue& v, bool full) {
  if (v.type != GgufType::kArray) return ScalarJson(v);
  json items = json::array();
  const uint64_t shown = full ? v.count : std::min(v.count, kShownElems);
  if (v.elem_type == GgufType::kString) {
    for (uint64_t k = 0; k < shown; ++k) items.push_back(std::string(v.strings[k]));
  } else if (auto ints = f.IntArray(key); ints.ok()) {
    items = json(std::vector<int64_t>(ints->begin(), ints->begin() + shown));
  } else if (auto fl = f.F32Array(key); fl.ok()) {
    items = json(std::vector<float>(fl->begin(), fl->begin() + shown));
  }
  if (full || v.count <= kShownElems) return items;
  return json{{"type", std::string("array of ") + GgufTypeName(v.elem_type)}, {"length", v.count}, {"head", items}};
}

json SummaryJson(const ModelSummary& s) {
  return {{"arch", s.arch}, {"n_params", s.n_params}, {"active_params", s.active_params},
          {"n_expert", s.n_expert}, {"n_expert_used", s.n_expert_used},
          {"weight_bytes", s.weight_bytes}, {"file_type", s.file_type},
          {"n_layer", s.n_layer}, {"n_embd", s.n_embd}, {"n_head", s.n_head}, {"n_head_kv", s.n_head_kv},
          {"head_dim", s.head_dim}, {"n_ctx", s.n_ctx}, {"n_vocab", s.n_vocab},
          {"kv_bytes_per_token_f16", s.kv_bytes_per_token_f16},
          {"decode_weight_bytes_per_token", s.decode_bytes_per_token}};
}

std::string Human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) { bytes /= 1024; ++u; }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

// What loading would repack on this CPU (Model::PackWeights); absent when the file is no runnable model.
struct RepackInfo {
  int tensors = 0;
  uint64_t bytes = 0;
};

// Metadata and tensors, then the summary; `s` is null when the metadata is broken (the caller says why).
void PrintHuman(const GgufFile& f, const ModelSummary* s, const RepackInfo* rp, bool full) {
  std::cout << f.name() << ": GGUF v" << f.version() << ", " << f.metadata().size() << " metadata keys, "
            << f.tensors().size() << " tensors, alignment " << f.alignment() << ", data at byte " << f.data_offset()
            << "\n\nmetadata:\n";
  for (const auto& [key, v] : f.metadata()) {
    std::string text = ValueJson(f, key, v, full).dump(-1, ' ', false, json::error_handler_t::replace);
    if (!full && text.size() > 160) text = text.substr(0, 157) + "...";
    std::cout << "  " << key << " = " << text << "\n";
  }
  std::cout << "\ntensors:\n";
  for (const auto& t : f.tensors()) {
    std::ostringstream shape;
    for (uint32_t d = 0; d < t.n_dims; ++d) shape << (d ? " x " : "") << t.ne[d];
    std::printf("  %-32s %-6s %-22s %12s\n", t.name.c_str(), GgmlTypeName(t.type), shape.str().c_str(),
                Human(static_cast<double>(t.n_bytes)).c_str());
  }
  if (s == nullptr) return;
  std::cout << "\nsummary:\n  arch " << s->arch << ", file type " << s->file_type << ", " << s->n_params << " parameters ("
            << s->n_params / 1e6 << " M), weights " << Human(static_cast<double>(s->weight_bytes)) << "\n";
  if (s->n_expert > 0) {
    std::cout << "  mixture of experts: " << s->n_expert_used << " of " << s->n_expert << " experts per token, "
              << s->active_params << " parameters active (" << s->active_params / 1e6 << " M)\n";
  }
  std::cout << "  layers "
            << s->n_layer << ", embd " << s->n_embd << ", heads " << s->n_head << "/" << s->n_head_kv << " (head dim "
            << s->head_dim << "), context " << s->n_ctx << ", vocab " << s->n_vocab << "\n  KV per token at f16: "
            << Human(static_cast<double>(s->kv_bytes_per_token_f16)) << "; weights read per decoded token: "
            << Human(static_cast<double>(s->decode_bytes_per_token)) << "\n";
  if (rp == nullptr) return;
  if (rp->tensors == 0) {
    std::cout << "  repack at load: none on this CPU (no packed GEMM kernels for these types here)\n";
  } else {
    std::cout << "  repack at load: " << rp->tensors << " matrices, " << Human(static_cast<double>(rp->bytes))
              << " copied into the packed GEMM layout, replacing their mapped pages (EMBER_REPACK=0: off)\n";
  }
}

int Run(const std::string& path, bool as_json, bool full) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) {
    std::cerr << "ember inspect: " << file.status().ToString() << "\n";
    return 1;
  }
  // A runnable model also says what loading it would repack; the binding (a parse, no copies) is done
  // on a second mapping so a file that is no model is still shown in full.
  std::optional<RepackInfo> repack;
  if (StatusOr<std::unique_ptr<Model>> m = Model::Load(path); m.ok()) {
    repack.emplace();
    repack->bytes = (*m)->PackableBytes(&repack->tensors);
  }
  const GgufFile& f = **file;
  // A file whose metadata is broken (a key of the wrong type, an absurd dimension) is still shown, then
  // named as broken: exit 1, as for a file that does not parse.
  const StatusOr<ModelSummary> s = Summarize(f);
  const auto report = [&]() {
    if (s.ok()) return 0;
    std::cerr << "ember inspect: " << s.status().ToString() << "\n";
    return 1;
  };
  if (!as_json) {
    PrintHuman(f, s.ok() ? &*s : nullptr, repack ? &*repack : nullptr, full);
    return report();
  }
  json meta = json::object();
  for (const auto& [key, v] : f.metadata()) meta[key] = ValueJson(f, key, v, full);
  json tensors = json::array();
  for (const auto& t : f.tensors())
    tensors.push_back({{"name", t.name}, {"type", GgmlTypeName(t.type)},
                       {"shape", std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                       {"bytes", t.n_bytes}, {"offset", f.data_offset() + t.offset}});
  json out = {{"file", path}, {"version", f.version()}, {"alignment", f.alignment()},
              {"data_offset", f.data_offset()}, {"metadata", meta}, {"tensors", tensors}};
  if (repack) out["repack"] = {{"tensors", repack->tensors}, {"bytes", repack->bytes}};
  if (s.ok()) {
    out["summary"] = SummaryJson(*s);
  } else {
    out["error"] = s.status().ToString();
  }
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return report();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  struct Args { std::string path; bool json = false, full = false; };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("inspect", "Show a GGUF file's metadata, tensors and derived sizes");
  c->add_option("FILE", a->path, "GGUF model file")->required();
  c->add_flag("--json", a->json, "Machine-readable output");
  c->add_flag("--full", a->full, "Print long arrays in full");
  c->callback([a, set_exit] { set_exit(Run(a->path, a->json, a->full)); });
}

EMBER_REGISTER_COMMAND("inspect", Setup);

}  // namespace
}  // namespace ember::cli
