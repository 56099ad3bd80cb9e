// The sampler seed of a request: the client's `seed` when given (reproducible), otherwise a fresh one.
//
// A seedless request's seed is drawn from a random source, not read from a clock: two requests arriving
// in the same clock tick (continuous batching will start several at once) must still sample
// differently, and with a simulated clock (tests) every reading could be the same. The source is seeded
// once per process from std::random_device and stepped with SplitMix64 per request, so seeds never
// repeat within a process and differ between processes.
//
// Thread-safety: SeedFor may be called from any thread (one atomic counter).
#pragma once

#include <cstdint>
#include <optional>

namespace ember::server {

uint64_t SeedFor(const std::optional<uint64_t>& requested);

}  // namespace ember::server
