#include "cache/cache_options.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(CacheOptions, ParsesByteSizes) {
  EXPECT_EQ(*ParseByteSize("0"), 0u);
  EXPECT_EQ(*ParseByteSize("123456"), 123456u);
  EXPECT_EQ(*ParseByteSize("512M"), size_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("8G"), size_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("8GiB"), size_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("8gb"), size_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("1.5K"), 1536u);
  EXPECT_EQ(*ParseByteSize("100B"), 100u);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("-1G").ok());
  EXPECT_FALSE(ParseByteSize("8X").ok());
  EXPECT_FALSE(ParseByteSize("lots").ok());
}

TEST(CacheOptions, DefaultIsAQuarterOfRamAndFormats) {
  EXPECT_GT(DefaultPromptCacheBytes(), size_t{1} << 20);
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(size_t{8} << 30), "8.00 GiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
}

}  // namespace
}  // namespace ember
