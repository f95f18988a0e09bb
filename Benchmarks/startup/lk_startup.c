/* bench-startup: a C host's whole life with LoopKit: create a loop, run one iteration without waiting,
 * destroy it. Built twice by startup-bench.sh, against libloopkit.so (the Swift runtime inside) and
 * against libLoopKitC.so (the toolchain's runtime libraries loaded beside it). */
#include <loopkit.h>

int main(void) {
    lk_loop *loop;
    if (lk_loop_create(&loop) != LK_OK) return 1;
    if (lk_loop_run_once(loop, 0) < 0) return 1;
    return lk_loop_destroy(loop) == LK_OK ? 0 : 1;
}
