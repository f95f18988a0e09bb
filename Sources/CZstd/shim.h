#ifndef LOOPKIT_CZSTD_SHIM_H
#define LOOPKIT_CZSTD_SHIM_H

/* Zstandard (Debian's libzstd-dev): the `zstd` content coding of LoopKitHTTP's response compression and
 * request decompression. Only LoopKitHTTP's Encoding/HTTPContentCoders.swift imports it. */
#include <zstd.h>

#endif
