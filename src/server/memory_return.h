// Giving memory back to the system after large requests (glibc malloc). Two things keep a freed
// reply's memory in the process otherwise: glibc raises its mmap threshold each time a large block is
// freed (so the next large blocks come from the heap and stay), and the pages freed inside each
// thread's arena are kept for reuse. TuneAllocatorForServing fixes the threshold, so a block of 1 MiB or
// more is its own mapping and is unmapped when freed; ReturnFreedMemorySoon asks for malloc_trim, which
// hands back the free pages of every arena, once the replies in flight are written.
// Chosen over linking jemalloc or mimalloc: measured to meet the bound (bench/tokenize-memory.mjs,
// docs/server.md "Memory"), with no new library to build, ship and patch.
#pragma once

namespace ember::server {

// Once per process, before serving.
void TuneAllocatorForServing();

// Debounced: one malloc_trim(0) on a background thread about 200 ms after the last call. Cheap to call.
void ReturnFreedMemorySoon();

}  // namespace ember::server
