// GgufWriter::AddTensorLazy: a tensor made at write time writes the same file as one added with its
// bytes, makers run once each in the order they were added, and a maker that fails or makes the wrong
// number of bytes fails the write naming the tensor (and leaves no file).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/gguf_writer.h"
#include "support/test_support.h"

namespace ember {
namespace {

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> Floats(float base, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + static_cast<float>(i);
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(float));
}

TEST(GgufWriterLazy, MakersWriteTheSameFileInOrder) {
  testing::TempDir dir;
  GgufWriter eager, lazy;
  for (GgufWriter* w : {&eager, &lazy}) w->SetStr("general.architecture", "test");
  ASSERT_TRUE(eager.AddTensor("a", GgmlType::F32, {8}, Floats(1, 8)).ok());
  ASSERT_TRUE(eager.AddTensor("b", GgmlType::F32, {4, 3}, Floats(100, 12)).ok());
  std::vector<std::string> order;
  ASSERT_TRUE(lazy.AddTensorLazy("a", GgmlType::F32, {8}, [&](std::vector<uint8_t>* out) {
    order.push_back("a");
    *out = Floats(1, 8);
    return Status::Ok();
  }).ok());
  ASSERT_TRUE(lazy.AddTensorLazy("b", GgmlType::F32, {4, 3}, [&](std::vector<uint8_t>* out) {
    order.push_back("b");
    *out = Floats(100, 12);
    return Status::Ok();
  }).ok());
  ASSERT_TRUE(eager.WriteFile(dir.file("eager.gguf")).ok());
  ASSERT_TRUE(lazy.WriteFile(dir.file("lazy.gguf")).ok());
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ReadAll(dir.file("eager.gguf")), ReadAll(dir.file("lazy.gguf")));
  EXPECT_EQ(eager.ToBytes(), lazy.ToBytes());
}

TEST(GgufWriterLazy, ABadMakerFailsTheWriteNamingTheTensor) {
  testing::TempDir dir;
  GgufWriter short_maker;
  ASSERT_TRUE(short_maker.AddTensorLazy("short", GgmlType::F32, {8}, [](std::vector<uint8_t>* out) {
    *out = Floats(0, 7);
    return Status::Ok();
  }).ok());
  Status st = short_maker.WriteFile(dir.file("short.gguf"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'short'"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("short.gguf")));

  GgufWriter failing;
  ASSERT_TRUE(failing.AddTensorLazy("boom", GgmlType::F32, {8}, [](std::vector<uint8_t>*) {
    return IoError("maker for 'boom' failed");
  }).ok());
  st = failing.WriteFile(dir.file("boom.gguf"));
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(std::filesystem::exists(dir.file("boom.gguf")));
  // Shape checks happen when the tensor is added, as for AddTensor; a missing maker is refused.
  EXPECT_FALSE(failing.AddTensorLazy("q", GgmlType::Q8_0, {31}, [](std::vector<uint8_t>*) { return Status::Ok(); }).ok());
  EXPECT_FALSE(failing.AddTensorLazy("none", GgmlType::F32, {8}, nullptr).ok());
}

}  // namespace
}  // namespace ember
