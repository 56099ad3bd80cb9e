// Eval DB schema history. Migrations only ADD (tables, columns, indexes): a row written by any older
// ember stays readable and keeps its meaning, because published numbers cite these rows.
// To change the schema append one Migration; never edit or reorder a shipped one.
#pragma once

#include <string>
#include <vector>

#include "bench/sqlite.h"

namespace ember::bench {

struct Migration {
  int version;      // the schema_version after this migration
  std::string sql;  // one or more statements; run in a transaction with the version bump
};

const std::vector<Migration>& EvalMigrations();
int LatestSchemaVersion();

// Current schema version of `db` (0 for a fresh file).
StatusOr<int> SchemaVersion(SqliteDb& db);

// Applies every migration newer than the DB's version, each atomically. Refuses a DB written by a
// newer ember (its columns might carry meanings this build does not know).
Status MigrateToLatest(SqliteDb& db);
// Applies migrations up to and including `version` (tests build old-schema DBs with it).
Status MigrateTo(SqliteDb& db, int version);

}  // namespace ember::bench
