#ifndef LOOPKIT_CEVENT_SHIM_H
#define LOOPKIT_CEVENT_SHIM_H

/* The only window LoopKit has onto libevent 2.1 (and the two Linux fds its events wait on, which
 * Glibc's Swift module does not export). Swift code outside Sources/LoopKit/Internal never
 * imports this module.
 *
 * The system headers come first, on purpose: libevent's event-config.h defines _GNU_SOURCE before it
 * includes them, which would give fd_set a different shape in this module than in Glibc's or
 * Dispatch's, and Clang refuses to merge the two. Included here first, they match everyone else's. */
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/eventfd.h>  /* the loop's wake-up fd */
#include <sys/timerfd.h>  /* the loop's precise timer */
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>

#include <event2/event.h>
#include <event2/thread.h>
/* LoopKitNet's window (only Sources/LoopKitNet/Internal/LibEventNet.swift uses these). */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/dns.h>
#include <event2/util.h>

#endif
