// The eval DB (docs/bench-spec.md §4): one SQLite file, one row per cell aggregate, every figure a real
// column. Rows are appended, never rewritten; resumable runs ask HasCell before measuring.
// Not thread-safe: one EvalDb per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/sqlite.h"
#include "util/status.h"

namespace ember::bench {

struct EvalRow {
  int64_t id = 0;                 // assigned on insert
  std::string created_at;         // ISO-8601 UTC
  std::string ember_commit;
  bool ember_dirty = false;
  std::string stack;              // "ember", "llama.cpp"
  std::optional<std::string> stack_version;
  std::optional<std::string> stack_variant;  // e.g. libggml-cpu-zen4.so
  std::string model_path;
  std::optional<std::string> model_hash;     // xxh3-64 of the file, hex
  std::optional<std::string> arch, dtype;
  std::optional<int64_t> params;
  std::string leg;                // "direct", "served", "cache-warm", ...
  std::optional<int64_t> threads, prompt_tokens, gen_tokens, cached_tokens, context_tokens, turn;
  std::optional<double> prefill_tok_s, decode_tok_s, ttft_ms, ready_ms;
  // Load legs: concurrent clients (or agents) of this row, TTFT p95 (ttft_ms holds the p50), wall time.
  std::optional<int64_t> clients;
  std::optional<double> ttft_p95_ms, wall_ms;
  std::optional<int64_t> peak_rss_bytes, n_runs;
  std::optional<double> spread;
  std::optional<std::string> tag;            // stability tag: stable / stabilized / unstable
  std::optional<bool> preflight_ok;
  std::string machine_state = "{}";          // preflight JSON
  std::string samples = "[]";                // per-run raw samples JSON
};

struct EvalFilter {
  std::optional<std::string> model;   // substring of the model path, or an exact model hash
  std::optional<std::string> stack, leg, commit;
  std::optional<std::string> since;   // rows with created_at >= this (a date "2026-11-29" works)
  std::optional<int64_t> threads;
  int64_t limit = 0;                  // 0: no limit
};

// Where the DB lives by default: $XDG_DATA_HOME/ember/evals.sqlite, else ~/.local/share/ember/...
// Environment values are passed in (read at the CLI edge), empty meaning unset.
std::string DefaultEvalDbPath(const std::string& xdg_data_home, const std::string& home);

class EvalDb {
 public:
  // Opens or creates the DB and migrates it to the latest schema.
  static StatusOr<std::unique_ptr<EvalDb>> Open(const std::string& path);

  StatusOr<int64_t> Insert(const EvalRow& row);
  StatusOr<std::vector<EvalRow>> List(const EvalFilter& filter) const;
  // Whether a row for this cell already exists (resumable h2h runs skip it). `measured_only`: rows
  // tagged n/a do not count (a stack that can run the leg now supersedes its earlier n/a row).
  StatusOr<bool> HasCell(const std::string& commit, const std::string& model_hash, const std::string& stack,
                         const std::string& leg, int64_t threads, bool measured_only = false) const;

  // xxh3-64 of the file's contents, cached in the DB by path + size + mtime so a 10 GB model is
  // hashed once, and re-hashed whenever it changes.
  StatusOr<std::string> ModelHash(const std::string& path);

  SqliteDb& sql() { return *db_; }

 private:
  explicit EvalDb(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
  std::unique_ptr<SqliteDb> db_;
};

// Streams a file through XXH3-64; returns 16 lowercase hex digits.
StatusOr<std::string> HashFileXxh3(const std::string& path);

}  // namespace ember::bench
