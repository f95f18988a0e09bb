import COpenSSL

/// A SHA-256 digest computed incrementally with OpenSSL's EVP interface (no hand-written hashing).
///
/// A value with a handle inside: use it from one thread at a time (the loop of the request it hashes).
struct SHA256Digest: ~Copyable {
    private let context: OpaquePointer

    /// A fresh digest. The corresponding OpenSSL calls are `EVP_MD_CTX_new` and `EVP_DigestInit_ex`.
    init() {
        context = EVP_MD_CTX_new()!
        precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "OpenSSL refused SHA-256")
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds `bytes`. The corresponding OpenSSL call is `EVP_DigestUpdate`.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    /// The digest of everything added, in lowercase hex. The corresponding OpenSSL call is `EVP_DigestFinal_ex`.
    consuming func hexDigest() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(context, &digest, &length)
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(Int(length) * 2)
        for byte in digest[..<Int(length)] {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
