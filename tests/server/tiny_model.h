// The small random-weight F32 model the real-engine server tests share (2 layers, E64, 4 heads over 2
// kv heads, seed 7), generated once per suite by `ember gen-model`.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

namespace ember::server {

inline void GenTinyServerModel(const std::string& path) {
  const std::string cmd = testing::EmberBinary() + " gen-model --out " + path +
                          " --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32 --seed 7";
  ASSERT_EQ(testing::RunCommand(cmd + " > /dev/null").exit_code, 0);
}

}  // namespace ember::server
