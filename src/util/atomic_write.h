// The one way ember replaces a file so that a crash leaves the old file or the complete new one, never a
// torn one: write a fresh temp file, fsync it, rename it over the final name, fsync the directory.
//
// WriteFileAtomically(env, dir, name, fill):
//   1. creates dir/TempName(name) ("<name>.<16 random hex>.tmp"), exclusively, mode 0600 (env.h), so
//      nothing planted there is followed and two writers of one name never share a temp file;
//   2. calls fill(file), which streams the contents in with Append (any number of calls: the contents
//      need never be whole in memory);
//   3. Sync, Close, optional SetPermissions (mode other than 0600), Rename over dir/name, SyncDir(dir).
// A failure in 1-3 before the rename removes the temp file (best effort) and returns that error with its
// code (ENOSPC stays kNoSpace); dir/name is untouched. A failing SyncDir is returned too, but then the
// new file is already visible under the final name, only not known to survive a power cut.
//
// Thread-safety: as safe as the Env and as fill; concurrent writers of one name are safe (the last rename
// wins).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "util/env.h"
#include "util/status.h"

namespace ember {

using FileFiller = std::function<Status(WritableFile& file)>;

Status WriteFileAtomically(Env& env, const std::string& dir, const std::string& name, const FileFiller& fill,
                           uint32_t mode = 0600);

// The same for contents already in memory (small files: a memo, a JSON description).
Status WriteFileAtomically(Env& env, const std::string& dir, const std::string& name, std::string_view contents,
                           uint32_t mode = 0600);

}  // namespace ember
