// `ember serve MODEL` / `ember serve --fake`: the OpenAI- and Anthropic-compatible HTTP server; with
// --models-dir, --fake-models or no MODEL, several models by name (docs/server.md "Several models").
// Every flag can also come from an EMBER_* environment variable (flag wins). SIGTERM/SIGINT drain.
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "cache/cache_options.h"
#include "tiered/ssd_paths.h"
#include "cli/command.h"
#include "engine/speculative_options.h"
#include "library/model_catalog.h"
#include "server/engine_backend.h"
#include "server/engine_model_loader.h"
#include "server/fake_backend.h"
#include "server/fake_model_loader.h"
#include "server/http_server.h"
#include "server/memory_return.h"
#include "session/kv_budget.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

using server::ServeOptions;

Status ReadKeyFile(const std::string& path, std::vector<std::string>* keys) {
  std::ifstream in(path);
  if (!in) return IoError("cannot read --api-key-file " + path);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line[0] != '#') keys->push_back(line);
  }
  if (keys->empty()) return InvalidArgument("--api-key-file " + path + " holds no key");
  return Status::Ok();
}

// "b,a, c" -> {"a", "b", "c"}: sorted, without blanks or repeats.
std::vector<std::string> SplitList(const std::string& list) {
  std::set<std::string> items;
  std::string item;
  std::istringstream in(list);
  while (std::getline(in, item, ',')) {
    const size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b != std::string::npos) items.insert(item.substr(b, e - b + 1));
  }
  return {items.begin(), items.end()};
}

server::FakeBackend::Options FakeOptions(const ServeOptions& o) {
  server::FakeBackend::Options f;
  f.token_delay_ms = o.fake_token_delay_ms;
  f.context_length = o.ctx_size > 0 ? static_cast<int32_t>(o.ctx_size) : o.fake_context_length;
  f.max_parallel = o.parallel;
  f.kv_budget_tokens = o.fake_kv_budget_tokens;
  return f;
}

StatusOr<std::unique_ptr<server::InferenceBackend>> MakeBackend(const ServeOptions& o) {
  if (o.fake) return std::unique_ptr<server::InferenceBackend>(std::make_unique<server::FakeBackend>(FakeOptions(o)));
  return server::CreateEngineBackend(o);
}

// The flags that name or change one model, refused with several.
Status CheckSeveralModelsFlags(const ServeOptions& o) {
  auto refuse = [](const char* flag) {
    return InvalidArgument(std::string(flag) + " applies to one model; it cannot be used when serving several "
                           "(--models-dir, --fake-models, or no MODEL)");
  };
  if (!o.model_alias.empty()) return refuse("--model-alias");
  if (!o.model_tags.empty()) return refuse("--tags");
  if (!o.chat_template_file.empty()) return refuse("--chat-template-file");
  if (!o.draft_model_path.empty() || o.spec == "draft") return refuse("--draft-model / --spec draft");
  if (o.fake && o.fake_models.empty()) return InvalidArgument("--fake serves one fake model: use --fake-models A,B");
  return Status::Ok();
}

struct SeveralModels {
  std::unique_ptr<server::ModelLoader> loader;
  std::unique_ptr<server::ModelRouter> router;
  size_t runnable = 0;
};

StatusOr<SeveralModels> MakeRouter(const ServeOptions& o) {
  EMBER_RETURN_IF_ERROR(CheckSeveralModelsFlags(o));
  SeveralModels m;
  std::vector<server::ModelSpec> specs;
  if (!o.fake_models.empty()) {
    auto fake = std::make_unique<server::FakeModelLoader>(server::FakeModelLoader::Options{FakeOptions(o), 0, 0});
    specs = fake->Specs(o.fake_models);
    m.loader = std::move(fake);
  } else {
    specs = server::FindServedModels(o);
    m.loader = std::make_unique<server::EngineModelLoader>(o);
  }
  size_t runnable = 0;
  for (const server::ModelSpec& s : specs) {
    if (s.runnable) ++runnable;
    if (!s.runnable) std::fprintf(stderr, "ember: model %s (%s) cannot run: %s\n", s.name.c_str(), s.path.c_str(), s.why_not.c_str());
  }
  if (runnable == 0) {
    std::string where = o.models_dirs.empty() ? "" : "--models-dir folders, ";
    where += o.models_data_dir.empty() ? "no data dir" : o.models_data_dir;
    if (o.model_stores) where += ", and the llama.cpp, LM Studio, Ollama and Hugging Face stores";
    return InvalidArgument("no runnable model found (looked in " + where + "); give a MODEL file or --models-dir DIR");
  }
  server::ModelRouter::Options ro;
  ro.max_loaded = o.max_loaded;
  ro.idle_unload_s = o.idle_unload_s;
  // NaN passes CLI11's Range (every comparison is false): refused here, as a day is the most.
  if (!(o.load_wait_s >= 0 && o.load_wait_s <= 86400)) return InvalidArgument("--load-wait must be 0 to 86400 seconds");
  ro.room_wait_s = o.load_wait_s;
  ro.max_queue = o.max_queue;
  if (!o.memory_budget.empty()) {
    EMBER_ASSIGN_OR_RETURN(size_t b, ParseByteSize(o.memory_budget));
    ro.memory_budget_bytes = b;
  } else if (o.fake_models.empty()) {
    ro.memory_budget_bytes = DefaultKvBudgetBytes(0, nullptr);
  }
  std::fprintf(stderr, "ember: %zu models (%zu runnable), loaded on demand; memory budget %s%s, max loaded %s, idle unload %s, load wait %s\n",
               specs.size(), runnable, ro.memory_budget_bytes == 0 ? "unlimited" : FormatBytes(ro.memory_budget_bytes).c_str(),
               o.memory_budget.empty() && ro.memory_budget_bytes > 0 ? " (75% of available memory)" : "",
               o.max_loaded == 0 ? "unlimited" : std::to_string(o.max_loaded).c_str(),
               o.idle_unload_s == 0 ? "off" : (std::to_string(static_cast<int64_t>(o.idle_unload_s)) + " s").c_str(),
               FormatDuration(o.load_wait_s).c_str());
  m.router = std::make_unique<server::ModelRouter>(std::move(specs), m.loader.get(), ro);
  m.runnable = runnable;
  return m;
}

// Starts `http`, waits for SIGTERM/SIGINT (blocked by the caller), drains and flushes.
int RunUntilSignal(server::HttpServer& http, const ServeOptions& o, sigset_t* stop_signals, const std::string& what) {
  if (Status st = http.Start(); !st.ok()) {
    std::fprintf(stderr, "ember serve: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("ember: serving %s on http://%s:%d\n", what.c_str(), o.host.c_str(), http.port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(stop_signals, &sig);
  std::fprintf(stderr, "ember serve: signal %d, draining (up to %.0f s; a second signal stops at once)\n", sig,
               o.shutdown_timeout_s);
  // Only main unblocks: a second Ctrl-C during the drain or the flush ends the process (the user asked).
  pthread_sigmask(SIG_UNBLOCK, stop_signals, nullptr);
  Status st = http.Shutdown();
  std::fprintf(stderr, "ember serve: stopped; cache flush: %s\n", st.ok() ? "ok" : st.ToString().c_str());
  return st.ok() ? 0 : 1;
}

// Runs until SIGTERM/SIGINT. The signals are blocked in every thread and taken here with sigwait, so no
// work happens in a signal handler.
int Serve(ServeOptions o, const std::string& key_file) {
  if (!key_file.empty()) {
    if (Status st = ReadKeyFile(key_file, &o.api_keys); !st.ok()) {
      std::fprintf(stderr, "ember serve: %s\n", st.ToString().c_str());
      return 2;
    }
  }
  // One key, one role: an admin key that is also an API key would make that tenant the admin.
  if (!o.admin_key.empty() && std::find(o.api_keys.begin(), o.api_keys.end(), o.admin_key) != o.api_keys.end()) {
    std::fprintf(stderr, "ember serve: --admin-key must differ from every API key\n");
    return 2;
  }
  server::TuneAllocatorForServing();  // large replies' memory goes back to the system (memory_return.h)
  // Blocked before MakeBackend starts the compute pool and the cold tier's threads: a thread created
  // later inherits the mask, so a stop signal can only be taken by the sigwait below (never kill a
  // backend thread mid-flush).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto warn_workers = [](const ServeOptions& so) {
    if (server::HttpWorkerThreads(so) > static_cast<int>(server::MaxAdmittedGenerations(so))) return;
    std::fprintf(stderr,
                 "ember serve: warning: --http-threads %d <= (--max-queue + --parallel) x models loaded at once "
                 "(%zu): running and queued generations can hold every worker, so the 429 cannot fire and "
                 "/health waits behind them\n",
                 server::HttpWorkerThreads(so), so.models_at_once);
  };
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "ember serve: %s\n", st.ToString().c_str());
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  };
  if (o.multi_model) {
    StatusOr<SeveralModels> models = MakeRouter(o);
    if (!models.ok()) return fail(models.status());
    // Each loaded model queues its own generations, and a request waiting for room (--load-wait) holds a
    // worker too: the default counts every model that can be loaded at once.
    o.models_at_once = std::min<size_t>(o.max_loaded > 0 ? o.max_loaded : models->runnable, 64);
    warn_workers(o);
    server::HttpServer http(o, models->router.get());
    const std::vector<std::string> names = models->router->RunnableNames();
    std::string what = std::to_string(names.size()) + " models (";
    for (size_t i = 0; i < names.size() && i < 8; ++i) what += (i ? ", " : "") + names[i];
    what += names.size() > 8 ? ", ...)" : ")";
    return RunUntilSignal(http, o, &stop_signals, what);
  }
  warn_workers(o);
  auto backend = MakeBackend(o);
  if (!backend.ok()) return fail(backend.status());
  server::HttpServer http(o, backend->get());
  return RunUntilSignal(http, o, &stop_signals, http.context().model_id);
}

void SetupServe(CLI::App& app, std::function<void(int)> set_exit) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a model (or several, by name) over an OpenAI- and Anthropic-compatible HTTP API");
  auto o = std::make_shared<ServeOptions>();
  auto key_file = std::make_shared<std::string>();
  auto prompt_specials = std::make_shared<std::string>("on");
  cmd->add_option("MODEL", o->model_path,
                  "GGUF model file, served for every request whatever its `model` names. Without MODEL: every "
                  "runnable model found in ember's data dir ($XDG_DATA_HOME/ember) and the llama.cpp, LM Studio, "
                  "Ollama and Hugging Face stores, by name (see --models-dir)")
      ->envname("EMBER_MODEL");
  cmd->add_option("--models-dir", o->models_dirs,
                  "Serve several models by name: the GGUF files in this folder (repeatable) and in ember's data "
                  "dir (not the other tools' stores), plus MODEL if given. A request's `model` picks one and loads "
                  "it on demand; GET /v1/models lists them")
      ->envname("EMBER_MODELS_DIR");
  cmd->add_option("--max-loaded", o->max_loaded,
                  "With several models: most loaded at once (0 = as many as --memory-budget holds); loading one "
                  "more first unloads the least recently used idle one (its prompt cache kept on SSD)")
      ->capture_default_str()->check(CLI::Range(0, 1024))->envname("EMBER_MAX_LOADED");
  cmd->add_option("--idle-unload", o->idle_unload_s,
                  "With several models: unload a model no request has used for this many seconds (0 = never)")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->envname("EMBER_IDLE_UNLOAD");
  cmd->add_option("--load-wait", o->load_wait_s,
                  "With several models: how long a request for a model that does not fit beside the models "
                  "serving requests waits for them to finish (then 503 model_busy; 0 = answer 503 at once)")
      ->capture_default_str()->check(CLI::Range(0.0, 86400.0))->envname("EMBER_LOAD_WAIT");
  cmd->add_option("--memory-budget", o->memory_budget,
                  "With several models: memory for the loaded models' weights and KV budgets together, e.g. 16G "
                  "(default: 75% of available memory at start). Each model is charged its file size plus its KV "
                  "budget (--kv-budget, else --parallel full contexts, cut to what is left, at least one)")
      ->envname("EMBER_MEMORY_BUDGET");
  cmd->add_flag("--fake", o->fake,
                "Serve a deterministic fake backend instead of a model: byte tokens, replies scripted with "
                "'echo: TEXT' (tool calls included), no prompt cache (cached_tokens 0). For testing HTTP "
                "clients and integrations without a model file; ember's own e2e tests use it for the HTTP stack")
      ->envname("EMBER_FAKE");
  cmd->add_option("--host", o->host, "Address to bind")->capture_default_str()->envname("EMBER_HOST");
  cmd->add_option("--port", o->port, "Port to bind (0 = any free port)")
      ->capture_default_str()->check(CLI::Range(0, 65535))->envname("EMBER_PORT");
  cmd->add_option("--prompt-cache-bytes", o->prompt_cache_bytes,
                  "RAM prompt-cache cap, e.g. 8G (0 = off; default: a quarter of RAM, printed at start)")
      ->envname("EMBER_PROMPT_CACHE_BYTES");
  cmd->add_option("--api-key", o->api_keys, "Require this API key (repeatable)")->envname("EMBER_API_KEY");
  cmd->add_option("--api-key-file", *key_file, "Read API keys, one per line, from this file")
      ->check(CLI::ExistingFile)->envname("EMBER_API_KEY_FILE");
  cmd->add_option("--admin-key", o->admin_key,
                  "The key /stats, /metrics and /admin/* need (they show every API key's counters). Without it, "
                  "those routes answer anyone when no --api-key is set, the one key when one is set, and nobody "
                  "when several are (403)")
      ->envname("EMBER_ADMIN_KEY");
  cmd->add_option("--cors-origin", o->cors_origins, "Allow this browser origin beyond localhost (repeatable; * = any)")
      ->envname("EMBER_CORS_ORIGIN");
  cmd->add_option("--allowed-host", o->allowed_hosts,
                  "Serve requests whose Host header names this host (repeatable; * = any). Bound to loopback, "
                  "only loopback names are served otherwise (403: DNS rebinding protection)")
      ->envname("EMBER_ALLOWED_HOST");
  cmd->add_option("--model-alias,--alias", o->model_alias,
                  "Model id reported to clients; a comma-separated list gives aliases (GET /models), the id being "
                  "the first in sorted order, as llama-server's")
      ->envname("EMBER_MODEL_ALIAS");
  auto tags = std::make_shared<std::string>();
  cmd->add_option("--tags", *tags, "Comma-separated tags GET /models lists (llama-server's)")->envname("EMBER_TAGS");
  // llama-server's names (docs/llama-server-compat.md).
  cmd->add_option("-c,--ctx-size", o->ctx_size,
                  "Context positions per sequence (0 = the model's, at most 32768). Unlike llama-server's, not "
                  "divided among --parallel: sequences share one KV budget (as llama-server's --kv-unified)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 24))->envname("EMBER_CTX_SIZE");
  cmd->add_option("-n,--n-predict", o->n_predict,
                  "Default max tokens of a request that names none, on every API (-1 = up to the context)")
      ->capture_default_str()->check(CLI::Range(-1, INT32_MAX))->envname("EMBER_N_PREDICT");
  cmd->add_option("--temp", o->default_temperature, "POST /completion's default temperature (llama-server's 0.8)")
      ->capture_default_str()->check(CLI::Range(0.0, 100.0))->envname("EMBER_TEMP");
  auto seed = std::make_shared<int64_t>(-1);
  cmd->add_option("--seed", *seed, "POST /completion's default seed (-1 = a fresh one per request)")
      ->capture_default_str()->check(CLI::Range(int64_t{-1}, int64_t{UINT32_MAX}))->envname("EMBER_SEED");
  cmd->add_option("--chat-template-file", o->chat_template_file,
                  "Render chats with this Jinja template instead of the model's tokenizer.chat_template")
      ->check(CLI::ExistingFile)->envname("EMBER_CHAT_TEMPLATE_FILE");
  auto no_metrics = std::make_shared<bool>(false);
  auto no_slots = std::make_shared<bool>(false);
  cmd->add_flag("--no-metrics", *no_metrics, "Turn GET /metrics off (501, as llama-server without --metrics)")
      ->envname("EMBER_NO_METRICS");
  auto accepted = std::make_shared<bool>(false);  // the defaults' own flags: accepted, nothing to change
  cmd->add_flag("--metrics", *accepted, "Serve GET /metrics (the default; accepted for llama-server command lines)");
  cmd->add_flag("--no-slots", *no_slots, "Turn GET /slots off (501, as llama-server's --no-slots)")
      ->envname("EMBER_NO_SLOTS");
  cmd->add_flag("--slots", *accepted, "Serve GET /slots (the default)");
  cmd->add_option("--max-body-bytes", o->max_body_bytes, "Largest request body (413 beyond)")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("EMBER_MAX_BODY_BYTES");
  cmd->add_option("--completion-prompt-specials", *prompt_specials,
                  "Raw /v1/completions prompts: control-token strings such as <|eot_id|> become control tokens "
                  "(on, as llama-server) or stay plain text (off). Chat messages are always plain text")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}))->envname("EMBER_COMPLETION_PROMPT_SPECIALS");
  cmd->add_option("--max-queue", o->max_queue, "Generations allowed to wait (429 beyond)")
      ->capture_default_str()->envname("EMBER_MAX_QUEUE");
  cmd->add_option("--parallel", o->parallel,
                  "Generations advancing together, one forward pass per step over all of them (continuous "
                  "batching); 1 = one at a time")
      ->capture_default_str()->check(CLI::Range(1, server::kMaxParallel))->envname("EMBER_PARALLEL");
  cmd->add_option("--step-tokens", o->step_tokens,
                  "Prompt tokens a step may forward beside the running sequences' decode tokens (chunked "
                  "prefill: a long prompt holds the others' streams up by one chunk per step); 16 to 512")
      ->capture_default_str()->check(CLI::Range(int64_t{server::kMinStepTokens}, int64_t{512}))
      ->envname("EMBER_STEP_TOKENS");
  cmd->add_option("--step-ms", o->step_ms,
                  "Step time target (ms) while any sequence decodes: a long prompt's chunks are cut so each "
                  "step, and so each running stream's gap between two tokens, stays near it (a cost model "
                  "fitted to the steps run predicts their time); 0 = size by --step-tokens alone; 0 to 10000")
      ->capture_default_str()->check(CLI::Range(0.0, 10000.0))->envname("EMBER_STEP_MS");
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Hybrid models (qwen35): keep the recurrent state every N prompt tokens of a long prefill, so a "
                  "prompt that diverges inside it resumes near there (besides the checkpoints before each turn "
                  "start and at the prompt's end); each costs one recurrent state of RAM cache; 0 = none")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->envname("EMBER_CHECKPOINT_EVERY");
  cmd->add_option("--spec", o->spec,
                  "Speculative decoding, lossless (docs/speculative.md): off | ngram (prompt lookup: drafts what "
                  "followed the reply's last tokens earlier in the context) | draft (--draft-model)")
      ->capture_default_str()->check(CLI::IsMember({"off", "ngram", "draft"}))->envname("EMBER_SPEC");
  cmd->add_option("--draft-model", o->draft_model_path,
                  "Draft model for speculative decoding (must share the model's vocabulary); implies --spec draft")
      ->envname("EMBER_DRAFT_MODEL");
  cmd->add_option("--draft-max", o->draft_max, "Most tokens drafted per verification")
      ->capture_default_str()->check(CLI::Range(1, kMaxDraftTokens))->envname("EMBER_DRAFT_MAX");
  cmd->add_option("--draft-ngram-min", o->draft_ngram_min, "Prompt lookup: shortest tail n-gram that may match")
      ->capture_default_str()->check(CLI::Range(1, 64))->envname("EMBER_DRAFT_NGRAM_MIN");
  cmd->add_option("--draft-ngram-max", o->draft_ngram_max, "Prompt lookup: longest tail n-gram tried")
      ->capture_default_str()->check(CLI::Range(1, 64))->envname("EMBER_DRAFT_NGRAM_MAX");
  cmd->add_option("--kv-budget", o->kv_budget,
                  "Memory for the KV of running generations plus the RAM prompt cache, e.g. 8G (default: 75% of "
                  "free RAM less the weights, printed at start); a generation that does not fit waits, one that "
                  "never could is a 400")
      ->envname("EMBER_KV_BUDGET");
  cmd->add_option("--threads", o->threads, "Engine compute threads (0 = physical cores)")
      ->capture_default_str()->check(CLI::Range(0, 1024))->envname("EMBER_THREADS");
  cmd->add_option("--http-threads", o->http_threads,
                  "Connection worker threads; each open connection holds one (0 = --max-queue + --parallel + 64: "
                  "the running and queued generations, and 64 spare for /health, 429s and idle connections; with "
                  "several models the first term times the models loaded at once)")
      ->capture_default_str()->check(CLI::Range(0, 4096))->envname("EMBER_HTTP_THREADS");
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout_s, "Seconds in-flight work may take on SIGTERM/SIGINT")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->envname("EMBER_SHUTDOWN_TIMEOUT");
  cmd->add_option("--request-timeout", o->request_timeout_s,
                  "Seconds from a request's first byte to the end of its body (408 beyond: slow clients)")
      ->capture_default_str()->check(CLI::Range(0.1, 86400.0))->envname("EMBER_REQUEST_TIMEOUT");
  cmd->add_option("--header-timeout", o->header_timeout_s,
                  "Seconds a new connection has to send its request line and headers (a kept-alive one, from "
                  "its next request's first byte); a partial head then gets 408, none at all a close")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0))->envname("EMBER_HEADER_TIMEOUT");
  cmd->add_option("--keep-alive-timeout", o->keep_alive_timeout_s,
                  "Seconds a kept-alive connection may wait idle for its next request (it holds only a socket)")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0))->envname("EMBER_KEEP_ALIVE_TIMEOUT");
  cmd->add_option("--max-connections", o->max_connections,
                  "Open connections in all; past it a new one closes the oldest idle (or still-sending) one, "
                  "or is closed at once when every connection is being answered")
      ->capture_default_str()->check(CLI::Range(16, 1 << 20))->envname("EMBER_MAX_CONNECTIONS");
  cmd->add_option("--max-client-connections", o->max_client_connections,
                  "Open connections from one client address; past it a new one from that address closes its "
                  "oldest idle (or still-sending) one, so a client can push out only its own")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20))->envname("EMBER_MAX_CLIENT_CONNECTIONS");
  auto fake_models = std::make_shared<std::string>();
  cmd->add_option("--fake-models", *fake_models,
                  "Serve several fake models by these comma-separated names (as --fake, one backend each, loaded "
                  "on demand): for testing model selection without model files")
      ->envname("EMBER_FAKE_MODELS");
  cmd->add_option("--fake-token-delay-ms", o->fake_token_delay_ms,
                  "--fake: sleep per token (to test streaming, cancel and drain)")
      ->capture_default_str()->check(CLI::Range(0, 10000))->envname("EMBER_FAKE_TOKEN_DELAY_MS");
  cmd->add_option("--fake-context-length", o->fake_context_length, "--fake: context length in tokens")
      ->capture_default_str()->check(CLI::Range(16, 1 << 24))->envname("EMBER_FAKE_CONTEXT_LENGTH");
  cmd->add_option("--fake-kv-budget-tokens", o->fake_kv_budget_tokens,
                  "--fake: KV budget in tokens; each running request holds prompt + max_tokens of it (0 = none; "
                  "to test memory admission: waits, 400 when one request exceeds it)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 40))->envname("EMBER_FAKE_KV_BUDGET_TOKENS");
  auto no_ssd = std::make_shared<bool>(false);
  auto verify = std::make_shared<std::string>("on");
  cmd->add_option("--ssd-cache", o->ssd_cache_dir,
                  "SSD prompt-cache directory (default: $XDG_CACHE_HOME/ember or ~/.cache/ember); it must be this "
                  "user's alone (not writable by group/others) and one server's per model, else the SSD tier is off "
                  "with a warning")
      ->envname("EMBER_SSD_CACHE");
  cmd->add_flag("--no-ssd-cache", *no_ssd, "Turn the SSD prompt cache off")->envname("EMBER_NO_SSD_CACHE");
  cmd->add_option("--ssd-cache-bytes", o->ssd_cache_bytes,
                  "SSD cache disk cap, e.g. 100G (0 = unlimited; default 32G); oldest files are evicted past it")
      ->envname("EMBER_SSD_CACHE_BYTES");
  cmd->add_option("--ssd-demote-idle", o->ssd_demote_idle_s,
                  "Seconds a RAM cache entry may sit unused before it moves to SSD (0 = never)")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->envname("EMBER_SSD_DEMOTE_IDLE");
  cmd->add_option("--ssd-cache-verify", *verify, "Verify tensor checksums when restoring from SSD (on|off)")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}))->envname("EMBER_SSD_CACHE_VERIFY");
  cmd->add_option("--ssd-flush-timeout", o->ssd_flush_timeout_s,
                  "Seconds a cache flush (POST /admin/cache/flush, shutdown) may take")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->envname("EMBER_SSD_FLUSH_TIMEOUT");
  auto store_size = std::make_shared<std::string>("256M");
  cmd->add_option("--responses-store-size", *store_size,
                  "Bytes of stored /v1/responses responses (store:true) kept, e.g. 256M; with N API keys each "
                  "key may hold 1/N, its own least recently used going first (0 = store nothing). Kept in "
                  "<--ssd-cache DIR>/responses so they survive restarts; RAM only with --no-ssd-cache")
      ->capture_default_str()->envname("EMBER_RESPONSES_STORE_SIZE");
  cmd->add_option("--responses-ttl", o->responses_ttl_s,
                  "Seconds a stored response is kept (0 = until evicted by size; default 30 days)")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->envname("EMBER_RESPONSES_TTL");
  cmd->callback([o, cmd, key_file, set_exit, no_ssd, verify, prompt_specials, store_size, seed, no_metrics, no_slots,
                 accepted, tags, fake_models] {
    ServeOptions opts = *o;
    // --draft-model alone means --spec draft.
    if (!opts.draft_model_path.empty() && cmd->get_option("--spec")->count() == 0) opts.spec = "draft";
    StatusOr<size_t> store_bytes = ParseByteSize(*store_size);
    if (!store_bytes.ok()) {
      std::fprintf(stderr, "ember serve: --responses-store-size: %s\n", store_bytes.status().message().c_str());
      return set_exit(2);
    }
    opts.responses_store_bytes = *store_bytes;
    if (*seed >= 0) opts.default_seed = static_cast<uint64_t>(*seed);
    opts.metrics_endpoint = !*no_metrics;
    opts.slots_endpoint = !*no_slots;
    opts.model_aliases = SplitList(opts.model_alias);
    if (!opts.model_aliases.empty()) opts.model_alias = opts.model_aliases.front();
    opts.model_tags = SplitList(*tags);
    opts.fake_models = SplitList(*fake_models);
    // Several models: --models-dir, --fake-models, or no MODEL (not --fake) — the whole library then,
    // the other tools' stores included; --models-dir alone means its folders and the data dir only.
    opts.multi_model = !opts.fake_models.empty() || !opts.models_dirs.empty() || (opts.model_path.empty() && !opts.fake);
    opts.model_stores = opts.model_path.empty() && opts.models_dirs.empty();
    const library::ScanOptions scan = library::ProcessScanOptions();  // $XDG_DATA_HOME/ember and $HOME
    opts.models_data_dir = scan.data_dir;
    opts.models_home = scan.home;
    opts.ssd_cache_verify = *verify == "on";
    opts.completion_prompt_specials = *prompt_specials == "on";
    opts.progress = ShowProgress();  // load and hashing bars, on a terminal only
    if (*no_ssd) {
      opts.ssd_cache_dir.clear();
    } else if (opts.ssd_cache_dir.empty()) {
      opts.ssd_cache_dir = DefaultSsdCacheDir();
    }
    set_exit(Serve(opts, *key_file));
  });
}

}  // namespace

EMBER_REGISTER_COMMAND("serve", SetupServe);

}  // namespace ember::cli
