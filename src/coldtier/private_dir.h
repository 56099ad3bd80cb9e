// Which directories the cache may use (docs/coldtier.md "Directory safety"). A cache directory holds
// other people's prompts (as KV) and decides which KV a server trusts, so only a directory this user
// alone controls is used: one another user could write to could be used to plant entries, swap in links
// that make ember delete or overwrite files elsewhere, or read prompts back.
//
// Refused, with the path and the fix in the message (kFailedPrecondition):
//   * not a directory (or, for a directory ember keeps inside the cache, a symbolic link);
//   * owned by another uid than the one this process acts as;
//   * writable by group or others (sticky /tmp-style directories included).
// Ancestors of the cache root are not checked (as with ~/.ssh, the user's home is the user's business).
//
// Thread-safety: pure functions over an Env.
#pragma once

#include <string>

#include "util/env.h"
#include "util/status.h"

namespace ember {

enum class DirRole {
  // The directory the user named (--ssd-cache DIR, ember cache --dir): may be reached through a
  // symbolic link; created 0700 if missing; an existing one keeps its mode if it passes.
  kRoot,
  // A directory ember keeps inside the root (identity and namespace directories): never a link;
  // created 0700; one that passes but grants group or others any access (0755 from an older ember) is
  // tightened to 0700, so the entry files inside are readable by this user only.
  kOwn,
};

// Checks an existing directory against the rules above (kNotFound if it does not exist).
Status CheckPrivateDir(Env& env, const std::string& dir, DirRole role);

// Creates dir if needed (missing parents too, each 0700), then checks it (and tightens a kOwn one).
Status EnsurePrivateDir(Env& env, const std::string& dir, DirRole role);

}  // namespace ember
