/*
 * loopkit.h — the C interface to LoopKit, an event loop with a strict next-iteration queue on libevent.
 *
 * Conventions (as in libuv):
 *   - Every name has the lk_ prefix; handles are opaque pointers (lk_loop, lk_timer, lk_watch, lk_job,
 *     lk_work_pool, lk_work, lk_fs_req, lk_udp, lk_fs_watch, lk_child).
 *   - Functions return an int status: LK_OK (0) on success, a negative LK_E* code on failure.
 *     lk_strerror() describes a code.
 *   - A callback is never called when the call that registered it returned an error.
 *   - Functions are NOT thread-safe unless marked [any thread]: call them on the thread that created
 *     (or attached) the loop. Calling one from another thread returns LK_ETHREAD.
 *   - NULL handles, NULL callbacks and out-of-range values return LK_EINVAL; nothing is kept. A size_t
 *     (a length, a count, a size) above SSIZE_MAX, that is with its top bit set (SIZE_MAX, (size_t)1 << 63),
 *     is out of range wherever one is taken. A uint64_t duration in nanoseconds takes its whole range:
 *     2^63 ns and more are 292 years or more, in effect never.
 *
 * Every loop iteration runs three phases, in order:
 *   1. poll for I/O (without waiting when queued work or a due timer is pending);
 *   2. run ready I/O callbacks, then due timers in (deadline, scheduling order);
 *   3. run the next-iteration queue: exactly the work queued before this phase began.
 * Queued work runs in the order it was queued, in the first phase 3 that begins after it was queued,
 * never inside the callback that queued it (R2, R3):
 *   - queued from an I/O, signal or timer callback of iteration N (phase 2), or from a host's own
 *     libevent callback on lk_loop_event_base(), it runs in phase 3 of N, after that callback returned;
 *   - queued from phase 3 of N (by queued work), it runs in N + 1, never in N.
 * On an attached loop an iteration is one drain (LoopKit's timers, then the queue). A LoopKit timer's
 * work runs in that drain; the host's callbacks (and lk_watch_fd callbacks, which the host's base runs)
 * run between drains, and their work runs in the next drain, after the host's next poll: if the callback
 * read lk_loop_iteration() == N, the work runs in N + 1.
 * Work handed to a work pool (lk_work_queue, lk_fs_*) runs on a pool thread; its completion callback is
 * queued on the loop from that thread when the work ends, so it runs in the first phase 3 that begins
 * after the work ended (rule R13), never inside the call that queued the work, in the order the work ended.
 */
#ifndef LOOPKIT_H
#define LOOPKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define LK_EXTERN __attribute__((visibility("default")))
#else
#  define LK_EXTERN
#endif

/* The library's version. LK_VERSION_MAJOR is the soname's number (libloopkit.so.1) and moves only with an
 * incompatible ABI change (make abi-check compares the library with Sources/CLoopKit/abi/libloopkit.abi);
 * MINOR moves with additions, PATCH with fixes. */
#define LK_VERSION_MAJOR 1
#define LK_VERSION_MINOR 0
#define LK_VERSION_PATCH 0

/* Opaque handles. */
typedef struct lk_loop lk_loop;
typedef struct lk_timer lk_timer;
typedef struct lk_watch lk_watch;
typedef struct lk_job lk_job;
typedef struct lk_signal lk_signal;
typedef struct lk_work_pool lk_work_pool;
typedef struct lk_work lk_work;
typedef struct lk_udp lk_udp;
typedef struct lk_fs_watch lk_fs_watch;
typedef struct lk_child lk_child;

/* libevent's base, for lk_loop_attach and lk_loop_event_base. */
struct event_base;

/* Callback types. Each is called on the loop's thread with the ctx pointer given when it was registered. */
typedef void (*lk_fn)(void *ctx);                                   /* a unit of work, a timer */
typedef void (*lk_watch_fn)(void *ctx, int fd, int events);         /* fd ready: events is LK_READABLE|LK_WRITABLE */
typedef void (*lk_signal_fn)(void *ctx, int signum);                /* a signal arrived */
typedef void (*lk_each_fn)(void *ctx, size_t index);                /* lk_process: one item */
typedef void (*lk_update_fn)(void *ctx, size_t done, size_t total); /* lk_process: progress */
typedef void (*lk_complete_fn)(void *ctx, int status);              /* lk_process: LK_OK or LK_ECANCELED */
typedef void (*lk_after_work_fn)(void *ctx, int status);            /* lk_work_queue: on the loop, LK_OK or LK_ECANCELED */

/* What one iteration of a loop did, for lk_loop_set_iteration_observer. Durations are nanoseconds of the
 * loop's clock, and poll_wait_ns + io_callbacks_ns + timers_ns + drain_ns == total_ns exactly. */
typedef struct lk_iteration_report {
    uint64_t iteration;               /* lk_loop_iteration() while it ran */
    uint64_t poll_wait_ns;            /* phase 1: waiting in the poll until the first I/O callback (0 when attached) */
    uint64_t io_callbacks_ns;         /* phase 2: from the first I/O callback to the poll's return */
    uint64_t timers_ns;               /* phase 2: due timers */
    uint64_t drain_ns;                /* phase 3: the queue's drain */
    uint64_t total_ns;                /* the whole iteration */
    uint64_t io_callback_count;       /* LoopKit I/O callbacks run (watches) */
    uint64_t timers_fired;
    uint64_t drained_jobs;            /* jobs the drain ran */
    uint64_t queue_depth;             /* jobs waiting for the next drain when the iteration ended */
    uint64_t worst_timer_lateness_ns; /* the latest a timer fired after its deadline; 0 when none fired */
    int budget_overrun;               /* 1 when an lk_process chunk ran past its time budget */
} lk_iteration_report;
typedef void (*lk_iteration_fn)(void *ctx, const lk_iteration_report *report); /* after each iteration */

/* Status codes. */
enum {
    LK_OK = 0,         /* success */
    LK_EINVAL = -1,    /* invalid argument: NULL handle or callback, value out of range */
    LK_ECLOSED = -2,   /* the loop has shut down and refuses new work */
    LK_EBUSY = -3,     /* the loop is running a callback: no re-entrant run, no destroy from inside */
    LK_ENOMEM = -4,    /* out of memory: an allocation (in LoopKit or libevent) failed */
    LK_ECANCELED = -5, /* the work was cancelled before it ran */
    LK_ETHREAD = -6,   /* called from a thread other than the loop's */
    LK_ESYS = -7,      /* a system or libevent call failed: lk_last_errno() tells its errno */
    LK_EAGAIN = -8     /* a bounded queue (a work pool's, a UDP socket's send queue) is full: nothing was queued; try again later */
};

/* Readiness flags for lk_watch_fd. */
enum { LK_READABLE = 1, LK_WRITABLE = 2 };

/* ---- Library ------------------------------------------------------------------------------------ */

/* Enables libevent's pthread support. Idempotent. A host that will lk_loop_attach() must call it before
 * creating its event_base, so other threads can wake that base.
 * [any thread] Returns LK_OK, or LK_ENOMEM when libevent cannot set up its locks. */
LK_EXTERN int lk_init(void);

/* A static, human-readable description of a status code (never NULL). [any thread] */
LK_EXTERN const char *lk_strerror(int status);

/* The library version as "MAJOR.MINOR.PATCH", built from the LK_VERSION_* macros of the header the
 * library was compiled with (static storage). [any thread] */
LK_EXTERN const char *lk_version(void);

/* The errno of the system or libevent call behind the last LK_ESYS that a LoopKit function returned on
 * the calling thread (0 if none has). Other status codes leave it unchanged. [any thread] */
LK_EXTERN int lk_last_errno(void);

/* ---- Loops -------------------------------------------------------------------------------------- */

/* Creates a loop with its own event_base, bound to the calling thread. On success *out holds the loop;
 * release it with lk_loop_destroy. Errors: LK_EINVAL (out is NULL), LK_ENOMEM. */
LK_EXTERN int lk_loop_create(lk_loop **out);

/* Attaches a loop to a host-owned event_base that the host keeps driving with event_base_loop or
 * event_base_dispatch; the calling thread must be the one that drives it. Each drain of LoopKit's queue
 * is one iteration. lk_loop_run and lk_loop_run_once return LK_EINVAL for an attached loop.
 * lk_loop_destroy leaves the base intact and usable. Call lk_init() before creating the base.
 * Errors: LK_EINVAL (base or out is NULL), LK_ENOMEM. */
LK_EXTERN int lk_loop_attach(struct event_base *base, lk_loop **out);

/* The main thread's loop, which also runs libdispatch's main queue: blocks queued with
 * dispatch_async(dispatch_get_main_queue(), ...) and the @MainActor jobs of Swift code in the process run
 * on the main thread inside it, at the end of phase 2 of each iteration (rule R12 in LoopPhases.md: after
 * the I/O callbacks and due timers, before the drain of phase 3). A C host that embeds Swift code runs
 * this loop with lk_loop_run where it would have called dispatch_main() or run CFRunLoop. Created on the
 * first call, from any thread; every call returns the same handle, which lives as long as the process
 * (lk_loop_destroy refuses it with LK_EBUSY; lk_loop_shutdown ends it). Only the main thread may run it.
 * [any thread] Errors: LK_EINVAL (out is NULL), LK_ETHREAD (the main thread is unknown: the library was
 * loaded with dlopen by another thread), LK_ENOMEM, LK_ESYS. */
LK_EXTERN int lk_loop_main(lk_loop **out);

/* Shuts the loop down if needed (running the work queued before), then frees it. The handle is invalid
 * afterwards. The handles made on it stay valid until their own release call: timer and watch handles until
 * cancelled, UDP sockets until lk_udp_close, path watches until lk_fs_watch_free and children until
 * lk_child_free. Their other calls then return LK_ECLOSED (a child's as for a child that has ended:
 * lk_child_kill and lk_child_terminate do nothing and return LK_OK, its standard input calls LK_ECLOSED);
 * lk_udp_local_port, lk_udp_queued (0) and lk_child_pid still answer. Job, work and file-request handles
 * need no call: the shutdown completed them (LK_ECANCELED) and LoopKit released them.
 * Errors: LK_EINVAL (NULL), LK_ETHREAD (off the loop's thread), LK_EBUSY (inside one of its callbacks, or
 * the main loop, which lives as long as the process). */
LK_EXTERN int lk_loop_destroy(lk_loop *loop);

/* Runs iterations until lk_loop_stop or lk_loop_shutdown; waits in phase 1 when there is nothing to do.
 * Errors: LK_EINVAL (NULL or attached), LK_ETHREAD, LK_EBUSY (re-entered from a callback),
 * LK_ECLOSED (already shut down). */
LK_EXTERN int lk_loop_run(lk_loop *loop);

/* Runs exactly one iteration. With may_block == 0 phase 1 never waits (a host's frame loop, a test).
 * Returns the number of callbacks run (>= 0), or an error as lk_loop_run. */
LK_EXTERN int lk_loop_run_once(lk_loop *loop, int may_block);

/* Makes lk_loop_run return after the current iteration; wakes a waiting loop.
 * [any thread] Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_loop_stop(lk_loop *loop);

/* Refuses new work from now on (LK_ECLOSED), runs what was queued, cancels timers and watches, closes UDP
 * sockets and path watches, kills running children (SIGKILL) and reaps them (on_exit is called), and calls
 * the callbacks of work-pool and file requests that had not ended with LK_ECANCELED. On the loop's thread all
 * of this is done before lk_loop_shutdown returns: that is what "at once" means where a callback is said to
 * get LK_ECANCELED at once during the shutdown. From another thread, the loop's thread completes the shutdown
 * in its current or next iteration, and those callbacks run then.
 * Calling it twice is harmless. [any thread] Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_loop_shutdown(lk_loop *loop);

/* Iterations so far: each lk_loop_run_once, each pass of lk_loop_run; for an attached loop, each drain of
 * the queue. A callback reads the iteration it runs in. [any thread] Returns 0 for NULL. */
LK_EXTERN uint64_t lk_loop_iteration(const lk_loop *loop);

/* 1 on the loop's thread, else 0 (also 0 for NULL). [any thread] */
LK_EXTERN int lk_loop_is_current(const lk_loop *loop);

/* The libevent event_base the loop runs on: its own, or the host's for an attached loop (NULL for NULL).
 * A host can put libevent's own events, bufferevents, evconnlistener and evhttp on it: their callbacks
 * run in phase 2 of the loop's iterations, like LoopKit's own I/O callbacks, and work they queue with
 * lk_loop_enqueue keeps every rule of the queue (FIFO; it runs in the drain of phase 3, which takes the
 * queue as it is when the phase begins; work queued by that drain waits for the next iteration). Events
 * they activate from inside phase 2 run in the same libevent pass (a libevent rule). Use the base on the loop's
 * thread only; never free it, and never run event_base_loop/event_base_dispatch on an owned loop's base
 * (drive it with lk_loop_run or lk_loop_run_once). The pointer stays valid until lk_loop_destroy.
 * [any thread] to read the pointer. */
LK_EXTERN struct event_base *lk_loop_event_base(const lk_loop *loop);

/* Installs fn, called on the loop's thread after every iteration with what it did and how long each
 * phase took (the report is valid during the call only); fn == NULL removes it. One observer per loop:
 * installing another replaces it. With none installed the loop reads no clock for it. fn must not run
 * the loop (LK_EBUSY); work it queues runs in the next iteration's drain. On the loop's thread it takes
 * effect from the next iteration; from another thread, from the iteration after the drain that installs it.
 * [any thread] Errors: LK_EINVAL (NULL loop), LK_ECLOSED (from another thread, once shut down). */
LK_EXTERN int lk_loop_set_iteration_observer(lk_loop *loop, lk_iteration_fn fn, void *ctx);

/* How long before a timer's deadline a waiting loop wakes up and watches the clock (and its queue) instead,
 * so that timers fire within microseconds of their deadline rather than after the system's wake-up latency
 * (tens to hundreds of microseconds on an idle VM). The cost is CPU: up to that long per timer the loop
 * waits for. 0, the default, waits for every timer; values above 10 ms are clamped to 10 ms. Timers still
 * never fire before their deadline (R8); an attached loop never spins. Takes effect from the loop's next wait.
 * [any thread] Errors: LK_EINVAL (NULL loop). */
LK_EXTERN int lk_loop_set_timer_spin(lk_loop *loop, uint64_t spin_ns);

/* The loop's timer spin in nanoseconds (lk_loop_set_timer_spin); 0 for a NULL loop. [any thread] */
LK_EXTERN uint64_t lk_loop_timer_spin(const lk_loop *loop);

/* ---- Work --------------------------------------------------------------------------------------- */

/* Queues fn(ctx) for the loop's next phase 3 (drain), never running it inside the caller: from an I/O or
 * timer callback (phase 2) it runs in the same iteration's phase 3, after the callback returned; from
 * queued work (phase 3) it runs in the next iteration (see R2 at the top). FIFO; each producer thread's
 * order is kept; a cross-thread call wakes a waiting loop (at most one wake-up per iteration).
 * [any thread] Errors: LK_EINVAL (NULL loop or fn), LK_ECLOSED. */
LK_EXTERN int lk_loop_enqueue(lk_loop *loop, lk_fn fn, void *ctx);

/* Calls fn(ctx) now on the loop's thread; from another thread, queues it like lk_loop_enqueue.
 * [any thread] Errors: LK_EINVAL, LK_ECLOSED. */
LK_EXTERN int lk_loop_invoke(lk_loop *loop, lk_fn fn, void *ctx);

/* Calls fn(ctx) on the loop and returns after it ran: inline on the loop's thread; from another thread
 * the caller blocks until the loop ran it. Never hangs on a loop that shut down first.
 * [any thread] Errors: LK_EINVAL, LK_ECLOSED (refused), LK_ECANCELED (the loop was freed first). */
LK_EXTERN int lk_loop_invoke_wait(lk_loop *loop, lk_fn fn, void *ctx);

/* ---- Timers ------------------------------------------------------------------------------------- */

/* Calls fn(ctx) on the loop after delay_ns, then every repeat_ns if repeat_ns > 0. Timers fire in
 * (deadline, scheduling order), never early; a zero delay fires in a later iteration, never this one.
 * Every value is taken: a delay or period of 2^63 ns or more (UINT64_MAX included) is 292 years.
 * out may be NULL (fire and forget). When out is not NULL, *out is a handle that the caller must release
 * with lk_timer_cancel, also after a one-shot timer fired.
 * [any thread] Errors: LK_EINVAL (NULL loop or fn), LK_ECLOSED. */
LK_EXTERN int lk_timer_start(lk_loop *loop, uint64_t delay_ns, uint64_t repeat_ns,
                             lk_fn fn, void *ctx, lk_timer **out);

/* Stops the timer (if it has not fired) and releases the handle, which is invalid afterwards.
 * [any thread] Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_timer_cancel(lk_timer *timer);

/* ---- I/O watches -------------------------------------------------------------------------------- */

/* Calls fn(ctx, fd, events) on the loop whenever fd is ready for any of events (LK_READABLE,
 * LK_WRITABLE), level-triggered, until cancelled. The loop does not own fd. out may be NULL; otherwise
 * release *out with lk_watch_cancel.
 * Errors: LK_EINVAL (NULL loop or fn, fd < 0, no or unknown events), LK_ETHREAD, LK_ECLOSED,
 * LK_ESYS (the kernel refused the fd, e.g. EPERM for a regular file or EBADF: see lk_last_errno). */
LK_EXTERN int lk_watch_fd(lk_loop *loop, int fd, int events, lk_watch_fn fn, void *ctx, lk_watch **out);

/* Stops the watch and releases the handle, which is invalid afterwards. From another thread the watch
 * stops in the loop's next iteration. [any thread] Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_watch_cancel(lk_watch *watch);

/* ---- Signals ------------------------------------------------------------------------------------- */

/* Calls fn(ctx, signum) on the loop each time signum arrives, until cancelled; LoopKit installs the
 * handler (through libevent) and the callback runs in phase 2 like any I/O callback, never inside the
 * signal handler. Several arrivals between two polls may be reported once. Only one loop of a process
 * should watch signals at a time (a libevent rule). out may be NULL; otherwise release *out with
 * lk_signal_cancel.
 * Errors: LK_EINVAL (NULL loop or fn, signum not in 1..64), LK_ETHREAD, LK_ECLOSED, LK_ESYS. */
LK_EXTERN int lk_signal_watch(lk_loop *loop, int signum, lk_signal_fn fn, void *ctx, lk_signal **out);

/* Stops watching the signal and releases the handle, which is invalid afterwards. From another thread
 * the watch stops in the loop's next iteration. [any thread] Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_signal_cancel(lk_signal *signal);

/* ---- Array processing ----------------------------------------------------------------------------- */

/* Calls each(ctx, i) for i = 0 ..< count on the loop without freezing it: between iterations the loop
 * polls I/O and runs timers and other work. budget_ns is the time each iteration may spend on items (the
 * chunk size adapts to the measured cost per item); budget_ns == 0 is per-item mode, which keeps the
 * original ArrayProcessor order exactly: update(0) runs before lk_process returns, then one item per iteration followed by
 * its update, then complete. update(ctx, done, total) runs once before lk_process returns and once per
 * iteration that processed items; update may be NULL. complete(ctx, status) runs exactly once, on the
 * loop, never before lk_process returns: status is LK_OK or LK_ECANCELED (cancelled, or the loop shut
 * down first). complete may be NULL. When out is not NULL, *out identifies the job until complete returns;
 * LoopKit releases it then. When lk_process returns an error, no callback is ever called.
 * budget_ns takes its whole range. Errors: LK_EINVAL (NULL loop or each, count over SSIZE_MAX), LK_ETHREAD,
 * LK_ECLOSED. */
LK_EXTERN int lk_process(lk_loop *loop, size_t count, uint64_t budget_ns,
                         lk_each_fn each, lk_update_fn update, lk_complete_fn complete,
                         void *ctx, lk_job **out);

/* Cancels a job: no item starts after the job notices; complete reports LK_ECANCELED on the loop, at the
 * latest in its next iteration. An item already running finishes. Cancelling twice does nothing.
 * [any thread] while the job's complete has not returned. Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_job_cancel(lk_job *job);

/* ---- Work pool ---------------------------------------------------------------------------------- */

/* What a work pool holds now, for lk_work_pool_get_info. */
typedef struct lk_work_pool_info {
    size_t threads;     /* threads that run work */
    size_t queue_limit; /* most items that may wait for a thread; more are refused with LK_EAGAIN */
    size_t queued;      /* items waiting for a thread now */
    size_t active;      /* items running now */
    uint64_t completed; /* items that ran to their end */
} lk_work_pool_info;

/* Creates a pool of `threads` threads with a queue of at most queue_limit waiting items. The shared pool
 * (pool == NULL in the calls below) has one thread per CPU, at least two, and a queue of 1,048,576; it
 * lives as long as the process. Release a pool with lk_work_pool_destroy.
 * [any thread] Errors: LK_EINVAL (threads or queue_limit 0 or over SSIZE_MAX, out NULL), LK_ESYS (a thread
 * could not start: none of the pool's is kept). */
LK_EXTERN int lk_work_pool_create(size_t threads, size_t queue_limit, lk_work_pool **out);

/* Refuses new work from now on (LK_ECLOSED); work still waiting for a thread never runs, and its after
 * callback gets LK_ECANCELED on its loop; work that has started runs to its end. Calling it twice is
 * harmless. [any thread] Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_work_pool_shutdown(lk_work_pool *pool);

/* Shuts the pool down (as lk_work_pool_shutdown), waits until no work of it runs, then releases the
 * handle, which is invalid afterwards. The pool's threads end on their own.
 * [any thread] but never from the pool's own work. Errors: LK_EINVAL (NULL). */
LK_EXTERN int lk_work_pool_destroy(lk_work_pool *pool);

/* Fills *out with the pool's size and counts (a snapshot); pool NULL is the shared pool.
 * [any thread] Errors: LK_EINVAL (out NULL). */
LK_EXTERN int lk_work_pool_get_info(const lk_work_pool *pool, lk_work_pool_info *out);

/* Runs work(ctx) on a thread of pool (NULL: the shared pool), then after(ctx, status) on the loop's
 * thread, in the first phase 3 that begins after the work ended (R13), never before lk_work_queue returns.
 * after runs exactly once (it may be NULL): status is LK_OK when work ran, or LK_ECANCELED when
 * lk_work_cancel or the pool's shutdown cancelled it before it started (work never ran), or when the
 * loop shut down before the work ended (after then runs during the loop's shutdown, before
 * lk_loop_shutdown returns on the loop's thread; work that had started finishes on its thread). When out
 * is not NULL, *out identifies the work until after returns (or would have, when after is NULL); LoopKit
 * releases it then. When lk_work_queue returns an error, neither callback is ever called. The
 * corresponding libuv call is uv_queue_work.
 * Errors: LK_EINVAL (NULL loop or work), LK_ETHREAD, LK_ECLOSED (the loop or the pool has shut down),
 * LK_EAGAIN (the pool's queue is full). */
LK_EXTERN int lk_work_queue(lk_loop *loop, lk_work_pool *pool, lk_fn work, lk_after_work_fn after,
                            void *ctx, lk_work **out);

/* Cancels queued work that no thread has taken: it never runs, and its after callback gets LK_ECANCELED
 * in a later phase 3. [any thread] while the work's after callback has not returned.
 * Errors: LK_EINVAL (NULL), LK_EBUSY (the work has started or ended, or was cancelled before). */
LK_EXTERN int lk_work_cancel(lk_work *work);

/* ---- Files --------------------------------------------------------------------------------------- */

/* What lk_fs_stat tells about a path. */
typedef struct lk_fs_info {
    uint64_t size;      /* bytes */
    uint32_t mode;      /* st_mode: the file type (S_IFREG, S_IFDIR, ...) and the permission bits */
    int64_t mtime_sec;  /* last modification, seconds since 1970-01-01 00:00 UTC */
    int32_t mtime_nsec; /* ...and nanoseconds */
    uint64_t inode;
} lk_fs_info;

/* A file request handed back by the lk_fs_*_req calls and lk_fs_scandir, for lk_fs_cancel. */
typedef struct lk_fs_req lk_fs_req;

/* The completion of an lk_fs_* call, on the loop's thread (R13: in the first phase 3 that begins after the
 * system call returned, never inside the lk_fs_* call). status is LK_OK, LK_ESYS (the system call failed:
 * result is its errno, which lk_last_errno() also tells during the callback) or LK_ECANCELED (lk_fs_cancel
 * cancelled it before it started, or the loop shut down before the call ended). result on LK_OK: the
 * descriptor (lk_fs_open), the bytes read (0 at the end of the file) or written, 0 otherwise. */
typedef void (*lk_fs_fn)(void *ctx, int status, int64_t result);

/* The file-system calls, each run on the shared work pool (lk_work_pool_get_info(NULL, ...)) with its
 * completion cb(ctx, status, result) on the loop's thread, exactly once. cb may be NULL. Paths and the
 * bytes of lk_fs_write are copied before the call returns; lk_fs_read's buffer and lk_fs_stat's *out must
 * stay valid until cb runs, and are written only on the loop's thread, just before a cb with LK_OK (the
 * system call fills LoopKit's own memory: a read takes len bytes of it while it runs). A call still running
 * when the loop shuts down gets its cb with LK_ECANCELED during the shutdown, before lk_loop_shutdown (or
 * lk_loop_destroy) returns on the loop's thread, and ends on its pool thread without touching the host's
 * memory, so the cb may release it. The corresponding libuv calls are uv_fs_open, uv_fs_close, uv_fs_read,
 * uv_fs_write, uv_fs_stat, uv_fs_unlink, uv_fs_rename and uv_fs_mkdir.
 * Each call has a twin named with _req that takes one more argument, lk_fs_req **req: when req is not NULL,
 * *req is the request, for lk_fs_cancel, from the twin's return until cb returns (or would have, when cb is
 * NULL); LoopKit releases it then, and the host never frees it. A plain call is its twin with req NULL: the
 * plain calls stay as they were, so code written for them is unchanged.
 * Errors (no callback then): LK_EINVAL (NULL loop, path, buffer or out; fd < 0; len over SSIZE_MAX),
 * LK_ENOMEM (no memory for the bytes of lk_fs_read or lk_fs_write), LK_ETHREAD, LK_ECLOSED (the loop has
 * shut down), LK_EAGAIN (the pool's queue is full); *req is not set then. */

/* open(path, flags | O_CLOEXEC, mode); result: the new descriptor. */
LK_EXTERN int lk_fs_open(lk_loop *loop, const char *path, int flags, int mode, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_open_req(lk_loop *loop, const char *path, int flags, int mode, lk_fs_fn cb, void *ctx,
                             lk_fs_req **req);
/* close(fd). */
LK_EXTERN int lk_fs_close(lk_loop *loop, int fd, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_close_req(lk_loop *loop, int fd, lk_fs_fn cb, void *ctx, lk_fs_req **req);
/* Reads up to len bytes into buf at offset (pread), or at the file's position when offset < 0 (read). */
LK_EXTERN int lk_fs_read(lk_loop *loop, int fd, void *buf, size_t len, int64_t offset, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_read_req(lk_loop *loop, int fd, void *buf, size_t len, int64_t offset, lk_fs_fn cb, void *ctx,
                             lk_fs_req **req);
/* Writes all len bytes of buf at offset (pwrite), or at the file's position when offset < 0 (write). */
LK_EXTERN int lk_fs_write(lk_loop *loop, int fd, const void *buf, size_t len, int64_t offset, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_write_req(lk_loop *loop, int fd, const void *buf, size_t len, int64_t offset, lk_fs_fn cb,
                              void *ctx, lk_fs_req **req);
/* stat(path) into *out. */
LK_EXTERN int lk_fs_stat(lk_loop *loop, const char *path, lk_fs_info *out, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_stat_req(lk_loop *loop, const char *path, lk_fs_info *out, lk_fs_fn cb, void *ctx,
                             lk_fs_req **req);
/* unlink(path). */
LK_EXTERN int lk_fs_unlink(lk_loop *loop, const char *path, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_unlink_req(lk_loop *loop, const char *path, lk_fs_fn cb, void *ctx, lk_fs_req **req);
/* rename(from, to). */
LK_EXTERN int lk_fs_rename(lk_loop *loop, const char *from, const char *to, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_rename_req(lk_loop *loop, const char *from, const char *to, lk_fs_fn cb, void *ctx,
                               lk_fs_req **req);
/* mkdir(path, mode). */
LK_EXTERN int lk_fs_mkdir(lk_loop *loop, const char *path, int mode, lk_fs_fn cb, void *ctx);
LK_EXTERN int lk_fs_mkdir_req(lk_loop *loop, const char *path, int mode, lk_fs_fn cb, void *ctx, lk_fs_req **req);

/* What an entry of a directory is, for lk_fs_dirent.type (libuv's uv_dirent_type_t, in its order). */
enum {
    LK_FS_DIRENT_UNKNOWN = 0, /* the file system did not say and lstat could not tell (the entry went away) */
    LK_FS_DIRENT_FILE = 1,    /* a regular file */
    LK_FS_DIRENT_DIR = 2,     /* a directory */
    LK_FS_DIRENT_LINK = 3,    /* a symbolic link (never followed) */
    LK_FS_DIRENT_FIFO = 4,    /* a named pipe */
    LK_FS_DIRENT_SOCKET = 5,  /* a Unix socket */
    LK_FS_DIRENT_CHAR = 6,    /* a character device */
    LK_FS_DIRENT_BLOCK = 7    /* a block device */
};

/* One entry of a directory, lent to an lk_fs_scandir_fn. */
typedef struct lk_fs_dirent {
    const char *name; /* the entry's name (not a path), NUL-terminated, its bytes as readdir gave them */
    int type;         /* LK_FS_DIRENT_*: readdir's d_type, or lstat's when the file system gives DT_UNKNOWN */
} lk_fs_dirent;

/* The completion of lk_fs_scandir, on the loop's thread (R13), exactly once. status is LK_OK (count entries,
 * entries NULL when count is 0), LK_ESYS (opendir or readdir failed: lk_last_errno() tells its errno during the
 * callback, such as ENOENT, ENOTDIR or EACCES) or LK_ECANCELED (lk_fs_cancel cancelled it before it started, or
 * the loop shut down before it ended), with entries NULL and count 0 on an error. The entries and their names
 * are LoopKit's memory, lent during the call only: copy what you keep. */
typedef void (*lk_fs_scandir_fn)(void *ctx, int status, const lk_fs_dirent *entries, size_t count);

/* Lists the directory at path on the shared work pool: every entry but "." and "..", sorted by name in byte
 * order (as strcmp compares them), each with its type; then cb(ctx, status, entries, count) on the loop's
 * thread (R13), never inside this call. path is copied before the call returns. cb may be NULL. req as for
 * the _req calls above: when not NULL, *req is the request for lk_fs_cancel until cb returns. A scan still
 * running when the loop shuts down gets its cb with LK_ECANCELED during the shutdown, as the calls above.
 * The corresponding libuv call is uv_fs_scandir (which hands its entries out one by one with
 * uv_fs_scandir_next; here the callback is lent all of them at once).
 * Errors (no callback then, *req not set): LK_EINVAL (NULL loop or path), LK_ETHREAD, LK_ECLOSED (the loop has
 * shut down), LK_EAGAIN (the pool's queue is full). */
LK_EXTERN int lk_fs_scandir(lk_loop *loop, const char *path, lk_fs_scandir_fn cb, void *ctx, lk_fs_req **req);

/* Cancels a file request (from an lk_fs_*_req call or lk_fs_scandir) that no pool thread has taken yet: its
 * system calls never run, and its cb gets LK_ECANCELED exactly once, in a later phase 3 (never inside this
 * call), as uv_cancel does for a uv_fs_t. A request that has started runs to its end and completes normally
 * (LK_OK or LK_ESYS); one that has ended, or whose cb is queued, is not changed.
 * [any thread] while the request's cb has not returned (after that the handle is released: never call it then).
 * Errors: LK_EINVAL (NULL), LK_EBUSY (the request has started or ended, or was cancelled before). */
LK_EXTERN int lk_fs_cancel(lk_fs_req *req);

/* ---- Path watching ---------------------------------------------------------------------------------- */

/* What changed, for lk_fs_watch_fn: one or more of these bits. Every event for the same path in one read of
 * the watch's inotify descriptor (one per loop iteration) becomes one call, with the bits merged. */
enum {
    LK_FS_CREATED = 1,     /* created in a watched directory (IN_CREATE) */
    LK_FS_MODIFIED = 2,    /* contents written (IN_MODIFY) */
    LK_FS_ATTRIB = 4,      /* permissions, owner, timestamps or link count changed (IN_ATTRIB) */
    LK_FS_REMOVED = 8,     /* removed (IN_DELETE; a watched path itself: IN_DELETE_SELF) */
    LK_FS_MOVED_FROM = 16, /* renamed away from this path (IN_MOVED_FROM; a watched path itself: IN_MOVE_SELF) */
    LK_FS_MOVED_TO = 32,   /* renamed to this path (IN_MOVED_TO) */
    LK_FS_OVERFLOW = 64,   /* the kernel's queue overflowed, events were lost (path is ""): look again */
    LK_FS_ISDIR = 128      /* the path is a directory */
};

/* Flags for lk_fs_watch_start and lk_fs_watch_add. */
enum {
    LK_FS_WATCH_RECURSIVE = 1 /* a directory's subdirectories too, and each one that appears later (its
                                 entries are then told as LK_FS_CREATED) */
};

/* A change to a watched path, on the loop's thread, in phase 2 (R16). path is the watched path, or a watched
 * directory's path joined with the entry's name by '/', valid during the call only. */
typedef void (*lk_fs_watch_fn)(void *ctx, lk_fs_watch *watch, const char *path, int changes);

/* Starts watching path (a directory: its entries and itself; a file: the file) with inotify on loop; fn is
 * called for each change until lk_fs_watch_stop, lk_fs_watch_free or the loop's shutdown. In phase 2 of the
 * iteration whose poll found the watch's inotify descriptor readable, the watch reads the kernel's events,
 * coalesces them (one call per path, its bits merged, in the order of each path's first event) and calls fn
 * for each: work fn queues runs in that iteration's drain (R16). A change made between iterations is told in
 * the next one. Release the handle with lk_fs_watch_free. The corresponding libuv calls are uv_fs_event_init
 * and uv_fs_event_start.
 * Errors: LK_EINVAL (NULL loop, path, fn or out; an empty path; unknown flags), LK_ETHREAD, LK_ECLOSED (the
 * loop has shut down), LK_ESYS with lk_last_errno(): ENOENT (no such path, or a component is not a
 * directory), EACCES, ENOSPC (the inotify watch limit, /proc/sys/fs/inotify/max_user_watches: nothing of
 * path stays watched), EMFILE (the inotify instance limit, /proc/sys/fs/inotify/max_user_instances). */
LK_EXTERN int lk_fs_watch_start(lk_loop *loop, const char *path, unsigned int flags, lk_fs_watch_fn fn,
                                void *ctx, lk_fs_watch **out);

/* Watches one more path with the same callback (again for a path already watched: replaces its flags).
 * Errors: as lk_fs_watch_start (LK_EINVAL for a NULL watch); LK_ECLOSED once stopped. */
LK_EXTERN int lk_fs_watch_add(lk_fs_watch *watch, const char *path, unsigned int flags);

/* Stops watching one path given to lk_fs_watch_start or lk_fs_watch_add (and its subdirectories).
 * Errors: LK_EINVAL (NULL, or a path that is not watched), LK_ETHREAD, LK_ECLOSED (stopped). */
LK_EXTERN int lk_fs_watch_remove(lk_fs_watch *watch, const char *path);

/* Stops the watch: every path, the inotify descriptor closed; fn is not called again (also when called from
 * fn: the rest of that read is not told). The handle stays valid for lk_fs_watch_free.
 * Errors: LK_EINVAL (NULL), LK_ETHREAD, LK_ECLOSED (already stopped, by a call or the loop's shutdown). */
LK_EXTERN int lk_fs_watch_stop(lk_fs_watch *watch);

/* Stops the watch if needed and releases the handle, which is invalid afterwards; also after the loop shut
 * down. Not from inside the watch's own callback (LK_EBUSY: stop it there, free it later).
 * Errors: LK_EINVAL (NULL), LK_ETHREAD, LK_EBUSY. */
LK_EXTERN int lk_fs_watch_free(lk_fs_watch *watch);

/* ---- UDP ------------------------------------------------------------------------------------------ */

/* Flags for lk_udp_bind. */
enum {
    LK_UDP_REUSEADDR = 1,    /* SO_REUSEADDR */
    LK_UDP_REUSEPORT = 2,    /* SO_REUSEPORT: several sockets (one per loop) share the port */
    LK_UDP_RECVTOS = 4,      /* report each datagram's traffic class (IP_RECVTOS, IPV6_RECVTCLASS) */
    LK_UDP_DUALSTACK = 8     /* an IPv6 socket receives IPv4 too (IPV6_V6ONLY off) */
};

/* lk_udp_datagram.flags */
enum { LK_UDP_TRUNCATED = 1 }; /* the datagram was larger than the receive buffer and was cut (MSG_TRUNC) */

struct sockaddr;

/* One received datagram, lent to an lk_udp_recv_fn: every pointer is valid only during the callback. */
typedef struct lk_udp_datagram {
    const void *data;                  /* the bytes (at most max_datagram_size) */
    size_t length;
    const struct sockaddr *sender;     /* a struct sockaddr_in or sockaddr_in6 */
    unsigned int sender_length;
    int flags;                         /* LK_UDP_TRUNCATED */
    int traffic_class;                 /* the TOS byte with its ECN bits; -1 without LK_UDP_RECVTOS */
} lk_udp_datagram;

/* Datagrams one recvmmsg took (1 <= count <= the batch size), on the loop's thread, in phase 2 (R14). */
typedef void (*lk_udp_recv_fn)(void *ctx, lk_udp *udp, const lk_udp_datagram *datagrams, size_t count);

/* Binds a UDP socket to a numeric host ("127.0.0.1", "::1", "0.0.0.0", "::") and port (0: the kernel
 * picks one, see lk_udp_local_port) on loop. batch_size, 1 to 1024 or 0 for the default of 32, is the most
 * datagrams one recvmmsg takes; max_datagram_size, 1 to 65535 or 0 for the default of 2048, the largest
 * received whole (a larger one arrives cut, LK_UDP_TRUNCATED). The socket holds batch_size receive buffers
 * of max_datagram_size bytes. Release it with lk_udp_close. The corresponding libuv calls are uv_udp_init
 * and uv_udp_bind. The first lk_udp_bind or lk_child_spawn of the process sets SIGPIPE to SIG_IGN for good
 * (see lk_child_spawn).
 * Errors: LK_EINVAL (NULL loop, host or out; a host that is not numeric; a port outside 0...65535;
 * batch_size over 1024 or max_datagram_size over 65535, SIZE_MAX and every other size with the top bit set
 * included), LK_ETHREAD, LK_ECLOSED (the loop has shut down), LK_ESYS (lk_last_errno(): EADDRINUSE,
 * EACCES, ...). */
LK_EXTERN int lk_udp_bind(lk_loop *loop, const char *host, int port, unsigned int flags,
                          size_t batch_size, size_t max_datagram_size, lk_udp **out);

/* The port the socket is bound to (> 0), or LK_EINVAL for NULL. [any thread] */
LK_EXTERN int lk_udp_local_port(const lk_udp *udp);

/* Sets the default peer: lk_udp_send with host NULL sends there, and only its datagrams are received.
 * Errors: LK_EINVAL (NULL, bad address, the other family), LK_ETHREAD, LK_ECLOSED, LK_ESYS. */
LK_EXTERN int lk_udp_connect(lk_udp *udp, const char *host, int port);

/* Starts receiving: fn(ctx, udp, datagrams, count) for each batch, until lk_udp_recv_stop or lk_udp_close.
 * Datagrams sent from fn leave together, with one sendmmsg, when it returns. Calling it again replaces fn.
 * The corresponding libuv call is uv_udp_recv_start. Errors: LK_EINVAL (NULL), LK_ETHREAD, LK_ECLOSED. */
LK_EXTERN int lk_udp_recv_start(lk_udp *udp, lk_udp_recv_fn fn, void *ctx);

/* Stops reading the socket (the kernel buffers, then drops). Errors: LK_EINVAL, LK_ETHREAD, LK_ECLOSED. */
LK_EXTERN int lk_udp_recv_stop(lk_udp *udp);

/* Sends length bytes as one datagram to host:port (host NULL: the default peer). The bytes are copied
 * when the datagram must wait (the kernel said EAGAIN): the caller may reuse them at once. Inside this
 * socket's own receive callback the datagram waits (lk_udp_queued counts it) and leaves with the callback's
 * other datagrams, in one sendmmsg, when the callback returns; anywhere else, another socket's receive
 * callback included, it goes to the kernel at once when nothing waits. The corresponding libuv call is
 * uv_udp_try_send / uv_udp_send.
 * Errors: LK_EINVAL (NULL socket, NULL data with length > 0, length over SSIZE_MAX, bad address, the other
 * family), LK_ETHREAD, LK_ECLOSED, LK_EAGAIN (the send queue holds its limit, 4,096 datagrams: nothing was
 * queued), LK_ESYS (lk_last_errno(): EMSGSIZE, EACCES for a broadcast without lk_udp_set_broadcast,
 * ECONNREFUSED, EDESTADDRREQ when host is NULL and there is no default peer, ENETUNREACH). */
LK_EXTERN int lk_udp_send(lk_udp *udp, const void *data, size_t length, const char *host, int port);

/* Sends length bytes to the sender of `to`, one of the datagrams lent to the running receive callback
 * (no address formatted: the echo path). As lk_udp_send. Call only inside that callback.
 * Errors: as lk_udp_send; LK_EINVAL when `to` is not a datagram of the running callback. */
LK_EXTERN int lk_udp_reply(lk_udp *udp, const void *data, size_t length, const lk_udp_datagram *to);

/* Datagrams waiting for the kernel (the send queue), or LK_EINVAL / LK_ETHREAD. */
LK_EXTERN int lk_udp_queued(const lk_udp *udp);

/* Socket options, each effective for what is sent from now on. Errors: LK_EINVAL (NULL, out of range, not
 * a multicast group, unknown interface), LK_ETHREAD, LK_ECLOSED, LK_ESYS.
 *   broadcast          SO_BROADCAST (0 off, any other value on)
 *   ttl                IP_TTL / IPV6_UNICAST_HOPS (1...255)
 *   multicast_ttl      IP_MULTICAST_TTL / IPV6_MULTICAST_HOPS (0...255)
 *   multicast_loop     IP_MULTICAST_LOOP / IPV6_MULTICAST_LOOP (0 off, any other value on)
 *   traffic_class      IP_TOS / IPV6_TCLASS (0...255; the two low bits are ECN)
 *   join/leave_group   IP_ADD/DROP_MEMBERSHIP, IPV6_ADD/DROP_MEMBERSHIP; interface NULL: the system's pick */
LK_EXTERN int lk_udp_set_broadcast(lk_udp *udp, int on);
LK_EXTERN int lk_udp_set_ttl(lk_udp *udp, int ttl);
LK_EXTERN int lk_udp_set_multicast_ttl(lk_udp *udp, int ttl);
LK_EXTERN int lk_udp_set_multicast_loop(lk_udp *udp, int on);
LK_EXTERN int lk_udp_set_traffic_class(lk_udp *udp, int traffic_class);
LK_EXTERN int lk_udp_join_group(lk_udp *udp, const char *group, const char *interface_name);
LK_EXTERN int lk_udp_leave_group(lk_udp *udp, const char *group, const char *interface_name);

/* Closes the socket (queued datagrams are dropped; fn is not called again) and releases the handle, which
 * is invalid afterwards. Also after the loop shut down (which closed the socket). Not from inside the
 * socket's own receive callback (LK_EBUSY). The corresponding libuv call is uv_close.
 * Errors: LK_EINVAL (NULL), LK_ETHREAD, LK_EBUSY. */
LK_EXTERN int lk_udp_close(lk_udp *udp);

/* ---- Child processes -------------------------------------------------------------------------------- */
/* (lk_process is the array processor's, so a child process is an lk_child.) */

/* What a child's standard input, output or error is, for lk_child_options.stdio. */
enum {
    LK_CHILD_INHERIT = 0, /* this process's own descriptor (the default of a zeroed lk_child_options) */
    LK_CHILD_NULL = 1,    /* /dev/null */
    LK_CHILD_PIPE = 2     /* a pipe to this process: input through lk_child_write, output to on_output */
};

/* lk_child_options.flags */
enum { LK_CHILD_NEW_PROCESS_GROUP = 1 }; /* the child leads a new process group (its pid is the group id) */

/* How to start a child; zero every field you do not set. */
typedef struct lk_child_options {
    const char *file;        /* the executable: a path ("/bin/sh"), or a name without '/' ("sh") looked up as
                                posix_spawnp does: in env's PATH when it has one, else in this process's PATH */
    const char *const *args; /* the arguments after argv[0] (which is file), NULL-terminated; NULL: none */
    const char *const *env;  /* "NAME=value" strings, NULL-terminated; NULL: this process's environment */
    const char *cwd;         /* the child's working directory; NULL: this process's */
    int stdio[3];            /* standard input, output, error: LK_CHILD_INHERIT, LK_CHILD_NULL or LK_CHILD_PIPE */
    unsigned int flags;      /* LK_CHILD_NEW_PROCESS_GROUP */
    uint64_t timeout_ns;     /* > 0: terminated (SIGTERM, then SIGKILL after 1 s) if it still runs then (every
                                value is taken: 2^63 ns and more are 292 years) */
} lk_child_options;

/* The child has ended and been reaped, on the loop's thread, in phase 2 of the iteration whose poll found its
 * pidfd readable (R15); work it queues runs in that iteration's drain. exit_status is its exit status (0-255)
 * when term_signal is 0; term_signal is the signal that ended it otherwise. Called exactly once (during the
 * loop's shutdown for a child the shutdown killed), unless the handle was freed first. */
typedef void (*lk_child_exit_fn)(void *ctx, lk_child *child, int exit_status, int term_signal);

/* Bytes the child wrote to its standard output (fd 1) or error (fd 2) pipe, lent during the call; length 0
 * tells that stream's end, once. Output and the exit are told independently: output may still arrive after
 * on_exit (both in phase 2). */
typedef void (*lk_child_output_fn)(void *ctx, lk_child *child, int fd, const void *data, size_t length);

/* Starts a child with posix_spawn on loop. Its exit is watched through a pidfd (LoopKit installs no SIGCHLD
 * handler) and it is reaped with waitid(P_PIDFD). on_exit and on_output may be NULL (piped output is then read
 * and dropped). Release the handle with lk_child_free. The loop's shutdown kills a child still running
 * (SIGKILL) and reaps it, a freed one too (see lk_child_free). The corresponding libuv call is uv_spawn.
 * SIGPIPE: the first lk_child_spawn or lk_udp_bind of the process (or the first socket LoopKit's Swift
 * networking opens in it) sets SIGPIPE's disposition to SIG_IGN for the whole process, so that a write to a
 * pipe or socket whose reader has gone fails with EPIPE instead of killing the process. LoopKit never
 * restores the disposition it found and never sets it again: a host that sets SIGPIPE back afterwards is
 * killed by such a write (to the standard input of a child that has exited, for one). Children start with
 * SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGCHLD, SIGHUP, SIGUSR1 and SIGUSR2 at their defaults and no signal
 * blocked.
 * Errors: LK_EINVAL (NULL loop, options, file or out; a stdio value or flag that does not exist; a working
 * directory that cannot be entered: the child never ran), LK_ETHREAD, LK_ECLOSED (the loop has shut down),
 * LK_ESYS with lk_last_errno(): ENOENT (no executable at file, or none of that name in PATH), EACCES (not
 * executable), EMFILE, EAGAIN, ... */
LK_EXTERN int lk_child_spawn(lk_loop *loop, const lk_child_options *options, lk_child_exit_fn on_exit,
                             lk_child_output_fn on_output, void *ctx, lk_child **out);

/* The child's process id (> 0), also after it ended; LK_EINVAL for NULL. [any thread] */
LK_EXTERN int lk_child_pid(const lk_child *child);

/* Sends signum (1...64) to the child through its pidfd (never to a recycled pid); does nothing once the child
 * has ended. Errors: LK_EINVAL (NULL, signum out of range), LK_ETHREAD, LK_ESYS. */
LK_EXTERN int lk_child_kill(lk_child *child, int signum);

/* Sends SIGTERM, then SIGKILL if the child still runs after grace_ns (every value is taken: 2^63 ns and more
 * are 292 years); does nothing once it has ended.
 * Errors: LK_EINVAL (NULL), LK_ETHREAD. */
LK_EXTERN int lk_child_terminate(lk_child *child, uint64_t grace_ns);

/* Writes length bytes to the child's standard input pipe (copied when the pipe does not take them at once).
 * Errors: LK_EINVAL (NULL; NULL data with length > 0; length over SSIZE_MAX; standard input is not
 * LK_CHILD_PIPE), LK_ETHREAD,
 * LK_ECLOSED (standard input was closed, the child ended reading it, or the loop shut down), LK_EAGAIN (more
 * than 64 KiB already wait for the pipe: nothing was queued; try again in a later iteration). */
LK_EXTERN int lk_child_write(lk_child *child, const void *data, size_t length);

/* Told on the loop's thread when input for the child's standard input pipe, after it went above 64 KiB (an
 * lk_child_write returned LK_EAGAIN), has drained to 16 KiB: the time to write more (uv_write's callback plays
 * that part in libuv). Not told once standard input is closed (lk_child_close_stdin, lk_child_free), even while
 * the close still drains what was written. ctx is lk_child_spawn's. */
typedef void (*lk_child_writable_fn)(void *ctx, lk_child *child);

/* Sets the callback told when the child's standard input can take more after LK_EAGAIN; NULL clears it.
 * Errors: LK_EINVAL (NULL child, or standard input is not LK_CHILD_PIPE), LK_ETHREAD, LK_ECLOSED (standard
 * input was closed, the child ended reading it, or the loop shut down). */
LK_EXTERN int lk_child_on_stdin_writable(lk_child *child, lk_child_writable_fn on_writable);

/* Closes the child's standard input once what was written has gone: the child reads end of file.
 * Errors: LK_EINVAL (NULL, or standard input is not LK_CHILD_PIPE), LK_ETHREAD, LK_ECLOSED (closed already). */
LK_EXTERN int lk_child_close_stdin(lk_child *child);

/* Releases the handle, which is invalid afterwards; no callback is called after it. The child is not killed
 * then: its pipes are closed (it reads end of file, and a write to its output gets SIGPIPE) and LoopKit keeps
 * it to reap when it ends; its timeout_ns still applies. If it still runs when the loop shuts down, the
 * shutdown kills it (SIGKILL) and reaps it, as it does a child not freed, and calls nothing: no freed child
 * is left running or a zombie by the loop. Allowed inside the child's own callbacks (the handle is released
 * when the callback returns), and after the loop shut down. Errors: LK_EINVAL (NULL), LK_ETHREAD. */
LK_EXTERN int lk_child_free(lk_child *child);

#ifdef __cplusplus
}
#endif

#endif /* LOOPKIT_H */
