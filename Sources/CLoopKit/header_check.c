/* Compiles loopkit.h as every C host may: make header-check builds this file as C99, C11 and C++17 with
 * -Wall -Wextra -Werror -pedantic (cc and c++), and SwiftPM compiles it into libLoopKitC.so, where it
 * defines nothing. The functions are implemented in Swift (Sources/LoopKitC) and exported from
 * libloopkit.so.MAJOR and libLoopKitC.so. */
#include "loopkit.h"
#include "loopkit.h" /* the include guard holds */

/* The version macros are integer constants a host can test with #if, and lk_version() is built from them
 * (c_api_test checks the string against the macros it was compiled with). */
#if !defined(LK_VERSION_MAJOR) || !defined(LK_VERSION_MINOR) || !defined(LK_VERSION_PATCH)
#error "loopkit.h: LK_VERSION_MAJOR, LK_VERSION_MINOR and LK_VERSION_PATCH must be defined"
#endif
#if LK_VERSION_MAJOR < 0 || LK_VERSION_MINOR < 0 || LK_VERSION_PATCH < 0
#error "loopkit.h: the LK_VERSION_* macros must be non-negative integers"
#endif

/* Status codes are negative and distinct from LK_OK; the event flags are bits (a compile-time check that
 * works in C99 and C++: a negative array size is an error). */
typedef char lk_header_check_status[(LK_OK == 0 && LK_EINVAL < 0 && LK_ECLOSED < 0 && LK_ETHREAD < 0) ? 1 : -1];
typedef char lk_header_check_events[((LK_READABLE & LK_WRITABLE) == 0) ? 1 : -1];

/* Every callback type and struct is complete where it must be and usable from C and C++ alike. */
typedef struct lk_header_check_types {
    lk_fn fn;
    lk_watch_fn watch;
    lk_signal_fn signal;
    lk_each_fn each;
    lk_update_fn update;
    lk_complete_fn complete;
    lk_after_work_fn after_work;
    lk_iteration_report report;
    lk_work_pool_info pool_info;
    lk_fs_info fs_info;
    lk_udp_datagram datagram;
    lk_child_options child_options;
} lk_header_check_types;
