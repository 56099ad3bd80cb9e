// The assert policy (util/check.h): internal invariants are EMBER_CHECKs, always on; input never reaches
// them, and `assert` is not used in src/ at all (so a Release build's behaviour does not hinge on NDEBUG).
#include "util/check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "util/status.h"

namespace ember {
namespace {

TEST(Check, PassingCheckDoesNothing) {
  int evaluated = 0;
  EMBER_CHECK(++evaluated == 1);
  EMBER_CHECK_MSG(evaluated == 1, "not evaluated unless the check fails");
  EXPECT_EQ(evaluated, 1);
}

TEST(CheckDeathTest, FailingCheckAbortsWithFileLineAndCondition) {
  EXPECT_DEATH(EMBER_CHECK(1 + 1 == 3), "internal check failed at .*check_test.cc:[0-9]+: 1 \\+ 1 == 3");
  EXPECT_DEATH(EMBER_CHECK_MSG(false, "the detail"), "false: the detail");
}

TEST(CheckDeathTest, ValueOfAnErrorIsACheckFailureNamingTheError) {
  StatusOr<int> r = Corrupt("bad bytes at 12");
  EXPECT_DEATH((void)r.value(), "internal check failed.*bad bytes at 12");
  EXPECT_DEATH((void)*r, "bad bytes at 12");
}

TEST(StatusOr, ConstructedFromOkIsAnInternalErrorNotACrash) {
  StatusOr<int> r = Status::Ok();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

// No `assert(` in src/ (static_assert is fine): internal invariants use EMBER_CHECK, input uses Status.
TEST(AssertPolicy, NoAssertInSources) {
  const std::regex assert_call(R"((^|[^_A-Za-z])assert\s*\()");
  std::vector<std::string> offenders;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(EMBER_SOURCE_DIR) + "/src")) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".inc")) continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (std::regex_search(line, assert_call)) offenders.push_back(entry.path().string() + ":" + std::to_string(n));
    }
  }
  std::ostringstream list;
  for (const auto& o : offenders) list << "\n  " << o;
  EXPECT_TRUE(offenders.empty()) << "assert() in src/ (use EMBER_CHECK for invariants, Status for input):" << list.str();
}

}  // namespace
}  // namespace ember
