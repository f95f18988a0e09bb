/* bench-startup's check that linking the Swift runtime in did not slow the C ABI's hot paths: built against
 * libloopkit.so and against libLoopKitC.so, it prints ns per operation for
 *   enqueue: 1M lk_loop_enqueue from the loop's thread, then lk_loop_run_once until they ran
 *   timers:  100k lk_timer_start(delay 0, fire and forget), then lk_loop_run_once until they fired */
#include <loopkit.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t ran;
static void count(void *ctx) { (void)ctx; ran++; }

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void) {
    lk_loop *loop;
    if (lk_loop_create(&loop) != LK_OK) return 1;
    const size_t jobs = 1000000, timers = 100000;

    ran = 0;
    double start = now_ns();
    for (size_t i = 0; i < jobs; i++)
        if (lk_loop_enqueue(loop, count, NULL) != LK_OK) return 1;
    while (ran < jobs)
        if (lk_loop_run_once(loop, 0) < 0) return 1;
    double enqueue = (now_ns() - start) / (double)jobs;

    ran = 0;
    start = now_ns();
    for (size_t i = 0; i < timers; i++)
        if (lk_timer_start(loop, 0, 0, count, NULL, NULL) != LK_OK) return 1;
    while (ran < timers)
        if (lk_loop_run_once(loop, 1) < 0) return 1;
    double timer = (now_ns() - start) / (double)timers;

    printf("%.1f %.1f\n", enqueue, timer);
    return lk_loop_destroy(loop) == LK_OK ? 0 : 1;
}
