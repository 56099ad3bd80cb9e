// Presentation of eval-DB rows: JSON objects (for --json and the report) and a fixed-width table.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench/eval_db.h"

namespace ember::bench {

// Every column; machine_state and samples are embedded as parsed JSON when they parse, else as text.
nlohmann::json EvalRowToJson(const EvalRow& r);

// One line per row: id, time, stack, leg, model file name, threads, prefill, decode, TTFT, runs,
// spread, tag, with a trailing "‡" when preflight failed.
std::string FormatEvalTable(const std::vector<EvalRow>& rows);

// "tiny-q8_0.gguf" from "/models/tiny-q8_0.gguf".
std::string BaseName(const std::string& path);

}  // namespace ember::bench
