// Clang's thread-safety annotations (docs/conventions.md "Locks"). Under clang with -Wthread-safety
// (`make thread-safety`) the compiler checks that every GUARDED_BY member is touched only with its mutex
// held and every REQUIRES function is called with it; under GCC the macros expand to nothing.
#pragma once

#if defined(__clang__)
#define EMBER_TSA(x) __attribute__((x))
#else
#define EMBER_TSA(x)
#endif

#define CAPABILITY(x) EMBER_TSA(capability(x))
#define SCOPED_CAPABILITY EMBER_TSA(scoped_lockable)
#define GUARDED_BY(x) EMBER_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) EMBER_TSA(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) EMBER_TSA(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) EMBER_TSA(acquired_after(__VA_ARGS__))
#define REQUIRES(...) EMBER_TSA(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) EMBER_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) EMBER_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) EMBER_TSA(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) EMBER_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) EMBER_TSA(assert_capability(x))
#define RETURN_CAPABILITY(x) EMBER_TSA(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS EMBER_TSA(no_thread_safety_analysis)
