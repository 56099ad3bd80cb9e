// Which ember produced a row: the git commit of the source tree and whether it had uncommitted
// changes. Read with `git` (read-only commands) at the CLI edge and passed into h2h.
#pragma once

#include <string>

namespace ember::bench {

struct SourceRevision {
  std::string commit = "unknown";  // full hash, or "unknown" outside a git checkout
  bool dirty = false;              // tracked files differ from the commit
};

SourceRevision ReadSourceRevision(const std::string& source_dir);

}  // namespace ember::bench
