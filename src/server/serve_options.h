// Configuration of `ember serve`, filled by the CLI (flags and EMBER_* environment variables) and
// passed in; nothing in the server reads the environment itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::server {

struct ServeOptions {
  std::string model_path;                  // GGUF file; empty with `fake`, or to serve what a scan finds
  // Several models (docs/server.md "Several models"): serve the runnable models of these folders and of
  // models_data_dir ($XDG_DATA_HOME/ember), and, with model_stores, of the other tools' stores under
  // models_home; each loaded on demand. Filled by the CLI; `multi_model` says this mode is on.
  bool multi_model = false;
  std::vector<std::string> models_dirs;
  std::string models_data_dir;
  std::string models_home;
  bool model_stores = false;
  std::vector<std::string> fake_models;    // --fake-models: several FakeBackends by these names
  size_t max_loaded = 0;                   // models loaded at once (0 = as many as memory allows)
  // Several models: how many may be loaded, and generating, at once; sizes the connection workers'
  // default. Set by the CLI (--max-loaded, else the runnable models found, at most 64); 1 for one model.
  size_t models_at_once = 1;
  double idle_unload_s = 0;                // unload a model unused this long (0 = never)
  double load_wait_s = 60;                 // a load waits this long for models in use to free room, then 503
  std::string memory_budget;               // weights + KV budgets of the loaded models; empty: 75% of free RAM
  bool fake = false;                       // serve the deterministic FakeBackend (tests, demos)
  // Progress bars on stderr while the model loads and its weights are hashed (the CLI sets it when
  // stderr is a terminal).
  bool progress = false;
  std::string model_alias;                 // served model id; default: the backend's model_id()
  std::string host = "127.0.0.1";          // loopback unless told otherwise
  int port = 8080;                         // 0 = pick a free port
  std::vector<std::string> api_keys;       // empty = no authentication
  // --admin-key: the key /stats, /metrics and /admin/* answer (access_control.h); "" = none.
  std::string admin_key;
  std::vector<std::string> cors_origins;   // beyond localhost; "*" allows any origin
  size_t max_body_bytes = 8u << 20;        // larger request bodies get 413
  // Raw /v1/completions prompts: control-token strings ("<|eot_id|>") become control tokens (llama-server
  // does the same). Off: they stay text. Chat messages are always text.
  bool completion_prompt_specials = true;
  size_t max_queue = 64;                   // waiting generations beyond this get 429
  int parallel = 4;  // sequences advancing together (--parallel); 1 = one at a time
  int threads = 0;                         // engine compute threads; 0 = physical cores
  // Connection workers; each open connection holds one, a streaming or queued client for its whole
  // generation. 0 = HttpWorkerThreads(): enough that the queue limit fires before workers run out.
  int http_threads = 0;
  double shutdown_timeout_s = 10;          // grace for in-flight work on SIGTERM/SIGINT
  // Host names served beyond loopback ones ("*" = any); checked when bound to loopback or when given.
  std::vector<std::string> allowed_hosts;
  double request_timeout_s = 30;           // first byte of a request -> end of its body, else 408
  double header_timeout_s = 5;             // a new connection -> the end of its request head, else 408/close
  double keep_alive_timeout_s = 5;         // a kept-alive connection idle this long is closed
  size_t max_connections = 16384;          // open connections in all (the oldest idle one makes room)
  size_t max_client_connections = 1024;    // open connections from one client address (likewise)
  int fake_token_delay_ms = 0;             // FakeBackend: per-token sleep
  int32_t fake_context_length = 4096;      // FakeBackend: context length
  int64_t fake_kv_budget_tokens = 0;       // FakeBackend: KV budget in tokens (0 = none), for admission tests
  std::string prompt_cache_bytes;          // RAM tier cap ("8G", "0" = off); empty: a quarter of RAM
  // SSD cold tier (docs/coldtier.md). The CLI fills ssd_cache_dir with its default
  // ($XDG_CACHE_HOME/ember or ~/.cache/ember) unless --no-ssd-cache; empty here means off.
  std::string ssd_cache_dir;
  std::string ssd_cache_bytes;             // disk cap ("100G", "0" = unlimited); empty: 32 GiB
  double ssd_demote_idle_s = 300;          // idle seconds before a RAM entry moves to SSD (0 = never)
  bool ssd_cache_verify = true;            // verify tensor checksums on restore
  double ssd_flush_timeout_s = 60;         // bound of a cache flush (POST /admin/cache/flush, shutdown)
  // Continuous batching (docs/server.md "Continuous batching"; `parallel` is above): prompt rows per
  // step beside the decode rows, and the KV budget ("8G"; empty: 75 % of free RAM less the weights,
  // printed at start).
  int64_t step_tokens = 256;
  // Step time target while any sequence decodes (ms; 0: rows only): prompt chunks beside decode rows
  // are cut so a step's predicted time stays near it (docs/batching.md, "Steps sized by time").
  double step_ms = 150;
  // Hybrid models (docs/hybrid.md): a recurrent-state checkpoint every this many prompt tokens of a long
  // prefill, besides the ones before each turn start and at the prompt's end (0: none).
  int64_t checkpoint_every = 2048;
  std::string kv_budget;
  // Speculative decoding (docs/speculative.md): "off" | "ngram" | "draft" (needs draft_model_path, which
  // must share the model's vocabulary), tokens drafted per verification, prompt-lookup n-gram sizes.
  std::string spec = "off";
  std::string draft_model_path;
  int draft_max = 8;
  int draft_ngram_min = 2;
  int draft_ngram_max = 4;
  // Stored responses (POST /v1/responses with store:true; response_store.h): a byte cap (LRU beyond it;
  // 0 = nothing is stored) and a TTL in seconds (0 = never expire). Persisted in <ssd_cache_dir>/responses
  // when ssd_cache_dir is set; RAM only otherwise.
  size_t responses_store_bytes = size_t{256} << 20;
  double responses_ttl_s = 30 * 24 * 3600.0;
  // llama-server compatibility (docs/llama-server-compat.md).
  int64_t ctx_size = 0;                    // positions per sequence (--ctx-size); 0: the model's, <= 32768
  int32_t n_predict = -1;                  // default max tokens when a request names none (-1: the context)
  float default_temperature = 0.8f;        // /completion's default temperature (--temp)
  std::optional<uint64_t> default_seed;    // /completion's default seed (--seed); absent: fresh per request
  bool metrics_endpoint = true;            // false (--no-metrics): GET /metrics answers 501
  bool slots_endpoint = true;              // false (--no-slots): GET /slots answers 501
  std::vector<std::string> model_aliases;  // --alias a,b,c (sorted; model_alias is the first); GET /models
  std::vector<std::string> model_tags;     // --tags x,y; GET /models
  std::string chat_template_file;          // a Jinja chat template used instead of the model's; "" = the model's
};

inline constexpr int kMaxParallel = 64;
inline constexpr int64_t kMinStepTokens = 16;

// Workers spare beyond the generations the queue admits (running + waiting): /health, /metrics, the
// requests that get a 429, idle keep-alive connections.
inline constexpr int kSpareHttpWorkers = 64;

// Generations that hold a connection worker at most: per model that can be loaded at once, one per lane
// running and max_queue waiting.
inline size_t MaxAdmittedGenerations(const ServeOptions& o) {
  const size_t per_model = o.max_queue + static_cast<size_t>(o.parallel > 1 ? o.parallel : 1);
  return per_model * (o.models_at_once > 1 ? o.models_at_once : 1);
}

// The worker count in effect: http_threads, or MaxAdmittedGenerations + kSpareHttpWorkers (at most 4096).
inline int HttpWorkerThreads(const ServeOptions& o) {
  if (o.http_threads > 0) return o.http_threads;
  const size_t wanted = MaxAdmittedGenerations(o) + kSpareHttpWorkers;
  return static_cast<int>(wanted < 4096 ? wanted : 4096);
}

}  // namespace ember::server
