#ifndef LOOPKIT_CDISPATCHMAINQUEUE_SHIM_H
#define LOOPKIT_CDISPATCHMAINQUEUE_SHIM_H

/* The two functions libdispatch exports for a run loop that drains the main queue: what CoreFoundation's
 * CFRunLoop calls on Linux, and what LoopKit's main loop calls (Sources/LoopKit/Internal/MainQueue.swift,
 * the only importer). Not in libdispatch's public headers; declared here as libdispatch defines them
 * (src/queue.c, DISPATCH_COCOA_COMPAT), where dispatch_runloop_handle_t is an int on Linux.
 *
 * _dispatch_get_main_queue_handle_4CF: the main queue's eventfd (EFD_NONBLOCK); libdispatch writes 1 to
 *   it whenever the main queue gets work. The reader reads it to clear it.
 * _dispatch_main_queue_callback_4CF: runs the blocks on the main queue when it was called, a snapshot
 *   (blocks they submit run at the next call). Main thread only; crashes after dispatch_main(). */
int _dispatch_get_main_queue_handle_4CF(void);
void _dispatch_main_queue_callback_4CF(void *message);

#endif
