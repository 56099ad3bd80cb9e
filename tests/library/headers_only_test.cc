// A scan reads headers, never tensor data: after the file's pages are dropped from the page cache, a
// full scan (columns and the runnable check, which binds every tensor) leaves the data section cold.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "format/gguf.h"
#include "library/model_catalog.h"
#include "library_test_util.h"

namespace ember::library {
namespace {

namespace fs = std::filesystem;

// Pages of [begin, end) of the file that are in the page cache, and where the resident ones are.
struct Residency {
  size_t resident = 0;
  size_t pages = 0;
  std::string ranges;  // "[first byte, end byte) ..." of each resident run
};

Residency PagesInCache(const std::string& path, uint64_t begin, uint64_t end) {
  Residency r;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  const size_t size = fs::file_size(path);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT_NE(map, MAP_FAILED);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((size + page - 1) / page);
  EXPECT_EQ(::mincore(map, size, vec.data()), 0);
  const size_t last = std::min(vec.size(), static_cast<size_t>((end + page - 1) / page));
  for (size_t p = begin / page; p < last; ++p) {
    ++r.pages;
    if (!(vec[p] & 1)) continue;
    if (r.resident++ == 0 || !(vec[p - 1] & 1)) r.ranges += " [" + std::to_string(p * page);
    if (p + 1 == last || !(vec[p + 1] & 1)) r.ranges += ", " + std::to_string((p + 1) * page) + ")";
  }
  ::munmap(map, size);
  ::close(fd);
  return r;
}

void DropFromPageCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::fdatasync(fd), 0);  // dirty pages cannot be dropped
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
}

TEST(HeadersOnly, AScanLeavesTensorDataUnread) {
  // In the build tree, not /tmp: a tmpfs keeps every page resident and the test could not see anything.
  const std::string dir = ::ember::testing::BinaryDir() + "/library-headers-only";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/wide.gguf";
  GenModelOptions o;
  o.n_layer = 4;
  o.n_embd = 256;
  o.n_head = 4;
  o.n_head_kv = 4;
  o.n_ff = 8192;
  o.type_embd = GgmlType::Q8_0;
  o.type_embd_set = true;
  GenModelReport report;
  ASSERT_TRUE(GenerateModel(o, path, &report).ok());
  uint64_t data_begin = 0;
  {
    StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok());
    data_begin = (*f)->data_offset();
  }
  const uint64_t size = fs::file_size(path);
  ASSERT_GT(size - data_begin, uint64_t{100} << 20);  // data well past the window below

  DropFromPageCache(path);
  const Residency cold = PagesInCache(path, data_begin, size);
  ASSERT_LT(cold.resident * 100, cold.pages) << "the page cache did not drop the file, nothing to measure:"
                                              << cold.ranges;

  ScanOptions scan = testing::Hermetic("");
  scan.models_dirs = {dir};
  const std::vector<ModelRecord> found = ScanModels(scan);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].runnable) << found[0].why_not;
  EXPECT_EQ(found[0].parameters, report.n_params);

  // The kernel reads ahead of the header's last pages (read_ahead_kb: 8 MiB on some disks), so the
  // first MiBs of data may come in; nothing past that window may, though the scan bound every tensor.
  const uint64_t window = uint64_t{32} << 20;
  const Residency after = PagesInCache(path, data_begin + window, size);
  EXPECT_EQ(after.resident, 0u) << after.resident << " of " << after.pages << " data pages past the read-ahead window "
                                << "were read:" << PagesInCache(path, 0, size).ranges;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember::library
