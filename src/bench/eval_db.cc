#include "bench/eval_db.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <vector>

#include <xxhash.h>

#include "bench/eval_migrations.h"
#include "util/hex.h"

namespace ember::bench {
namespace {

// Column order shared by INSERT and SELECT so the two cannot drift apart.
constexpr const char* kColumns =
    "created_at, ember_commit, ember_dirty, stack, stack_version, stack_variant, model_path, model_hash, "
    "arch, params, dtype, leg, threads, prompt_tokens, gen_tokens, cached_tokens, context_tokens, turn, "
    "prefill_tok_s, decode_tok_s, ttft_ms, ready_ms, peak_rss_bytes, n_runs, spread, tag, preflight_ok, "
    "machine_state, samples, clients, ttft_p95_ms, wall_ms";
constexpr int kNumColumns = 32;

std::optional<int64_t> OptBool(const std::optional<bool>& b) {
  return b ? std::optional<int64_t>(*b ? 1 : 0) : std::nullopt;
}

void BindRow(SqliteStmt& st, const EvalRow& r) {
  int i = 1;
  st.BindText(i++, r.created_at);
  st.BindText(i++, r.ember_commit);
  st.BindInt(i++, r.ember_dirty ? 1 : 0);
  st.BindText(i++, r.stack);
  st.Bind(i++, r.stack_version);
  st.Bind(i++, r.stack_variant);
  st.BindText(i++, r.model_path);
  st.Bind(i++, r.model_hash);
  st.Bind(i++, r.arch);
  st.Bind(i++, r.params);
  st.Bind(i++, r.dtype);
  st.BindText(i++, r.leg);
  for (const auto* v : {&r.threads, &r.prompt_tokens, &r.gen_tokens, &r.cached_tokens, &r.context_tokens, &r.turn})
    st.Bind(i++, *v);
  for (const auto* v : {&r.prefill_tok_s, &r.decode_tok_s, &r.ttft_ms, &r.ready_ms}) st.Bind(i++, *v);
  st.Bind(i++, r.peak_rss_bytes);
  st.Bind(i++, r.n_runs);
  st.Bind(i++, r.spread);
  st.Bind(i++, r.tag);
  st.Bind(i++, OptBool(r.preflight_ok));
  st.BindText(i++, r.machine_state);
  st.BindText(i++, r.samples);
  st.Bind(i++, r.clients);
  st.Bind(i++, r.ttft_p95_ms);
  st.Bind(i++, r.wall_ms);
}

EvalRow ReadRow(const SqliteStmt& st) {
  EvalRow r;
  int i = 0;
  r.id = st.ColumnInt(i++).value_or(0);
  r.created_at = st.ColumnText(i++).value_or("");
  r.ember_commit = st.ColumnText(i++).value_or("");
  r.ember_dirty = st.ColumnInt(i++).value_or(0) != 0;
  r.stack = st.ColumnText(i++).value_or("");
  r.stack_version = st.ColumnText(i++);
  r.stack_variant = st.ColumnText(i++);
  r.model_path = st.ColumnText(i++).value_or("");
  r.model_hash = st.ColumnText(i++);
  r.arch = st.ColumnText(i++);
  r.params = st.ColumnInt(i++);
  r.dtype = st.ColumnText(i++);
  r.leg = st.ColumnText(i++).value_or("");
  for (auto* v : {&r.threads, &r.prompt_tokens, &r.gen_tokens, &r.cached_tokens, &r.context_tokens, &r.turn})
    *v = st.ColumnInt(i++);
  for (auto* v : {&r.prefill_tok_s, &r.decode_tok_s, &r.ttft_ms, &r.ready_ms}) *v = st.ColumnDouble(i++);
  r.peak_rss_bytes = st.ColumnInt(i++);
  r.n_runs = st.ColumnInt(i++);
  r.spread = st.ColumnDouble(i++);
  r.tag = st.ColumnText(i++);
  if (auto p = st.ColumnInt(i++)) r.preflight_ok = *p != 0;
  r.machine_state = st.ColumnText(i++).value_or("{}");
  r.samples = st.ColumnText(i++).value_or("[]");
  r.clients = st.ColumnInt(i++);
  r.ttft_p95_ms = st.ColumnDouble(i++);
  r.wall_ms = st.ColumnDouble(i++);
  return r;
}

}  // namespace

std::string DefaultEvalDbPath(const std::string& xdg_data_home, const std::string& home) {
  // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
  if (!xdg_data_home.empty() && xdg_data_home[0] == '/') return xdg_data_home + "/ember/evals.sqlite";
  return (home.empty() ? std::string(".") : home) + "/.local/share/ember/evals.sqlite";
}

StatusOr<std::unique_ptr<EvalDb>> EvalDb::Open(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(auto db, SqliteDb::Open(path));
  EMBER_RETURN_IF_ERROR(MigrateToLatest(*db));
  return std::unique_ptr<EvalDb>(new EvalDb(std::move(db)));
}

StatusOr<int64_t> EvalDb::Insert(const EvalRow& row) {
  std::string placeholders;
  for (int i = 0; i < kNumColumns; ++i) placeholders += i ? ",?" : "?";
  EMBER_ASSIGN_OR_RETURN(SqliteStmt st, db_->Prepare(std::string("INSERT INTO evals (") + kColumns +
                                                          ") VALUES (" + placeholders + ")"));
  BindRow(st, row);
  EMBER_RETURN_IF_ERROR(db_->Run(st));
  return db_->LastInsertRowId();
}

StatusOr<std::vector<EvalRow>> EvalDb::List(const EvalFilter& f) const {
  std::string sql = std::string("SELECT id, ") + kColumns + " FROM evals WHERE 1=1";
  std::vector<std::optional<std::string>> texts;
  if (f.model) sql += " AND (instr(model_path, ?) > 0 OR model_hash = ?)", texts.push_back(f.model), texts.push_back(f.model);
  if (f.stack) sql += " AND stack = ?", texts.push_back(f.stack);
  if (f.leg) sql += " AND leg = ?", texts.push_back(f.leg);
  if (f.commit) sql += " AND ember_commit LIKE ? || '%'", texts.push_back(f.commit);
  if (f.since) sql += " AND created_at >= ?", texts.push_back(f.since);
  if (f.threads) sql += " AND threads = " + std::to_string(*f.threads);
  sql += " ORDER BY id";
  if (f.limit > 0) sql += " LIMIT " + std::to_string(f.limit);
  EMBER_ASSIGN_OR_RETURN(SqliteStmt st, db_->Prepare(sql));
  for (size_t i = 0; i < texts.size(); ++i) st.Bind(static_cast<int>(i + 1), texts[i]);
  std::vector<EvalRow> rows;
  while (st.Step()) rows.push_back(ReadRow(st));
  EMBER_RETURN_IF_ERROR(st.status());
  return rows;
}

StatusOr<bool> EvalDb::HasCell(const std::string& commit, const std::string& model_hash, const std::string& stack,
                               const std::string& leg, int64_t threads, bool measured_only) const {
  EMBER_ASSIGN_OR_RETURN(SqliteStmt st, db_->Prepare(
      std::string("SELECT 1 FROM evals WHERE ember_commit = ? AND model_hash = ? AND stack = ? AND leg = ? AND threads = ?") +
      (measured_only ? " AND (tag IS NULL OR tag != 'n/a')" : "") + " LIMIT 1"));
  st.BindText(1, commit);
  st.BindText(2, model_hash);
  st.BindText(3, stack);
  st.BindText(4, leg);
  st.BindInt(5, threads);
  bool found = st.Step();
  EMBER_RETURN_IF_ERROR(st.status());
  return found;
}

StatusOr<std::string> EvalDb::ModelHash(const std::string& path) {
  struct stat sb{};
  if (::stat(path.c_str(), &sb) != 0) return ErrnoStatus("stat", path, errno);
  const int64_t size = sb.st_size;
  const int64_t mtime_ns = static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec;
  EMBER_ASSIGN_OR_RETURN(SqliteStmt q, db_->Prepare("SELECT hash FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ?"));
  q.BindText(1, path);
  q.BindInt(2, size);
  q.BindInt(3, mtime_ns);
  if (q.Step()) return q.ColumnText(0).value_or("");
  EMBER_RETURN_IF_ERROR(q.status());
  EMBER_ASSIGN_OR_RETURN(std::string hash, HashFileXxh3(path));
  EMBER_ASSIGN_OR_RETURN(SqliteStmt up, db_->Prepare(
      "INSERT OR REPLACE INTO file_hashes(path, size, mtime_ns, hash) VALUES (?, ?, ?, ?)"));
  up.BindText(1, path);
  up.BindInt(2, size);
  up.BindInt(3, mtime_ns);
  up.BindText(4, hash);
  EMBER_RETURN_IF_ERROR(db_->Run(up));
  return hash;
}

StatusOr<std::string> HashFileXxh3(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("open", path, errno ? errno : ENOENT);
  XXH3_state_t* state = XXH3_createState();
  if (!state) return ResourceExhausted("xxhash state");
  XXH3_64bits_reset(state);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) XXH3_64bits_update(state, buf.data(), static_cast<size_t>(in.gcount()));
  }
  const bool failed = in.bad();
  const XXH64_hash_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  if (failed) return IoError("read " + path);
  return Hex64(h);
}

}  // namespace ember::bench
