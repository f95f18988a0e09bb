/* bench-startup's peer: the same host on libuv (Debian's libuv1 1.44): uv_loop_init, one
 * uv_run(UV_RUN_NOWAIT), uv_loop_close. */
#include <uv.h>

int main(void) {
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) return 1;
    uv_run(&loop, UV_RUN_NOWAIT);
    return uv_loop_close(&loop) == 0 ? 0 : 1;
}
