#include "CThread.h"

// Not inline and not in the header: see CThread.h for why the call must stay opaque.
pthread_t lk_thread_self(void) {
    return pthread_self();
}
