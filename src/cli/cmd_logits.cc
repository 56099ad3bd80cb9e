// ember logits: teacher-forced evaluation writing every position's logits (n_tokens x n_vocab
// little-endian float32 rows) — the raw material of the parity tests against llama.cpp.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "engine/engine.h"
#include "engine/load_progress.h"
#include "util/stopwatch.h"

namespace ember::cli {
namespace {

struct Args {
  std::string model, tokens, text, out, kv = "f16";
  int threads = 0;
  int64_t ubatch = 64;
  bool json = false;
};

StatusOr<std::vector<int32_t>> ParseIds(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX) return InvalidArgument("bad token id '" + item + "'");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return InvalidArgument("--tokens is empty");
  return ids;
}

StatusOr<KvDtype> ParseKv(const std::string& s) {
  if (s == "f16") return KvDtype::kF16;
  if (s == "f32") return KvDtype::kF32;
  return InvalidArgument("--kv must be f16 or f32, got '" + s + "'");
}

Status WriteRows(const std::string& path, const std::vector<float>& rows) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError("cannot open " + path + " for writing");
  f.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size() * sizeof(float)));
  if (!f) return IoError("write to " + path + " failed");
  return Status::Ok();
}

Status Run(const Args& a) {
  if (a.tokens.empty() == a.text.empty()) return InvalidArgument("give exactly one of --tokens and --text");
  EngineOptions eo;
  eo.threads = a.threads;
  eo.ubatch = a.ubatch;
  eo.load_tokenizer = !a.text.empty();
  EMBER_ASSIGN_OR_RETURN(eo.kv_dtype, ParseKv(a.kv));
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadEngineWithProgress(a.model, eo, {.enabled = ShowProgress(a.json)}));
  std::vector<int32_t> ids;
  if (!a.text.empty()) {
    ids = engine->tokenizer()->Encode(a.text, /*add_special=*/true, /*parse_special=*/false);
  } else {
    EMBER_ASSIGN_OR_RETURN(ids, ParseIds(a.tokens));
  }
  EMBER_ASSIGN_OR_RETURN(auto seq, engine->NewSequence(/*all_logits=*/true));
  std::vector<float> rows;
  const Stopwatch t0;
  EMBER_RETURN_IF_ERROR(engine->Evaluate(*seq, ids, a.ubatch, &rows));
  const double secs = t0.ElapsedSeconds();
  if (!a.out.empty()) EMBER_RETURN_IF_ERROR(WriteRows(a.out, rows));
  const int64_t nv = engine->model().config().n_vocab;
  if (a.json) {
    nlohmann::json j = {{"model", a.model}, {"n_tokens", ids.size()}, {"n_vocab", nv}, {"kind", "logits"},
                        {"out", a.out.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.out)},
                        {"tokens", ids}, {"kv", a.kv}, {"threads", engine->threads()}, {"eval_s", secs}};
    std::cout << j.dump() << "\n";
  } else {
    std::cout << ids.size() << " tokens x " << nv << " logits" << (a.out.empty() ? "" : " -> " + a.out) << " in "
              << secs << " s\n";
  }
  return Status::Ok();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("logits", "Teacher-forced logits of every position (float32 rows) to a file");
  c->add_option("model", a->model, "GGUF model")->required();
  c->add_option("--tokens", a->tokens, "Comma-separated token ids");
  c->add_option("--text", a->text, "Text to tokenize (with BOS when the model adds it)");
  c->add_option("--out", a->out, "Output file: n_tokens x n_vocab little-endian float32");
  c->add_option("--kv", a->kv, "KV cache type: f16 | f32")->capture_default_str();
  c->add_option("--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("--ubatch", a->ubatch, "Tokens per forward chunk")->capture_default_str();
  c->add_flag("--json", a->json, "Print a JSON summary");
  c->callback([a, set_exit] {
    Status st = Run(*a);
    if (!st.ok()) std::cerr << "ember logits: " << st.ToString() << "\n";
    set_exit(st.ok() ? 0 : 1);
  });
}

EMBER_REGISTER_COMMAND("logits", Setup);

}  // namespace
}  // namespace ember::cli
