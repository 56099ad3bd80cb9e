// How a scan is shown (`ember models`): the human table, its number formats, and the JSON form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "library/model_catalog.h"

namespace ember::library {

// 596049920 -> "0.6B", 7241732096 -> "7.2B", 70553706496 -> "71B", 135000000 -> "135M"; 0 -> "-".
std::string FormatParameters(uint64_t n);
// Binary units, one decimal below 10: 1288490188 -> "1.2 GiB", 640 -> "640 B".
std::string FormatSize(uint64_t bytes);
// 40960 -> "40K", 4096 -> "4K", 1000 -> "1000"; 0 -> "-".
std::string FormatContext(int64_t n);

// One row per model: NAME ARCH PARAMS QUANT SIZE CTX SOURCE RUNNABLE ("yes" or "no: why"), and PATH
// when `with_path`. Columns padded to their widest cell; ends with a newline.
std::string RenderModelTable(const std::vector<ModelRecord>& models, bool with_path);
// "Looked in:" and one line per location: source, path, why there, and what was found.
std::string RenderLocations(const std::vector<ScanLocation>& locations);

// Keys in the order ModelRecord declares its fields.
nlohmann::ordered_json ModelRecordJson(const ModelRecord& r);
// {"models": [...], "locations": [...], "warnings": [...]}. Paths are bytes from the file system: dump
// with nlohmann::json::error_handler_t::replace.
nlohmann::ordered_json ScanResultJson(const ScanResult& result);

}  // namespace ember::library
