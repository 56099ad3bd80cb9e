#include "bench/eval_migrations.h"

namespace ember::bench {

const std::vector<Migration>& EvalMigrations() {
  static const std::vector<Migration> kMigrations = {
      // v1: one row per cell aggregate (docs/bench-spec.md §4), every figure a real column.
      {1, R"sql(
        CREATE TABLE evals (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          created_at TEXT NOT NULL,
          ember_commit TEXT NOT NULL,
          ember_dirty INTEGER NOT NULL,
          stack TEXT NOT NULL,
          stack_version TEXT,
          model_path TEXT NOT NULL,
          model_hash TEXT,
          arch TEXT,
          params INTEGER,
          dtype TEXT,
          leg TEXT NOT NULL,
          threads INTEGER,
          prompt_tokens INTEGER,
          gen_tokens INTEGER,
          cached_tokens INTEGER,
          prefill_tok_s REAL,
          decode_tok_s REAL,
          ttft_ms REAL,
          ready_ms REAL,
          peak_rss_bytes INTEGER,
          n_runs INTEGER,
          spread REAL,
          tag TEXT,
          preflight_ok INTEGER,
          machine_state TEXT,
          samples TEXT
        );
        CREATE INDEX evals_cell ON evals(ember_commit, model_hash, stack, leg, threads);
      )sql"},
      // v2: what cache legs and long-context rows need (per-turn rows, measured context, the peer's
      // CPU variant library), and the model-hash cache keyed by path+size+mtime.
      {2, R"sql(
        ALTER TABLE evals ADD COLUMN turn INTEGER;
        ALTER TABLE evals ADD COLUMN context_tokens INTEGER;
        ALTER TABLE evals ADD COLUMN stack_variant TEXT;
        CREATE TABLE file_hashes (
          path TEXT PRIMARY KEY,
          size INTEGER NOT NULL,
          mtime_ns INTEGER NOT NULL,
          hash TEXT NOT NULL
        );
      )sql"},
      // v3: the load legs (concurrency, agents): one row per client count, with TTFT p95 and the
      // workload's wall time beside the p50 in ttft_ms.
      {3, R"sql(
        ALTER TABLE evals ADD COLUMN clients INTEGER;
        ALTER TABLE evals ADD COLUMN ttft_p95_ms REAL;
        ALTER TABLE evals ADD COLUMN wall_ms REAL;
      )sql"},
  };
  return kMigrations;
}

int LatestSchemaVersion() { return EvalMigrations().back().version; }

StatusOr<int> SchemaVersion(SqliteDb& db) {
  EMBER_RETURN_IF_ERROR(db.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  EMBER_ASSIGN_OR_RETURN(SqliteStmt st, db.Prepare("SELECT MAX(version) FROM schema_version"));
  int v = 0;
  if (st.Step()) v = static_cast<int>(st.ColumnInt(0).value_or(0));
  EMBER_RETURN_IF_ERROR(st.status());
  return v;
}

Status MigrateTo(SqliteDb& db, int target) {
  EMBER_ASSIGN_OR_RETURN(int current, SchemaVersion(db));
  if (current > LatestSchemaVersion())
    return FailedPrecondition(db.path() + ": schema version " + std::to_string(current) +
                              " is newer than this ember understands (" + std::to_string(LatestSchemaVersion()) +
                              "); use a newer ember");
  for (const Migration& m : EvalMigrations()) {
    if (m.version <= current || m.version > target) continue;
    EMBER_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
    Status st = db.Exec(m.sql);
    if (st.ok()) st = db.Exec("INSERT INTO schema_version(version) VALUES (" + std::to_string(m.version) + ")");
    if (!st.ok()) {
      (void)db.Exec("ROLLBACK");
      return st.WithContext("migration to schema " + std::to_string(m.version));
    }
    EMBER_RETURN_IF_ERROR(db.Exec("COMMIT"));
  }
  return Status::Ok();
}

Status MigrateToLatest(SqliteDb& db) { return MigrateTo(db, LatestSchemaVersion()); }

}  // namespace ember::bench
