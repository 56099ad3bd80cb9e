// Client-facing errors name files, never where they are on the server.
#include "server/path_redaction.h"

#include <gtest/gtest.h>

namespace ember::server {
namespace {

TEST(PathRedaction, AbsolutePathsBecomeTheirLastComponent) {
  EXPECT_EQ(WithoutPaths("The model 'm' failed to load from /home/alice/models/m.gguf: IoError: cannot open "
                         "/home/alice/models/m.gguf: No such file"),
            "The model 'm' failed to load from m.gguf: IoError: cannot open m.gguf: No such file");
  EXPECT_EQ(WithoutPaths("bad file '/srv/x/y.gguf' (~/models/z.gguf)"), "bad file 'y.gguf' (z.gguf)");
  EXPECT_EQ(WithoutPaths("path=/a/b/c, next: /d/e"), "path=c, next: e");
  EXPECT_EQ(WithoutPaths("/only/dir/"), "dir");
}

TEST(PathRedaction, OtherSlashesStay) {
  // A model name may be "org/repo:file"; a ratio or a URL path inside a word is not a file of ours.
  EXPECT_EQ(WithoutPaths("model 'org/repo:q8' uses 3/4 of RAM"), "model 'org/repo:q8' uses 3/4 of RAM");
  EXPECT_EQ(WithoutPaths(""), "");
  EXPECT_EQ(WithoutPaths("a / b"), "a / b");
  EXPECT_EQ(WithoutPaths("see https://example.com/docs"), "see https://example.com/docs");
}

}  // namespace
}  // namespace ember::server
