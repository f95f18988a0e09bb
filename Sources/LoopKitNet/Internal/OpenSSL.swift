import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one file of LoopKitNet that calls OpenSSL (Debian's libssl-dev, OpenSSL 3). No TLS is written here:
// OpenSSL does the protocol; this file turns its handles into Swift objects, its `-1/0/1` returns and
// `SSL_get_error` codes into Swift values, and its error queue into messages.

/// OpenSSL's error queue as text.
enum OpenSSLErrors {
    /// Every error queued on this thread, oldest first, joined with "; " (the queue is emptied).
    static func drain(or fallback: String) -> String {
        var messages: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let code = ERR_get_error(), code != 0 {
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? fallback : messages.joined(separator: "; ")
    }
}

/// An `SSL_CTX` built from a ``TLSConfiguration``: immutable once built (a reload builds a new one).
///
/// Unchecked `Sendable`: OpenSSL's contexts are safe to share between threads once configured, and
/// nothing here changes after `init`.
final class SSLContextHandle: @unchecked Sendable {
    let raw: OpaquePointer
    let role: TLSConfiguration.Role
    let verification: TLSConfiguration.Verification
    let handshakeTimeout: Duration
    /// The ALPN protocols in wire format (length-prefixed), for the server's selection callback.
    private let alpnWire: [UInt8]

    /// Builds and checks the context. The corresponding OpenSSL calls are `SSL_CTX_new`,
    /// `SSL_CTX_use_certificate_chain_file` (or the PEM readers), `SSL_CTX_use_PrivateKey`,
    /// `SSL_CTX_check_private_key`, `SSL_CTX_set_verify` and `SSL_CTX_set_min_proto_version`.
    init(_ configuration: TLSConfiguration) throws(NetError) {
        ERR_clear_error()
        let method = configuration.role == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else { throw .tls("SSL_CTX_new: \(OpenSSLErrors.drain(or: "out of memory"))") }
        raw = context
        role = configuration.role
        verification = configuration.verification
        handshakeTimeout = configuration.handshakeTimeout
        alpnWire = configuration.applicationProtocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        try configure(configuration)  // a failure frees the context in deinit (every property is set)
    }

    deinit { SSL_CTX_free(raw) }

    private func configure(_ configuration: TLSConfiguration) throws(NetError) {
        let version = configuration.minimumVersion == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION
        guard loopkit_SSL_CTX_set_min_proto_version(raw, version) == 1 else { throw .tls("cannot set the minimum version") }
        // No renegotiation (TLS 1.2), no compression; a peer that closes without close_notify reads as end of file.
        _ = loopkit_SSL_CTX_set_safe_options(raw)
        // Writes may be partial and retried from a moved buffer: the connection's queue hands out slices.
        _ = loopkit_SSL_CTX_set_mode(raw, Int(SSL_MODE_ENABLE_PARTIAL_WRITE) | Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
                                          | Int(SSL_MODE_RELEASE_BUFFERS))
        if let ciphers = configuration.cipherList {
            guard SSL_CTX_set_cipher_list(raw, ciphers) == 1 else {
                throw .tls("cipher list '\(ciphers)': \(OpenSSLErrors.drain(or: "no cipher matched"))")
            }
        }
        if let chain = configuration.certificateChain { try useCertificateChain(chain) }
        if let key = configuration.privateKey {
            try usePrivateKey(key)
            guard SSL_CTX_check_private_key(raw) == 1 else {
                throw .tls("the private key does not match the certificate: \(OpenSSLErrors.drain(or: "mismatch"))")
            }
        }
        if configuration.role == .server, configuration.certificateChain == nil || configuration.privateKey == nil {
            throw .tls("a TLS server needs a certificate chain and a private key")
        }
        try useTrustRoots(configuration.trustRoots, needed: configuration.verification != .insecureNoVerification
                                                            && configuration.verification != .none)
        switch (configuration.role, configuration.verification) {
        case (.client, .full), (.client, .optional): SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nil)
        case (.server, .full): SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        case (.server, .optional): SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nil)
        default: SSL_CTX_set_verify(raw, SSL_VERIFY_NONE, nil)
        }
        if !alpnWire.isEmpty {
            if configuration.role == .client {
                guard alpnWire.withUnsafeBufferPointer({ SSL_CTX_set_alpn_protos(raw, $0.baseAddress, UInt32($0.count)) }) == 0 else {
                    throw .tls("cannot set ALPN protocols")
                }
            } else {
                SSL_CTX_set_alpn_select_cb(raw, { _, out, outLength, offered, offeredLength, context in
                    let handle = Unmanaged<SSLContextHandle>.fromOpaque(context!).takeUnretainedValue()
                    return handle.selectProtocol(out, outLength, offered, offeredLength)
                }, Unmanaged.passUnretained(self).toOpaque())
            }
        }
    }

    /// The server's ALPN choice: its first protocol the client offers; none in common goes on without ALPN.
    private func selectProtocol(
        _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
        _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32
    ) -> Int32 {
        alpnWire.withUnsafeBufferPointer { ours in
            var selected: UnsafeMutablePointer<UInt8>?
            var length: UInt8 = 0
            let result = SSL_select_next_proto(&selected, &length, ours.baseAddress, UInt32(ours.count), offered, offeredLength)
            guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
            // `selected` points into `offered` or into `alpnWire`, both alive for the handshake.
            out?.pointee = UnsafePointer(selected)
            outLength?.pointee = length
            return SSL_TLSEXT_ERR_OK
        }
    }

    private func useCertificateChain(_ source: TLSConfiguration.Source) throws(NetError) {
        switch source {
        case .file(let path):
            guard SSL_CTX_use_certificate_chain_file(raw, path) == 1 else {
                throw .tls("certificate chain \(path): \(OpenSSLErrors.drain(or: "unreadable"))")
            }
        case .pem(let bytes):
            let certificates = try Self.readCertificates(bytes)
            guard let leaf = certificates.first else { throw .tls("the certificate chain holds no certificate") }
            guard SSL_CTX_use_certificate(raw, leaf) == 1 else {
                certificates.forEach { X509_free($0) }
                throw .tls("certificate: \(OpenSSLErrors.drain(or: "refused"))")
            }
            X509_free(leaf)
            for intermediate in certificates.dropFirst() {  // ownership passes to the context
                guard loopkit_SSL_CTX_add_extra_chain_cert(raw, intermediate) == 1 else {
                    X509_free(intermediate)
                    throw .tls("intermediate certificate: \(OpenSSLErrors.drain(or: "refused"))")
                }
            }
        }
    }

    private func usePrivateKey(_ source: TLSConfiguration.Source) throws(NetError) {
        switch source {
        case .file(let path):
            guard SSL_CTX_use_PrivateKey_file(raw, path, SSL_FILETYPE_PEM) == 1 else {
                throw .tls("private key \(path): \(OpenSSLErrors.drain(or: "unreadable"))")
            }
        case .pem(let bytes):
            let key = bytes.withUnsafeBytes { raw -> OpaquePointer? in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
                defer { BIO_free(bio) }
                return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
            }
            guard let key else { throw .tls("private key: \(OpenSSLErrors.drain(or: "not a PEM private key"))") }
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_PrivateKey(raw, key) == 1 else { throw .tls("private key: \(OpenSSLErrors.drain(or: "refused"))") }
        }
    }

    private func useTrustRoots(_ roots: TLSConfiguration.TrustRoots, needed: Bool) throws(NetError) {
        switch roots {
        case .system:
            guard SSL_CTX_set_default_verify_paths(raw) == 1 || !needed else {
                throw .tls("the system trust store: \(OpenSSLErrors.drain(or: "unreadable"))")
            }
        case .certificates(.file(let path)):
            guard SSL_CTX_load_verify_locations(raw, path, nil) == 1 else {
                throw .tls("trust roots \(path): \(OpenSSLErrors.drain(or: "unreadable"))")
            }
        case .certificates(.pem(let bytes)):
            let store = SSL_CTX_get_cert_store(raw)
            let certificates = try Self.readCertificates(bytes)
            defer { certificates.forEach { X509_free($0) } }
            guard !certificates.isEmpty else { throw .tls("the trust roots hold no certificate") }
            for certificate in certificates where X509_STORE_add_cert(store, certificate) != 1 {
                throw .tls("trust root: \(OpenSSLErrors.drain(or: "refused"))")
            }
        }
    }

    /// The certificates of a PEM text, in order (each to be freed by the caller).
    private static func readCertificates(_ bytes: [UInt8]) throws(NetError) -> [OpaquePointer] {
        var certificates: [OpaquePointer] = []
        bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { certificates.append(certificate) }
        }
        ERR_clear_error()  // the reader ends on "no start line": not an error
        return certificates
    }
}

/// One connection's `SSL`, over its non-blocking socket. Loop-confined, like its connection.
final class TLSSession {
    private let ssl: OpaquePointer
    /// Kept alive while the session is (its ALPN callback and settings live there).
    let context: SSLContextHandle

    /// What one step of the handshake did.
    enum HandshakeStep {
        case done
        case wantRead
        case wantWrite
        case failed(String)
    }

    /// A session on `fd`; a client's names `serverName` (SNI, and the name its certificate must match).
    /// The corresponding OpenSSL calls are `SSL_new`, `SSL_set_fd`, `SSL_set_tlsext_host_name` and
    /// `SSL_set1_host`.
    init(context: SSLContextHandle, fd: Int32, serverName: String?) throws(NetError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.raw) else { throw .tls("SSL_new: \(OpenSSLErrors.drain(or: "out of memory"))") }
        self.ssl = ssl
        self.context = context
        guard SSL_set_fd(ssl, fd) == 1 else { throw .tls("SSL_set_fd: \(OpenSSLErrors.drain(or: "refused"))") }
        if context.role == .server {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        if let serverName {
            let isAddress: Bool
            do {
                _ = try SocketAddress(ipAddress: serverName, port: 0)
                isAddress = true
            } catch {
                isAddress = false  // a host name, not a numeric address
            }
            if !isAddress { _ = loopkit_SSL_set_tlsext_host_name(ssl, serverName) }  // SNI carries names only
            if context.verification == .full {
                let checked = isAddress ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
                                        : SSL_set1_host(ssl, serverName)
                guard checked == 1 else { throw .tls("cannot check the name '\(serverName)'") }
            }
        }
    }

    deinit { SSL_free(ssl) }

    /// Empties this thread's OpenSSL error queue, as `SSL_get_error` needs after a call, looking first:
    /// `ERR_clear_error` walks all its slots (~840 instructions in OpenSSL 3.0), and the queue is almost
    /// always empty already.
    @inline(__always)
    private func clearErrorQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// Whether the handshake has finished.
    var isHandshakeDone: Bool { SSL_is_init_finished(ssl) == 1 }

    /// Drives the handshake as far as the socket allows. The corresponding OpenSSL call is `SSL_do_handshake`.
    func handshake() -> HandshakeStep {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: return .failed(failureText(result, during: "handshake"))
        }
    }

    /// Decrypts up to `count` bytes into `buffer`. The corresponding OpenSSL call is `SSL_read`.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer {
        clearErrorQueue()
        let result = SSL_read(ssl, buffer, Int32(min(count, Int(Int32.max))))
        if result > 0 { return .moved(Int(result)) }
        return transferFailure(result, during: "read")
    }

    /// Encrypts and sends the `count` buffers of `vectors` in order, stopping at the first the socket does
    /// not take whole. The corresponding OpenSSL call is `SSL_write`.
    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer {
        var sent = 0
        for index in 0..<count {
            let vector = vectors[index]
            guard vector.iov_len > 0 else { continue }
            clearErrorQueue()
            let result = SSL_write(ssl, vector.iov_base, Int32(min(vector.iov_len, Int(Int32.max))))
            if result > 0 {
                sent += Int(result)
                if Int(result) < vector.iov_len { break }
                continue
            }
            if sent > 0 { break }
            return transferFailure(result, during: "write")
        }
        return sent > 0 ? .moved(sent) : .wouldBlock
    }

    /// Decrypted bytes OpenSSL holds that the socket will not announce again.
    var hasPendingBytes: Bool { SSL_pending(ssl) > 0 }

    /// Sends `close_notify`, without waiting for the peer's. The corresponding OpenSSL call is `SSL_shutdown`.
    func sendCloseNotify() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The ALPN protocol the handshake chose, if any. The corresponding OpenSSL call is `SSL_get0_alpn_selected`.
    var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The protocol version agreed (`TLSv1.3`). The corresponding OpenSSL call is `SSL_get_version`.
    var version: String { String(cString: SSL_get_version(ssl)) }

    /// The peer's certificate, DER-encoded, if it sent one. The corresponding OpenSSL calls are
    /// `SSL_get1_peer_certificate` and `i2d_X509`.
    var peerCertificate: [UInt8]? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509(certificate, &cursor)
        }
        return der
    }

    /// The peer certificate's subject, one line (`CN=client`), if it sent one.
    var peerSubject: String? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        guard let line = X509_NAME_oneline(X509_get_subject_name(certificate), nil, 0) else { return nil }
        defer { CRYPTO_free(line, #fileID, #line) }
        return String(cString: line)
    }

    private func transferFailure(_ result: Int32, during operation: String) -> Socket.Transfer {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_ZERO_RETURN:
            return .endOfFile
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wouldBlock
        case SSL_ERROR_SYSCALL:
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .wouldBlock }
            if code == 0 { return .endOfFile }
            return .failed(CloseReason(errno: code))
        default:
            return .failed(.tls(failureText(result, during: operation)))
        }
    }

    /// OpenSSL's reason, with the certificate check's verdict when that is what failed.
    private func failureText(_ result: Int32, during operation: String) -> String {
        let verdict = SSL_get_verify_result(ssl)
        let queued = OpenSSLErrors.drain(or: "TLS \(operation) failed (SSL_get_error \(SSL_get_error(ssl, result)), errno \(errno))")
        guard verdict != X509_V_OK else { return queued }
        return "certificate verify failed: \(String(cString: X509_verify_cert_error_string(Int(verdict))))"
    }
}
