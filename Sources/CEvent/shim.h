#ifndef LOOPKIT_CEVENT_SHIM_H
#define LOOPKIT_CEVENT_SHIM_H

/* The only window LoopKit has onto libevent 2.1. Swift code outside
 * Sources/LoopKit/Internal never imports this module. */
#include <event2/event.h>
#include <event2/thread.h>

#endif
