#ifndef LOOPKIT_CCURL_SHIM_H
#define LOOPKIT_CCURL_SHIM_H

/* libcurl (Debian's libcurl4-openssl-dev): LoopKitHTTPClient's engine, its multi-socket interface driven
 * by the loop's watches and timers. Only LoopKitHTTPClient's Internal/Curl.swift imports it.
 *
 * curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these
 * static inline wrappers fix the type of the one argument. */
#include <curl/curl.h>

typedef size_t (*lk_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*lk_curl_socket_callback)(CURL *easy, curl_socket_t fd, int what, void *context, void *socket_context);
typedef int (*lk_curl_seek_callback)(void *context, curl_off_t offset, int origin);
typedef int (*lk_curl_timer_callback)(CURLM *multi, long timeout_ms, void *context);
typedef int (*lk_curl_prereq_callback)(void *context, char *primary_ip, char *local_ip, int primary_port, int local_port);
typedef curl_socket_t (*lk_curl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
typedef int (*lk_curl_closesocket_callback)(void *context, curl_socket_t fd);

static inline CURLcode lk_curl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode lk_curl_easy_setopt_off(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode lk_curl_easy_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode lk_curl_easy_setopt_data_callback(CURL *easy, CURLoption option, lk_curl_data_callback value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode lk_curl_easy_setopt_seek_callback(CURL *easy, lk_curl_seek_callback value) {
    return curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, value);
}
static inline CURLcode lk_curl_easy_setopt_prereq_callback(CURL *easy, lk_curl_prereq_callback value) {
    return curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, value);
}
static inline CURLcode lk_curl_easy_setopt_opensocket_callback(CURL *easy, lk_curl_opensocket_callback value) {
    return curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, value);
}
static inline CURLcode lk_curl_easy_setopt_closesocket_callback(CURL *easy, lk_curl_closesocket_callback value) {
    return curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, value);
}
static inline CURLMcode lk_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode lk_curl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode lk_curl_multi_setopt_socket_callback(CURLM *multi, lk_curl_socket_callback value) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, value);
}
static inline CURLMcode lk_curl_multi_setopt_timer_callback(CURLM *multi, lk_curl_timer_callback value) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, value);
}
static inline CURLcode lk_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode lk_curl_easy_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode lk_curl_easy_getinfo_string(CURL *easy, CURLINFO info, char **value) {
    return curl_easy_getinfo(easy, info, value);
}

#endif
