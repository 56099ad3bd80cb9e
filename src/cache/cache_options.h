// Sizing the prompt cache: the default RAM cap and the `--prompt-cache-bytes` syntax.
//
// Thread-safety: pure functions (DefaultPromptCacheBytes reads the machine's RAM size once per call).
#pragma once

#include <cstddef>
#include <string>

#include "util/status.h"

namespace ember {

// A quarter of physical RAM: room for the model's weights, the live sequences and the page cache of
// the mmapped GGUF, which all share the rest. 1 GiB if the RAM size cannot be read.
size_t DefaultPromptCacheBytes();

// "0" (off), "123456", "512M", "8G", "1.5G", "2T" (binary units; K/M/G/T, optional "iB"/"B").
StatusOr<size_t> ParseByteSize(const std::string& text);

// "8.00 GiB", "512.00 MiB", "0 B".
std::string FormatBytes(size_t bytes);

}  // namespace ember
