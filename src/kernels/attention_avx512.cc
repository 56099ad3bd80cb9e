// The native build of the AVX-512 attention kernels (attention_avx512.inc) and their switch.
#include "kernels/attention_avx512.h"

#include <limits>

#include "kernels/attention_head.h"
#include "kernels/avx2_util.h"
#include "kernels/avx512_util.h"
#include "kernels/cpu_features.h"
#include "kernels/dot_kernels.h"
#include "kernels/exp8_avx2.h"
#include "kernels/fast_exp.h"

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own "don't care" operands once
// inlined (GCC PR 105593; see dot_avx512.cc).
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace ember::kernels::avx512_attn {
#include "kernels/attention_avx512.inc"
}  // namespace ember::kernels::avx512_attn
#pragma GCC diagnostic pop

namespace ember::kernels {
namespace {
bool g_attn_avx512_enabled = true;  // SetAttentionAvx512Enabled
}  // namespace

bool AttnAvx512Active() {
  static const bool available =
      CpuHasAvx512() && KernelCeiling() >= KernelTier::kAvx512;
  return available && g_attn_avx512_enabled;
}

void SetAttentionAvx512Enabled(bool enabled) { g_attn_avx512_enabled = enabled; }

}  // namespace ember::kernels
