// The machine's read bandwidth, the yardstick for decode (which streams every weight once per token):
// `threads` threads (the engine's count) each sum a disjoint slice of a 512 MiB buffer, best of
// `passes`. Measured twice: on 4 KiB pages and on 2 MiB pages (MADV_HUGEPAGE; the same as 4 KiB where
// transparent huge pages are off), since the engine maps its weights on 2 MiB pages where it can
// (engine/weight_pages.h) and 4 KiB pages cost a VM ~1/3 of its streaming rate (TLB walks, prefetcher
// restarts at every page). The fair peak for a decode fraction is the better of the two.
#pragma once

namespace ember::bench {

struct ReadBandwidth {
  double small_pages_gbs = 0;  // 4 KiB pages
  double huge_pages_gbs = 0;   // 2 MiB pages where the kernel gives them
  double peak() const { return huge_pages_gbs > small_pages_gbs ? huge_pages_gbs : small_pages_gbs; }
};

ReadBandwidth MeasureReadBandwidth(int threads, int passes = 3);

}  // namespace ember::bench
