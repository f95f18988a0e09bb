/*
 * A libevent echo server on a LoopKit loop: evconnlistener and bufferevents registered on the loop's own
 * event_base (lk_loop_event_base), next to LoopKit work (lk_loop_enqueue, a repeating lk_timer) on the same
 * thread. The listener's and bufferevents' callbacks run in phase 2 of the loop's iterations; the work they
 * queue keeps the next-iteration queue's rules.
 *
 *   echo              self-test: a client thread makes connections, checks every echoed byte, then stops
 *                     the loop from its own thread; prints a summary and exits 0 when all bytes matched
 *   echo --serve      serves until SIGINT or SIGTERM (lk_signal_watch), printing "listening on HOST:PORT"
 */
#include "loopkit.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNECTIONS 50
#define MESSAGES 20
#define MESSAGE_SIZE 4096

/* An open connection, in the server's list so teardown can free those the peer has not closed yet. */
typedef struct connection {
    struct bufferevent *bev;
    struct connection *prev, *next;
    struct server *server;
} connection_t;

typedef struct server {
    lk_loop *loop;
    connection_t *connections;
    int open_connections;
    unsigned long long echoed_bytes;
    unsigned long long ticks;        /* the repeating LoopKit timer */
    unsigned long long queued_jobs;  /* LoopKit jobs queued by libevent callbacks */
} server_t;

static void close_connection(connection_t *connection) {
    server_t *server = connection->server;
    if (connection->prev) connection->prev->next = connection->next;
    else server->connections = connection->next;
    if (connection->next) connection->next->prev = connection->prev;
    server->open_connections--;
    bufferevent_free(connection->bev);
    free(connection);
}

/* ---- The server: libevent's listener and bufferevents on the LoopKit loop's base ------------------- */

static void count_job(void *ctx) { ((server_t *)ctx)->queued_jobs++; }

static void echo_read(struct bufferevent *bev, void *ctx) {
    server_t *server = ((connection_t *)ctx)->server;
    struct evbuffer *input = bufferevent_get_input(bev);
    server->echoed_bytes += evbuffer_get_length(input);
    evbuffer_add_buffer(bufferevent_get_output(bev), input); /* moves the chains: no copy */
    lk_loop_enqueue(server->loop, count_job, server);        /* LoopKit work from a libevent callback */
}

static void echo_event(struct bufferevent *bev, short events, void *ctx) {
    (void)bev;
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) close_connection(ctx);
}

static void accepted(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address, int length,
                     void *ctx) {
    (void)address;
    (void)length;
    server_t *server = ctx;
    connection_t *connection = calloc(1, sizeof *connection);
    if (connection == NULL) {
        close(fd);
        return;
    }
    connection->bev = bufferevent_socket_new(evconnlistener_get_base(listener), fd, BEV_OPT_CLOSE_ON_FREE);
    connection->server = server;
    connection->next = server->connections;
    if (server->connections) server->connections->prev = connection;
    server->connections = connection;
    bufferevent_setcb(connection->bev, echo_read, NULL, echo_event, connection);
    bufferevent_enable(connection->bev, EV_READ | EV_WRITE);
    server->open_connections++;
}

static void tick(void *ctx) { ((server_t *)ctx)->ticks++; }

static void stop_on_signal(void *ctx, int signum) {
    (void)signum;
    lk_loop_stop(((server_t *)ctx)->loop);
}

/* ---- The self-test's client, on its own thread with blocking sockets ------------------------------- */

typedef struct {
    lk_loop *loop;
    int port;
    int mismatches;
    unsigned long long bytes;
} client_t;

static int read_fully(int fd, unsigned char *buffer, size_t size) {
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buffer + got, size - got);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return 0;
}

static void *client_main(void *arg) {
    client_t *client = arg;
    static unsigned char out[MESSAGE_SIZE], in[MESSAGE_SIZE];
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)client->port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    for (int c = 0; c < CONNECTIONS; c++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
            client->mismatches++;
            close(fd);
            continue;
        }
        for (int m = 0; m < MESSAGES; m++) {
            for (size_t i = 0; i < MESSAGE_SIZE; i++) out[i] = (unsigned char)(c * 31 + m * 7 + i);
            if (write(fd, out, MESSAGE_SIZE) != MESSAGE_SIZE || read_fully(fd, in, MESSAGE_SIZE) != 0 ||
                memcmp(in, out, MESSAGE_SIZE) != 0) {
                client->mismatches++;
                break;
            }
            client->bytes += MESSAGE_SIZE;
        }
        close(fd);
    }
    lk_loop_stop(client->loop); /* [any thread] */
    return NULL;
}

/* ---- main ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    int serve = argc > 1 && strcmp(argv[1], "--serve") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    server_t server = {0};
    int status = lk_loop_create(&server.loop);
    if (status != LK_OK) {
        fprintf(stderr, "lk_loop_create: %s\n", lk_strerror(status));
        return 1;
    }
    struct event_base *base = lk_loop_event_base(server.loop);

    struct sockaddr_in bind_address = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &bind_address.sin_addr);
    struct evconnlistener *listener =
        evconnlistener_new_bind(base, accepted, &server, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
                                (struct sockaddr *)&bind_address, sizeof bind_address);
    if (listener == NULL) {
        perror("evconnlistener_new_bind");
        lk_loop_destroy(server.loop);
        return 1;
    }
    struct sockaddr_in bound;
    socklen_t bound_length = sizeof bound;
    getsockname(evconnlistener_get_fd(listener), (struct sockaddr *)&bound, &bound_length);
    int port = ntohs(bound.sin_port);

    lk_timer *timer = NULL;
    lk_timer_start(server.loop, 1000000, 1000000, tick, &server, &timer); /* every 1 ms, LoopKit's own */

    lk_signal *sigint = NULL, *sigterm = NULL;
    pthread_t client_thread;
    client_t client = {server.loop, port, 0, 0};
    if (serve) {
        lk_signal_watch(server.loop, SIGINT, stop_on_signal, &server, &sigint);
        lk_signal_watch(server.loop, SIGTERM, stop_on_signal, &server, &sigterm);
        printf("listening on 127.0.0.1:%d\n", port);
    } else {
        pthread_create(&client_thread, NULL, client_main, &client);
    }

    status = lk_loop_run(server.loop); /* until the client (or a signal) stops it */
    if (!serve) pthread_join(client_thread, NULL);

    evconnlistener_free(listener);
    lk_timer_cancel(timer);
    if (sigint) lk_signal_cancel(sigint);
    if (sigterm) lk_signal_cancel(sigterm);
    /* Connections whose close the loop had not seen yet, before the loop (and its base) goes. */
    while (server.connections) close_connection(server.connections);
    lk_loop_destroy(server.loop);

    printf("echo: %llu bytes echoed over %d connections, %llu LoopKit jobs queued by libevent callbacks, "
           "%llu timer ticks on the same loop\n",
           server.echoed_bytes, serve ? 0 : CONNECTIONS, server.queued_jobs, server.ticks);
    if (serve) return status == LK_OK ? 0 : 1;
    int ok = status == LK_OK && client.mismatches == 0 &&
             client.bytes == (unsigned long long)CONNECTIONS * MESSAGES * MESSAGE_SIZE &&
             server.echoed_bytes == client.bytes && server.queued_jobs > 0;
    printf("echo: %s\n", ok ? "every byte came back" : "MISMATCH");
    return ok ? 0 : 1;
}
