#include "bench/proc_parse.h"

#include <charconv>
#include <cstdlib>
#include <vector>

namespace ember::bench {
namespace {

// Splits on runs of ASCII whitespace.
std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename F>
void ForEachLine(std::string_view text, F&& f) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    f(text.substr(start, end - start));
    start = end + 1;
  }
}

std::optional<uint64_t> ToU64(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ToDouble(std::string_view s) {
  // strtod needs a terminated string; these fields are short.
  std::string tmp(s);
  char* end = nullptr;
  double v = std::strtod(tmp.c_str(), &end);
  if (tmp.empty() || end != tmp.c_str() + tmp.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<MemInfo> ParseMeminfo(std::string_view text) {
  MemInfo m;
  bool total = false, avail = false;
  ForEachLine(text, [&](std::string_view line) {
    auto f = Fields(line);
    if (f.size() < 2) return;
    auto v = ToU64(f[1]);
    if (!v) return;
    if (f[0] == "MemTotal:") m.total_kb = *v, total = true;
    else if (f[0] == "MemAvailable:") m.available_kb = *v, avail = true;
    else if (f[0] == "SwapTotal:") m.swap_total_kb = *v;
    else if (f[0] == "SwapFree:") m.swap_free_kb = *v;
  });
  if (!total || !avail || m.total_kb == 0) return std::nullopt;
  return m;
}

std::optional<SwapCounters> ParseVmstat(std::string_view text) {
  SwapCounters c;
  int found = 0;
  ForEachLine(text, [&](std::string_view line) {
    auto f = Fields(line);
    if (f.size() != 2) return;
    auto v = ToU64(f[1]);
    if (!v) return;
    if (f[0] == "pswpin") c.pswpin = *v, ++found;
    else if (f[0] == "pswpout") c.pswpout = *v, ++found;
  });
  if (found != 2) return std::nullopt;
  return c;
}

std::optional<Pressure> ParsePressure(std::string_view text) {
  Pressure p;
  bool some = false;
  ForEachLine(text, [&](std::string_view line) {
    auto f = Fields(line);
    if (f.size() < 2 || (f[0] != "some" && f[0] != "full")) return;
    for (size_t i = 1; i < f.size(); ++i) {
      if (f[i].substr(0, 6) != "avg10=") continue;
      auto v = ToDouble(f[i].substr(6));
      if (!v) return;
      if (f[0] == "some") p.some_avg10 = *v, some = true;
      else p.full_avg10 = *v;
    }
  });
  if (!some) return std::nullopt;
  return p;
}

std::optional<double> ParseLoadavg1(std::string_view text) {
  auto f = Fields(text);
  if (f.empty()) return std::nullopt;
  return ToDouble(f[0]);
}

std::optional<PidStat> ParsePidStat(std::string_view text) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  auto pid = ToU64(Trim(text.substr(0, open)));
  if (!pid) return std::nullopt;
  // After ") ": state(3) ppid(4) ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24).
  auto f = Fields(text.substr(close + 1));
  if (f.size() < 22) return std::nullopt;
  auto ppid = ToU64(f[1]);
  auto ut = ToU64(f[11]);
  auto st = ToU64(f[12]);
  auto start = ToU64(f[19]);
  auto rss = ToU64(f[21]);
  if (!ppid || !ut || !st || !start || !rss) return std::nullopt;
  PidStat s;
  s.pid = static_cast<int>(*pid);
  s.comm = std::string(text.substr(open + 1, close - open - 1));
  s.ppid = static_cast<int>(*ppid);
  s.cpu_ticks = *ut + *st;
  s.start_ticks = *start;
  s.rss_pages = *rss;
  return s;
}

std::string ParseCmdline(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out.push_back(c == '\0' ? ' ' : c);
  return Trim(out);
}

std::optional<int> ParseCpuListCount(std::string_view text) {
  std::string t = Trim(text);
  if (t.empty()) return std::nullopt;
  int count = 0;
  size_t start = 0;
  while (start <= t.size()) {
    size_t end = t.find(',', start);
    if (end == std::string::npos) end = t.size();
    std::string_view part(t.data() + start, end - start);
    size_t dash = part.find('-');
    auto lo = ToU64(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : ToU64(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    count += static_cast<int>(*hi - *lo + 1);
    start = end + 1;
  }
  return count;
}

std::string ParseCpuModel(std::string_view cpuinfo) {
  std::string model;
  ForEachLine(cpuinfo, [&](std::string_view line) {
    if (!model.empty() || line.substr(0, 10) != "model name") return;
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) model = Trim(line.substr(colon + 1));
  });
  return model;
}

std::string ParseBracketedMode(std::string_view text) {
  size_t open = text.find('[');
  size_t close = text.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos) return Trim(text);
  return std::string(text.substr(open + 1, close - open - 1));
}

}  // namespace ember::bench
