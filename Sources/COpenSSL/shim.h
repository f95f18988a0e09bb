#ifndef LOOPKIT_COPENSSL_SHIM_H
#define LOOPKIT_COPENSSL_SHIM_H

/* OpenSSL 3 (Debian's libssl-dev): the digests LoopDemo's /upload reports, and the TLS of the
 * connection layer. Only a target's Internal/ folder (or LoopDemoKit's one digest file) imports it. */
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/err.h>

#endif
