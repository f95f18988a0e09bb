// The libuv peer of `LoopDemo udp-echo` (Benchmarks/udp-bench.sh), built against Debian's libuv1-dev: one
// uv_loop, a uv_udp_t opened with UV_UDP_RECVMMSG (recvmmsg, libuv's batched read), every datagram written
// back to its sender with uv_udp_try_send (libuv 1.44 has no batched send), uv_udp_send when it would block.
//   UVUDPEchoPeer [--host 127.0.0.1] [--port 0]
// Prints "listening on HOST:PORT (udp)" once bound; runs until killed.
#include <uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uv_udp_t server;

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)handle; (void)suggested;
    // With UV_UDP_RECVMMSG libuv splits a buffer of n * 64 KiB into n datagram slots (at most 20 per
    // recvmmsg in libuv 1.44); one static buffer, since each datagram is echoed before the next read.
    static char *big;
    if (!big) big = malloc(32 * 65536);
    *buf = uv_buf_init(big, 32 * 65536);
}

typedef struct { uv_udp_send_t req; char data[]; } pending_send;

static void on_sent(uv_udp_send_t *req, int status) { (void)status; free(req); }

static void on_read(uv_udp_t *handle, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr, unsigned flags) {
    (void)flags;
    if (nread <= 0 || addr == NULL) return;  // 0 with NULL addr: end of a recvmmsg batch
    uv_buf_t out = uv_buf_init(buf->base, (unsigned)nread);
    int sent = uv_udp_try_send(handle, &out, 1, addr);
    if (sent == UV_EAGAIN) {
        pending_send *p = malloc(sizeof *p + (size_t)nread);
        memcpy(p->data, buf->base, (size_t)nread);
        uv_buf_t copy = uv_buf_init(p->data, (unsigned)nread);
        uv_udp_send(&p->req, handle, &copy, 1, addr, on_sent);
    }
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    int port = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--host") == 0) host = argv[i + 1];
        else if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
    }
    uv_loop_t *loop = uv_default_loop();
    struct sockaddr_storage address;
    int family = strchr(host, ':') ? AF_INET6 : AF_INET;
    if (family == AF_INET6) uv_ip6_addr(host, port, (struct sockaddr_in6 *)&address);
    else uv_ip4_addr(host, port, (struct sockaddr_in *)&address);
    if (uv_udp_init_ex(loop, &server, family | UV_UDP_RECVMMSG) != 0) return 1;
    int rc = uv_udp_bind(&server, (const struct sockaddr *)&address, UV_UDP_REUSEADDR);
    if (rc != 0) { fprintf(stderr, "bind: %s\n", uv_strerror(rc)); return 1; }
    struct sockaddr_storage bound;
    int length = sizeof bound;
    uv_udp_getsockname(&server, (struct sockaddr *)&bound, &length);
    int bound_port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port : ((struct sockaddr_in *)&bound)->sin_port);
    uv_udp_recv_start(&server, on_alloc, on_read);
    printf("listening on %s:%d (udp)\n", host, bound_port);
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}
