/*
 * Three ways to embed LoopKit in a C program, using only loopkit.h and libloopkit.so.1 (or libLoopKitC.so)
 * (and libevent for the host's own event_base in the second one).
 *
 *   1. An owned loop run by lk_loop_run, with a worker pthread that hands results to it with
 *      lk_loop_invoke_wait.
 *   2. LoopKit attached to the host's own event_base, which the host keeps driving.
 *   3. A 60 Hz frame loop that calls lk_loop_run_once(loop, 0) once per frame.
 */
#include "loopkit.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRY(call)                                                                  \
    do {                                                                           \
        int status_ = (call);                                                      \
        if (status_ < 0) {                                                         \
            fprintf(stderr, "%s failed: %s\n", #call, lk_strerror(status_));       \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* ---- 1. Owned loop + worker thread ------------------------------------------------------------------- */

typedef struct {
    lk_loop *loop;
    int results;   /* touched only on the loop thread */
    int value;     /* the worker's current result, read by the loop while the worker waits */
} app_t;

static void deliver(void *ctx) {
    app_t *app = ctx;
    app->results += app->value;
    printf("  loop (iteration %llu): got result %d\n", (unsigned long long)lk_loop_iteration(app->loop),
           app->value);
    if (app->results == 1 + 2 + 3) lk_loop_stop(app->loop);
}

static void *worker(void *arg) {
    app_t *app = arg;
    for (int i = 1; i <= 3; i++) {
        app->value = i; /* safe: invoke_wait returns only after deliver ran on the loop */
        TRY(lk_loop_invoke_wait(app->loop, deliver, app));
    }
    return NULL;
}

static void owned_loop_with_worker(void) {
    printf("1. owned loop, worker thread using lk_loop_invoke_wait\n");
    app_t app = {0};
    TRY(lk_loop_create(&app.loop));
    pthread_t thread;
    pthread_create(&thread, NULL, worker, &app);
    TRY(lk_loop_run(app.loop));
    pthread_join(thread, NULL);
    printf("  total %d after %llu iterations\n", app.results, (unsigned long long)lk_loop_iteration(app.loop));
    TRY(lk_loop_destroy(app.loop));
}

/* ---- 2. Attached to the host's event_base ------------------------------------------------------------- */

typedef struct {
    lk_loop *loop;
    struct event_base *base;
    int remaining;
} chain_t;

static void chain_step(void *ctx) {
    chain_t *chain = ctx;
    printf("  LoopKit job, iteration %llu\n", (unsigned long long)lk_loop_iteration(chain->loop));
    if (--chain->remaining > 0) {
        TRY(lk_loop_enqueue(chain->loop, chain_step, chain));
    } else {
        event_base_loopbreak(chain->base);
    }
}

static void host_tick(evutil_socket_t fd, short what, void *ctx) {
    (void)fd; (void)what; (void)ctx;
    printf("  host timer\n");
}

static void attached_to_host_base(void) {
    printf("2. attached to the host's event_base\n");
    TRY(lk_init()); /* before the host creates its base, so other threads can wake it */
    struct event_base *base = event_base_new();
    struct event *tick = event_new(base, -1, EV_PERSIST, host_tick, NULL);
    struct timeval period = {0, 2000};
    event_add(tick, &period);
    lk_loop *loop;
    TRY(lk_loop_attach(base, &loop));
    chain_t chain = {loop, base, 3};
    TRY(lk_loop_enqueue(loop, chain_step, &chain));
    event_base_dispatch(base); /* the host drives; LoopKit's queue drains inside it */
    TRY(lk_loop_destroy(loop)); /* the base stays the host's */
    event_free(tick);
    event_base_free(base);
}

/* ---- 3. A 60 Hz frame loop ----------------------------------------------------------------------------- */

static void on_timer(void *ctx) {
    int *fired = ctx;
    (*fired)++;
}

static void frame_loop(void) {
    printf("3. 60 Hz frame loop calling lk_loop_run_once(loop, 0)\n");
    lk_loop *loop;
    TRY(lk_loop_create(&loop));
    int fired = 0;
    lk_timer *timer;
    TRY(lk_timer_start(loop, 0, 20 * 1000 * 1000, on_timer, &fired, &timer)); /* every 20 ms */
    struct timespec frame = {0, 1000000000L / 60};
    for (int n = 0; n < 12; n++) {
        int ran = lk_loop_run_once(loop, 0);
        TRY(ran);
        nanosleep(&frame, NULL); /* the host's own frame pacing */
    }
    printf("  12 frames, timer fired %d times\n", fired);
    TRY(lk_timer_cancel(timer));
    TRY(lk_loop_destroy(loop));
}

int main(void) {
    printf("LoopKit %s\n", lk_version());
    owned_loop_with_worker();
    attached_to_host_base();
    frame_loop();
    printf("done\n");
    return 0;
}
