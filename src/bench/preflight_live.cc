// The live side of preflight: two samples of the real machine, a page-cache probe, the clock.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <vector>

#include "bench/preflight.h"
#include "util/stopwatch.h"

namespace ember::bench {

std::string UtcIso(int64_t wall_micros) {
  std::time_t t = static_cast<std::time_t>(wall_micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string UtcNowIso() { return UtcIso(Env::Default()->WallMicros()); }

StatusOr<double> PageCacheResidentFraction(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("stat", path, err);
  }
  if (st.st_size == 0) {
    ::close(fd);
    return 1.0;
  }
  // Mapping does not read the file; mincore only reports which pages are already cached.
  void* addr = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  int map_err = errno;
  ::close(fd);
  if (addr == MAP_FAILED) return ErrnoStatus("mmap", path, map_err);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = (static_cast<size_t>(st.st_size) + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  int rc = ::mincore(addr, static_cast<size_t>(st.st_size), vec.data());
  int mc_err = errno;
  ::munmap(addr, static_cast<size_t>(st.st_size));
  if (rc != 0) return ErrnoStatus("mincore", path, mc_err);
  size_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return static_cast<double>(resident) / static_cast<double>(pages);
}

StatusOr<PreflightReport> RunPreflight(const PreflightLimits& limits, const PreflightOptions& opts) {
  PreflightInputs in;
  if (!opts.model_path.empty()) {
    in.model_path = opts.model_path;
    // Measured before sampling so our own mapping does not count as activity; a missing file is the
    // caller's error, not a machine problem.
    auto frac = PageCacheResidentFraction(opts.model_path);
    if (!frac.ok() && frac.status().code() == StatusCode::kNotFound) return frac.status();
    if (frac.ok()) in.model_resident_frac = *frac;
  }
  in.info = ReadMachineInfo(opts.root);
  in.own_pid = static_cast<int>(::getpid());
  in.ticks_per_s = ::sysconf(_SC_CLK_TCK);
  in.page_size = ::sysconf(_SC_PAGESIZE);
  in.at = UtcNowIso();
  const Stopwatch window;
  in.before = ReadMachineSample(opts.root);
  Env::Default()->SleepForMicros(static_cast<int64_t>(opts.window_s * 1e6));
  in.after = ReadMachineSample(opts.root);
  in.window_s = window.ElapsedSeconds();
  return EvaluatePreflight(in, limits);
}

}  // namespace ember::bench
