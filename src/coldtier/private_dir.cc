#include "coldtier/private_dir.h"

#include <cstdio>

namespace ember {
namespace {

std::string Octal(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

// CheckPrivateDir, returning what it saw.
StatusOr<PathInfo> Checked(Env& env, const std::string& dir, DirRole role) {
  EMBER_ASSIGN_OR_RETURN(PathInfo info, env.Stat(dir, /*follow_symlinks=*/role == DirRole::kRoot));
  if (info.type == PathInfo::Type::kSymlink) {
    return FailedPrecondition(dir + " is a symbolic link; ember does not follow links inside its cache "
                                    "directory (remove the link)");
  }
  if (info.type != PathInfo::Type::kDir) return FailedPrecondition(dir + " exists and is not a directory");
  const uint32_t me = env.Uid();
  if (info.uid != me) {
    return FailedPrecondition(dir + " is owned by uid " + std::to_string(info.uid) + ", not by this user (uid " +
                              std::to_string(me) + "), who alone may write the cache; use a directory you own "
                              "(--ssd-cache DIR) or `chown -R " + std::to_string(me) + " " + dir + "`");
  }
  if ((info.mode & 022u) != 0) {
    return FailedPrecondition(dir + " is writable by group or others (mode " + Octal(info.mode) +
                              "), so another user could plant or swap cache files; run `chmod 700 " + dir +
                              "` or use another --ssd-cache DIR");
  }
  return info;
}

}  // namespace

Status CheckPrivateDir(Env& env, const std::string& dir, DirRole role) { return Checked(env, dir, role).status(); }

Status EnsurePrivateDir(Env& env, const std::string& dir, DirRole role) {
  EMBER_RETURN_IF_ERROR(env.CreateDirs(dir));
  EMBER_ASSIGN_OR_RETURN(PathInfo info, Checked(env, dir, role));
  if (role == DirRole::kOwn) {
    if ((info.mode & 077u) != 0) EMBER_RETURN_IF_ERROR(env.SetPermissions(dir, 0700));
  }
  return Status::Ok();
}

}  // namespace ember
