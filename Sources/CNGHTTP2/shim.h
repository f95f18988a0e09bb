#ifndef LOOPKIT_CNGHTTP2_SHIM_H
#define LOOPKIT_CNGHTTP2_SHIM_H

/* nghttp2 (Debian's libnghttp2-dev): HTTP/2 framing, HPACK, flow control and the protocol's state
 * machines for LoopKitHTTP's HTTP/2 codec. nghttp2 does no I/O: the codec feeds it the connection's bytes
 * and writes what it serialises. Only LoopKitHTTP's HTTP2/NGHTTP2Session.swift imports it, and
 * LoopKitHTTPTesting's HTTP2ClientSession.swift (the HTTP/2 test modes' client session). */
#include <nghttp2/nghttp2.h>

#endif
