#include "util/atomic_write.h"

namespace ember {

namespace {

// Steps 1-3 up to and including the rename; *created says whether tmp is ours to remove on failure (a
// failed create made nothing, or hit someone else's file).
Status WriteAndRename(Env& env, const std::string& tmp, const std::string& final_path, const FileFiller& fill,
                      uint32_t mode, bool* created) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env.NewWritableFile(tmp));
  *created = true;
  EMBER_RETURN_IF_ERROR(fill(*file));
  EMBER_RETURN_IF_ERROR(file->Sync());
  EMBER_RETURN_IF_ERROR(file->Close());
  if (mode != 0600) EMBER_RETURN_IF_ERROR(env.SetPermissions(tmp, mode));
  return env.Rename(tmp, final_path);
}

}  // namespace

Status WriteFileAtomically(Env& env, const std::string& dir, const std::string& name, const FileFiller& fill,
                           uint32_t mode) {
  const std::string tmp = JoinPath(dir, TempName(name));
  bool created = false;
  if (Status st = WriteAndRename(env, tmp, JoinPath(dir, name), fill, mode, &created); !st.ok()) {
    // Best effort: a temp file that cannot be removed now is deleted by the owner's startup scan.
    if (created) (void)env.RemoveFile(tmp);
    return st;
  }
  // The rename is visible now; without the directory sync it might not survive a crash, so report it.
  return env.SyncDir(dir);
}

Status WriteFileAtomically(Env& env, const std::string& dir, const std::string& name, std::string_view contents,
                           uint32_t mode) {
  return WriteFileAtomically(
      env, dir, name, [contents](WritableFile& f) { return f.Append(contents.data(), contents.size()); }, mode);
}

}  // namespace ember
