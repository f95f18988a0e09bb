#ifndef LOOPKIT_CTHREAD_H
#define LOOPKIT_CTHREAD_H

#include <pthread.h>

/// The calling thread's identity: `pthread_self()`, called from a function the Swift and LLVM optimisers
/// cannot see into.
///
/// glibc declares `pthread_self` `__attribute__((const))`: a pure function of nothing, so an optimiser may
/// compute it once and reuse the value. In synchronous code that is true; in an async function it is not,
/// because the code after an `await` can resume on another thread. Inlined into async code (LoopKit's
/// `@inlinable` thread checks are, in a client's release build), a `const` call may be moved across a
/// suspension point, and a thread check then answers for the thread the task ran on before it. This
/// declaration carries no attribute and its body lives in a separate object file, so every call is made
/// where it is written.
pthread_t lk_thread_self(void);

/// The process's main thread (the one `main` runs on), recorded when the program starts.
///
/// Returns 1 and stores it in `*out` when it is known: always for a program linked with LoopKit, and for a
/// shared library loaded at start-up. Returns 0 when the library was loaded later by another thread
/// (`dlopen`), which cannot tell which thread is the main one.
int lk_main_thread(pthread_t *out);

#endif
