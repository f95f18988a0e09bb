// Spawn and wait for /bin/true N times, one after another, with libuv's uv_spawn (Debian's libuv1-dev,
// SIGCHLD-based exit): the C peer of SpawnBench (`Benchmarks/spawn-bench.sh`).
//   UVSpawnBench [N]      prints "spawns/s X (N in S s)"
#include <uv.h>
#include <stdio.h>
#include <stdlib.h>

static uv_loop_t *loop;
static int left;
static uv_process_t child;
static void spawn_next(void);

static void on_closed(uv_handle_t *handle) { (void)handle; if (--left > 0) spawn_next(); }
static void on_child_exit(uv_process_t *process, int64_t status, int signal) {
    (void)status; (void)signal;
    uv_close((uv_handle_t *)process, on_closed);
}

static void spawn_next(void) {
    char *args[] = {"/bin/true", NULL};
    uv_stdio_container_t stdio[3] = {{UV_IGNORE, {0}}, {UV_IGNORE, {0}}, {UV_IGNORE, {0}}};
    uv_process_options_t options = {0};
    options.file = "/bin/true";
    options.args = args;
    options.exit_cb = on_child_exit;
    options.stdio = stdio;
    options.stdio_count = 3;
    int rc = uv_spawn(loop, &child, &options);
    if (rc != 0) { fprintf(stderr, "uv_spawn: %s\n", uv_strerror(rc)); exit(1); }
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 1000;
    left = count;
    loop = uv_default_loop();
    uint64_t start = uv_hrtime();
    spawn_next();
    uv_run(loop, UV_RUN_DEFAULT);
    double seconds = (uv_hrtime() - start) / 1e9;
    printf("spawns/s %.0f (%d in %.2f s)\n", count / seconds, count, seconds);
    return 0;
}
