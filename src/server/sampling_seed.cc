#include "server/sampling_seed.h"

#include <atomic>
#include <random>

namespace ember::server {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::atomic<uint64_t>& Counter() {
  static std::atomic<uint64_t> counter{[] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }()};
  return counter;
}

}  // namespace

uint64_t SeedFor(const std::optional<uint64_t>& requested) {
  if (requested) return *requested;
  // SplitMix64 is a bijection, so distinct counter values give distinct seeds.
  return SplitMix64(Counter().fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed));
}

}  // namespace ember::server
