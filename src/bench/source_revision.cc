#include "bench/source_revision.h"

#include "bench/proc_parse.h"
#include "util/subprocess.h"

namespace ember::bench {

SourceRevision ReadSourceRevision(const std::string& source_dir) {
  SourceRevision rev;
  auto head = RunProcess({"git", "-C", source_dir, "rev-parse", "HEAD"}, 10);
  if (!head.ok() || head->exit_code != 0) return rev;
  rev.commit = Trim(head->out);
  auto status = RunProcess({"git", "-C", source_dir, "status", "--porcelain", "--untracked-files=no"}, 20);
  rev.dirty = !status.ok() || status->exit_code != 0 || !Trim(status->out).empty();
  return rev;
}

}  // namespace ember::bench
