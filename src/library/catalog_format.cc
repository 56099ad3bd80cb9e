#include "library/catalog_format.h"

#include <algorithm>
#include <cstdio>

namespace ember::library {
namespace {

std::string OneDecimalOrWhole(double v, const char* unit) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 9.95 ? "%.1f%s" : "%.0f%s", v, unit);
  return buf;
}

std::string RunnableCell(const ModelRecord& r) { return r.runnable ? "yes" : "no: " + r.why_not; }

}  // namespace

std::string FormatParameters(uint64_t n) {
  if (n == 0) return "-";
  const double v = static_cast<double>(n);
  if (v >= 0.45e9) return OneDecimalOrWhole(v / 1e9, "B");  // "0.5B": as model names count them
  if (v >= 0.95e5) return OneDecimalOrWhole(v / 1e6, "M");
  return OneDecimalOrWhole(v / 1e3, "K");
}

std::string FormatSize(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1023.95 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : v < 9.95 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string FormatContext(int64_t n) {
  if (n <= 0) return "-";
  if (n % 1024 == 0) return std::to_string(n / 1024) + "K";
  return std::to_string(n);
}

std::string RenderModelTable(const std::vector<ModelRecord>& models, bool with_path) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"NAME", "ARCH", "PARAMS", "QUANT", "SIZE", "CTX", "SOURCE", "RUNNABLE"});
  if (with_path) rows.front().push_back("PATH");
  for (const ModelRecord& r : models) {
    rows.push_back({r.name, r.arch.empty() ? "-" : r.arch, FormatParameters(r.parameters),
                    r.quant.empty() ? "-" : r.quant, FormatSize(r.size_bytes), FormatContext(r.context_length),
                    ModelSourceName(r.source), RunnableCell(r)});
    if (with_path) rows.back().push_back(r.path);
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string RenderLocations(const std::vector<ScanLocation>& locations) {
  std::string out = "Looked in:\n";
  for (const ScanLocation& l : locations) {
    std::string found = !l.present ? "not there"
                        : l.models == 1 ? "1 model"
                                        : std::to_string(l.models) + " models";
    char source[16];
    std::snprintf(source, sizeof source, "%-10s", ModelSourceName(l.source));
    out += "  " + std::string(source) + " " + l.path + " (" + l.origin + "): " + found + "\n";
  }
  return out;
}

nlohmann::ordered_json ModelRecordJson(const ModelRecord& r) {
  return {{"name", r.name},
          {"path", r.path},
          {"source", ModelSourceName(r.source)},
          {"format", r.format},
          {"arch", r.arch},
          {"parameters", r.parameters},
          {"quant", r.quant},
          {"size_bytes", r.size_bytes},
          {"context_length", r.context_length},
          {"runnable", r.runnable},
          {"why_not", r.why_not}};
}

nlohmann::ordered_json ScanResultJson(const ScanResult& result) {
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  for (const ModelRecord& r : result.models) models.push_back(ModelRecordJson(r));
  nlohmann::ordered_json locations = nlohmann::ordered_json::array();
  for (const ScanLocation& l : result.locations) {
    locations.push_back({{"source", ModelSourceName(l.source)},
                         {"path", l.path},
                         {"origin", l.origin},
                         {"present", l.present},
                         {"models", l.models}});
  }
  return {{"models", models}, {"locations", locations}, {"warnings", result.warnings}};
}

}  // namespace ember::library
