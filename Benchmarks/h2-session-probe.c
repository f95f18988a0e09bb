// What one idle nghttp2 server session holds, without LoopKit (Benchmarks/RESULTS.md, memory per idle h2c
// connection): N sessions made with LoopKitHTTP's options and settings (no automatic WINDOW_UPDATE; 100 streams,
// a 64 KiB stream window, a 1 MiB connection window, 16 KiB frames, a 64 KiB header list), each fed a client's
// preface, SETTINGS and one GET /hello (made by an nghttp2 client session), answered with a 13-byte body, then the
// ACK of its SETTINGS; no I/O. Prints the heap in use (mallinfo2) and the RSS growth per session.
//
//   cc -O2 -o /tmp/h2-session-probe Benchmarks/h2-session-probe.c -lnghttp2 && /tmp/h2-session-probe 10000
#include <malloc.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV(name, value) {(uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, sizeof(value) - 1, NGHTTP2_NV_FLAG_NONE}

/// The process's resident set size, in KiB.
static long rss_kib(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (fgets(line, sizeof line, status)) {
        if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
    }
    fclose(status);
    return kib;
}

/// The response body: "Hello, World!", then the end of the stream.
static ssize_t read_body(nghttp2_session *session, int32_t stream, uint8_t *buffer, size_t length, uint32_t *flags,
                         nghttp2_data_source *source, void *user) {
    memcpy(buffer, "Hello, World!", 13);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 13;
}

/// A request's end: answer it as LoopDemo's /hello does (status, content type, date).
static int frame_received(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        nghttp2_nv fields[] = {NV(":status", "200"), NV("content-type", "text/plain"), NV("date", "Wed, 02 Dec 2026 16:00:00 GMT")};
        nghttp2_data_provider body = {.read_callback = read_body};
        nghttp2_submit_response(session, frame->hd.stream_id, fields, 3, &body);
    }
    return 0;
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 10000;

    // The client's bytes, made once: the preface, SETTINGS, HEADERS of GET /hello with END_STREAM.
    nghttp2_session_callbacks *client_callbacks;
    nghttp2_session_callbacks_new(&client_callbacks);
    nghttp2_session *client;
    nghttp2_session_client_new(&client, client_callbacks, NULL);
    nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, NULL, 0);
    nghttp2_nv request[] = {NV(":method", "GET"), NV(":scheme", "http"), NV(":authority", "127.0.0.1"), NV(":path", "/hello")};
    nghttp2_submit_request(client, NULL, request, 4, NULL, NULL);
    uint8_t input[4096];
    size_t input_length = 0;
    const uint8_t *data;
    ssize_t length;
    while ((length = nghttp2_session_mem_send(client, &data)) > 0) {
        memcpy(input + input_length, data, (size_t)length);
        input_length += (size_t)length;
    }
    const uint8_t settings_ack[9] = {0, 0, 0, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, 0, 0, 0};

    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, frame_received);
    nghttp2_option *options;
    nghttp2_option_new(&options);
    nghttp2_option_set_no_auto_window_update(options, 1);
    nghttp2_session **sessions = calloc((size_t)count, sizeof *sessions);

    struct mallinfo2 heap_before = mallinfo2();
    long rss_before = rss_kib();
    for (int i = 0; i < count; i++) {
        nghttp2_session_server_new2(&sessions[i], callbacks, NULL, options);
        nghttp2_settings_entry settings[] = {
            {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65536},
            {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 16384}, {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 65536}};
        nghttp2_submit_settings(sessions[i], NGHTTP2_FLAG_NONE, settings, 4);
        nghttp2_session_set_local_window_size(sessions[i], NGHTTP2_FLAG_NONE, 0, 1 << 20);
        nghttp2_session_mem_recv(sessions[i], input, input_length);
        while (nghttp2_session_mem_send(sessions[i], &data) > 0) {}
        nghttp2_session_mem_recv(sessions[i], settings_ack, sizeof settings_ack);
        while (nghttp2_session_mem_send(sessions[i], &data) > 0) {}
    }
    struct mallinfo2 heap_after = mallinfo2();
    long rss_after = rss_kib();
    printf("%d sessions: heap in use %.2f KiB each, RSS %.2f KiB each\n", count,
           (double)(heap_after.uordblks - heap_before.uordblks) / count / 1024, (double)(rss_after - rss_before) / count);
    return 0;
}
