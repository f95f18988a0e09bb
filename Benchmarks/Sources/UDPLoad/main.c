// The load of Benchmarks/udp-bench.sh: one connected UDP socket keeps WINDOW datagrams of SIZE bytes in flight
// to an echo server (sendmmsg/recvmmsg, so the client is not the bottleneck), tops the window up when echoes
// stop coming (a datagram the server or kernel dropped), and counts echoes over SECONDS after 1 s of warm-up.
//   UDPLoad --port P [--host 127.0.0.1] [--seconds 5] [--window 64] [--size 64]
// Prints "datagrams/s N" (and the echoes counted).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static char payload[65536];
static char inbox[BATCH][2048];
static struct mmsghdr out[BATCH], in[BATCH];
static struct iovec out_iov[BATCH], in_iov[BATCH];

static int send_n(int fd, int n, int size) {
    int sent = 0;
    while (sent < n) {
        int k = n - sent < BATCH ? n - sent : BATCH;
        for (int i = 0; i < k; i++) {
            out_iov[i].iov_base = payload;
            out_iov[i].iov_len = (size_t)size;
            memset(&out[i], 0, sizeof out[i]);
            out[i].msg_hdr.msg_iov = &out_iov[i];
            out[i].msg_hdr.msg_iovlen = 1;
        }
        int r = sendmmsg(fd, out, (unsigned)k, 0);
        if (r <= 0) break;
        sent += r;
    }
    return sent;
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    int port = 0, window = 64, size = 64;
    double seconds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--host") == 0) host = argv[i + 1];
        else if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--window") == 0) window = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--size") == 0) size = atoi(argv[i + 1]);
    }
    int v6 = strchr(host, ':') != NULL;
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_storage address;
    memset(&address, 0, sizeof address);
    socklen_t length;
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&address;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((unsigned short)port);
        inet_pton(AF_INET6, host, &a->sin6_addr);
        length = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&address;
        a->sin_family = AF_INET;
        a->sin_port = htons((unsigned short)port);
        inet_pton(AF_INET, host, &a->sin_addr);
        length = sizeof *a;
    }
    int buffer = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    if (connect(fd, (struct sockaddr *)&address, length) != 0) { perror("connect"); return 1; }
    for (int i = 0; i < BATCH; i++) {
        in_iov[i].iov_base = inbox[i];
        in_iov[i].iov_len = sizeof inbox[i];
        in[i].msg_hdr.msg_iov = &in_iov[i];
        in[i].msg_hdr.msg_iovlen = 1;
    }
    memset(payload, 'x', sizeof payload);
    long in_flight = send_n(fd, window, size);
    double start = now(), counted_from = start + 1, end = counted_from + seconds, last_echo = start;
    long counted = 0;
    struct pollfd p = {fd, POLLIN, 0};
    for (;;) {
        double t = now();
        if (t >= end) break;
        if (t - last_echo > 0.02 && in_flight < window) {  // echoes stopped: some were dropped
            in_flight += send_n(fd, (int)(window - in_flight), size);
            last_echo = t;
        }
        if (poll(&p, 1, 10) <= 0) { in_flight = 0; continue; }
        int r = recvmmsg(fd, in, BATCH, 0, NULL);
        if (r <= 0) continue;
        last_echo = now();
        if (last_echo >= counted_from) counted += r;
        in_flight -= r;
        if (in_flight < 0) in_flight = 0;
        in_flight += send_n(fd, r, size);
    }
    printf("datagrams/s %.0f (%ld echoes in %.1f s, window %d, %d bytes)\n", counted / seconds, counted, seconds, window, size);
    return 0;
}
