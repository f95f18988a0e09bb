#define _GNU_SOURCE
#include "CThread.h"

#include <sys/syscall.h>
#include <unistd.h>

// Not inline and not in the header: see CThread.h for why the call must stay opaque.
pthread_t lk_thread_self(void) {
    return pthread_self();
}

static pthread_t main_thread;
static int main_thread_known;

// Runs before main, on the thread that loads this code: the main thread when the program is linked with
// it (its thread id is the process id), another thread only for a library opened later with dlopen.
__attribute__((constructor))
static void lk_record_main_thread(void) {
    if (syscall(SYS_gettid) == getpid()) {
        main_thread = pthread_self();
        main_thread_known = 1;
    }
}

int lk_main_thread(pthread_t *out) {
    if (!main_thread_known) return 0;
    *out = main_thread;
    return 1;
}
