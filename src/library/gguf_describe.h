// One GGUF model's row in the library, from its header alone (library-internal): architecture,
// parameters, quantization, context, size, and whether ember can run it and why not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "library/model_catalog.h"

namespace ember::library {

// What why_not says for the kinds of GGUF file ember lists but cannot run as they are.
inline constexpr const char* kSplitNotSupported = "split GGUF files are not supported yet";
inline constexpr const char* kProjectorNotRunnable =
    "a vision projector (mmproj) for a multimodal model, not a language model; ember runs text models only";

// The columns of the model in `parts` (its files as found, first part first: one file unless split).
// `split_count` is the part count its name gives (0: not split). Name and source are left to the caller.
// Never fails: what cannot be read is why_not.
ModelRecord DescribeGguf(const std::vector<std::string>& parts, int split_count, Env* env);

// CheckRunnable on a file already open (consumed): the tokenizer would load, and the model binds every
// tensor its architecture needs (shapes and types checked, data untouched).
Status CheckRunnableGguf(std::unique_ptr<GgufFile> file);

}  // namespace ember::library
