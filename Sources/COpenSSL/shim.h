#ifndef LOOPKIT_COPENSSL_SHIM_H
#define LOOPKIT_COPENSSL_SHIM_H

/* OpenSSL 3 (Debian's libssl-dev): TLS for LoopKitNet's connections, the digests LoopDemo's /upload
 * reports and the WebSocket handshake's SHA-1. Only LoopKitNet's Internal/OpenSSL.swift, LoopDemoKit's one
 * digest file and LoopKitHTTP's WebSocket/WebSocketHandshake.swift import it.
 * The static inline functions stand in for OpenSSL's function-like macros, which Swift cannot call. */
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>

static inline long loopkit_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
/* No renegotiation (TLS 1.2) or compression; the server's cipher order; a peer that closes without
 * close_notify reads as end of file. */
static inline uint64_t loopkit_SSL_CTX_set_safe_options(SSL_CTX *ctx) {
    return SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF
                                    | SSL_OP_CIPHER_SERVER_PREFERENCE);
}
static inline long loopkit_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
/* Read ahead: one read takes what the socket holds (several records), not a record's header and then its body. */
static inline void loopkit_SSL_CTX_set_read_ahead(SSL_CTX *ctx) { SSL_CTX_set_read_ahead(ctx, 1); }
static inline long loopkit_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long loopkit_SSL_CTX_add_extra_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return SSL_CTX_add_extra_chain_cert(ctx, x509);
}
static inline long loopkit_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

/* The retry flags of a BIO of LoopKit's own (TLS over an in-memory transport). */
static inline void loopkit_BIO_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }
static inline void loopkit_BIO_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void loopkit_BIO_set_retry_write(BIO *bio) { BIO_set_retry_write(bio); }

#endif
