// Small helpers the Env tests share (PosixEnv, MemEnv, FaultInjectionEnv).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/env.h"

namespace ember::testing {

inline std::vector<uint8_t> Data(const std::string& s) { return {s.begin(), s.end()}; }

// Creates path with s as its contents, synced unless told otherwise, and closes it.
inline Status WriteSynced(Env& env, const std::string& path, const std::string& s, bool sync = true) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env.NewWritableFile(path));
  EMBER_RETURN_IF_ERROR(f->Append(s.data(), s.size()));
  if (sync) EMBER_RETURN_IF_ERROR(f->Sync());
  return f->Close();
}

}  // namespace ember::testing
