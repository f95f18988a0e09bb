#ifndef LOOPKIT_CZLIB_SHIM_H
#define LOOPKIT_CZLIB_SHIM_H

/* zlib (Debian's zlib1g-dev): permessage-deflate (RFC 7692) for LoopKitHTTP's WebSockets. Only
 * LoopKitHTTP's WebSocket/WebSocketDeflate.swift imports it. The static inline functions stand in for
 * zlib's deflateInit2 and inflateInit2, function-like macros Swift cannot call. */
#include <zlib.h>

static inline int loopkit_deflateInit2(z_streamp stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
static inline int loopkit_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

#endif
