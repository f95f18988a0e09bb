#ifndef LOOPKIT_CBROTLI_SHIM_H
#define LOOPKIT_CBROTLI_SHIM_H

/* Brotli (Debian's libbrotli-dev): the `br` content coding of LoopKitHTTP's response compression and
 * request decompression. Only LoopKitHTTP's Encoding/HTTPContentCoders.swift imports it. */
#include <brotli/encode.h>
#include <brotli/decode.h>

#endif
