/* OpenSSL's EVP digests for the NIO peer's streamed /upload: the same SHA-256 work LoopDemo's does. */
#include <openssl/evp.h>
