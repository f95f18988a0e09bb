import COpenSSL
import LoopKit
import LoopKitNet

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one file of LoopKitTLS that calls OpenSSL (Debian's libssl-dev, OpenSSL 3). No TLS is written here:
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
final class SSLContextHandle: @unchecked Sendable {  // an SSL_CTX: shareable once configured, never changed after
    let raw: OpaquePointer
    let role: TLSConfiguration.Role
    let verification: TLSConfiguration.Verification
    let handshakeTimeout: Duration
    /// The configuration's ALPN protocols, most preferred first.
    let applicationProtocols: ALPNProtocols

    /// Builds and checks the context. The corresponding OpenSSL calls are `SSL_CTX_new`,
    /// `SSL_CTX_use_certificate_chain_file` (or the PEM readers), `SSL_CTX_use_PrivateKey`,
    /// `SSL_CTX_check_private_key`, `SSL_CTX_set_verify` and `SSL_CTX_set_min_proto_version`.
    init(_ configuration: TLSConfiguration) throws(NetError) {
        let protocols = try ALPNProtocols(configuration.applicationProtocols)
        ERR_clear_error()
        let method = configuration.role == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else { throw .tls("SSL_CTX_new: \(OpenSSLErrors.drain(or: "out of memory"))") }
        raw = context
        role = configuration.role
        verification = configuration.verification
        handshakeTimeout = configuration.handshakeTimeout
        applicationProtocols = protocols
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
        // Read ahead, as nginx does: without it OpenSSL reads each record in two calls (its 5-byte header,
        // then its body), 9 reads for a handshake and one request against 5. What it reads past a record
        // stays in its buffer, unannounced by the socket: `hasPendingBytes` tells it (`SSL_has_pending`).
        loopkit_SSL_CTX_set_read_ahead(raw)
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
        if configuration.role == .client {
            if !applicationProtocols.isEmpty {
                let wire = applicationProtocols.wire
                guard SSL_CTX_set_alpn_protos(raw, wire.baseAddress, UInt32(wire.count)) == 0 else {
                    throw .tls("cannot offer the ALPN protocols \(applicationProtocols.names): \(OpenSSLErrors.drain(or: "refused"))")
                }
            }
        } else {
            // Always: a session may bring protocols of its own (TLSContext.withApplicationProtocols).
            SSL_CTX_set_alpn_select_cb(raw, { ssl, out, outLength, offered, offeredLength, context in
                let handle = Unmanaged<SSLContextHandle>.fromOpaque(context!).takeUnretainedValue()
                return handle.selectProtocol(ssl, out, outLength, offered, offeredLength)
            }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    /// The server's ALPN choice (the corresponding OpenSSL call is `SSL_select_next_proto`): its first
    /// protocol the client offers. The session's protocols when it has its own, else the configuration's;
    /// with none, the handshake goes on without ALPN. A client that offers only protocols the server does
    /// not speak is refused with a `no_application_protocol` alert (RFC 7301 §3.2, as nginx does).
    private func selectProtocol(
        _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
        _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32
    ) -> Int32 {
        let session = SSL_get_ex_data(ssl, 0).map { Unmanaged<TLSSession>.fromOpaque($0).takeUnretainedValue() }
        let ours = session?.applicationProtocols ?? applicationProtocols
        guard !ours.isEmpty else { return SSL_TLSEXT_ERR_NOACK }
        var selected: UnsafeMutablePointer<UInt8>?
        var length: UInt8 = 0
        let result = SSL_select_next_proto(&selected, &length, ours.wire.baseAddress, UInt32(ours.wire.count), offered, offeredLength)
        guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        // `selected` points into `offered` (OpenSSL's) or into `ours` (the session's or this context's,
        // both alive as long as the session): OpenSSL copies it before the handshake goes on.
        out?.pointee = UnsafePointer(selected)
        outLength?.pointee = length
        return SSL_TLSEXT_ERR_OK
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
    private static func readCertificates(_ bytes: Bytes) throws(NetError) -> [OpaquePointer] {
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

/// One record's payload of memory that a loop's TLS sessions gather small writes into, one `write` at a
/// time (OpenSSL encrypts from it during the call and never reads it again: its sessions accept a moved
/// write buffer). Loop-confined: one per loop, made by the loop's first TLS connection.
final class TLSWriteScratch {
    /// The most plaintext one TLS record carries (TLS 1.2 and 1.3), and so what one `SSL_write` sends.
    static let capacity = 16 * 1024
    let base: UnsafeMutableRawPointer

    private init() { base = UnsafeMutableRawPointer.allocate(byteCount: Self.capacity, alignment: 16) }

    deinit { base.deallocate() }

    /// The scratch of `loop`, made the first time. Call on the loop's thread.
    static func of(_ loop: EventLoop) -> TLSWriteScratch {
        loop.localValue(for: ObjectIdentifier(TLSWriteScratch.self)) { TLSWriteScratch() }
    }
}

/// ALPN protocol names, most preferred first, with their wire form (each name's length, then its bytes)
/// at an address that stays put for OpenSSL. Immutable, so unchecked `Sendable` for its buffer.
final class ALPNProtocols: @unchecked Sendable {  // immutable: a buffer written once in init
    /// The names.
    let names: [String]
    /// The wire form; empty for no names.
    let wire: UnsafeBufferPointer<UInt8>

    /// - Throws: ``NetError/tls(_:)`` for a name outside 1 to 255 bytes (RFC 7301 §3.1) or a list longer
    ///   than the extension holds.
    convenience init(_ names: [String]) throws(NetError) {
        for name in names where !(1...255).contains(name.utf8.count) {
            throw .tls("the ALPN protocol name '\(name)' is \(name.utf8.count) bytes; a name is 1 to 255 bytes")
        }
        let length = names.reduce(0) { $0 + 1 + $1.utf8.count }
        guard length <= 65_533 else { throw .tls("the ALPN protocols take \(length) bytes; at most 65,533 fit a ClientHello") }
        self.init(checked: names)
    }

    private init(checked names: [String]) {
        self.names = names
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: names.reduce(0) { $0 + 1 + $1.utf8.count })
        var index = 0
        for name in names {
            buffer[index] = UInt8(name.utf8.count)
            index += 1
            for byte in name.utf8 {
                buffer[index] = byte
                index += 1
            }
        }
        wire = UnsafeBufferPointer(buffer)
    }

    deinit { wire.deallocate() }

    /// Whether there are none.
    var isEmpty: Bool { names.isEmpty }
}

/// One connection's `SSL`, over its non-blocking socket. Loop-confined, like its connection.
final class TLSSession {
    private let ssl: OpaquePointer
    /// Kept alive while the session is (its ALPN callback and settings live there).
    let context: SSLContextHandle
    /// This connection's ALPN protocols in place of its context's, if it has its own: a server's
    /// selection callback reads them, a client offered them.
    let applicationProtocols: ALPNProtocols?
    /// Where small writes are gathered into one record's payload: the loop's, lent for one `write`.
    private let scratch: TLSWriteScratch
    /// The transport a BIO of ours reads and writes (nil over a socket): kept alive with the session.
    private let bioTarget: TransportBIO.Target?
    /// TLS records written (`SSL_write` calls that succeeded: each writes one record).
    private(set) var recordsWritten = 0
    /// Bytes copied into ``scratch`` to share a record with the bytes before or after them.
    private(set) var bytesCoalesced = 0

    /// What the records travel on.
    enum Carrier {
        /// A socket's descriptor, which OpenSSL reads and writes itself.
        case descriptor(Int32)
        /// Any other transport, through a BIO whose reads and writes are the transport's.
        case transport(Transport)
    }

    /// A session over `carrier`; a client's names `serverName` (SNI, and the name its certificate must
    /// match). The corresponding OpenSSL calls are `SSL_new`, `SSL_set_fd` (or `BIO_new` and
    /// `SSL_set_bio`), `SSL_set_tlsext_host_name`, `SSL_set1_host` and, for a client with protocols of its
    /// own, `SSL_set_alpn_protos`.
    init(context: SSLContextHandle, carrier: Carrier, serverName: String?, applicationProtocols: ALPNProtocols?,
         scratch: TLSWriteScratch) throws(NetError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.raw) else { throw .tls("SSL_new: \(OpenSSLErrors.drain(or: "out of memory"))") }
        self.ssl = ssl
        self.context = context
        self.applicationProtocols = applicationProtocols
        self.scratch = scratch
        switch carrier {
        case .descriptor(let fd):
            bioTarget = nil
            guard SSL_set_fd(ssl, fd) == 1 else { throw .tls("SSL_set_fd: \(OpenSSLErrors.drain(or: "refused"))") }
        case .transport(let transport):
            let target = TransportBIO.Target(transport)
            bioTarget = target
            guard let bio = BIO_new(TransportBIO.method.raw) else { throw .tls("BIO_new: \(OpenSSLErrors.drain(or: "out of memory"))") }
            BIO_set_data(bio, Unmanaged.passUnretained(target).toOpaque())
            SSL_set_bio(ssl, bio, bio)  // the session owns the BIO now
        }
        if context.role == .server {
            if applicationProtocols != nil {  // for the context's selection callback (slot 0: app data)
                SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
            }
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        if let applicationProtocols {
            let wire = applicationProtocols.wire
            guard SSL_set_alpn_protos(ssl, wire.baseAddress, UInt32(wire.count)) == 0 else {
                throw .tls("cannot offer the ALPN protocols \(applicationProtocols.names): \(OpenSSLErrors.drain(or: "refused"))")
            }
        }
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

    /// Drives the handshake as far as the socket allows (a transport's ``HandshakeStep``). The
    /// corresponding OpenSSL call is `SSL_do_handshake`.
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

    /// Encrypts and sends the `count` buffers of `vectors` in order, as many records as the socket takes;
    /// returns the bytes sent (the bytes of every record written), or `wouldBlock` when it took none.
    ///
    /// Small buffers share records: runs of them are copied into the loop's scratch, up to one record's
    /// payload (16 KiB), and go out with one `SSL_write`, so a response head and its body make one record
    /// rather than two. A buffer of a record's payload or more is encrypted from its own storage; the
    /// record before it is topped up with its first bytes only when that saves a record. What is copied
    /// depends only on the sizes of the buffers from the first unsent byte on, so a write OpenSSL could not
    /// finish (`SSL_ERROR_WANT_WRITE`) is retried with the same bytes, as it requires, and at least as many.
    /// The corresponding OpenSSL call is `SSL_write` (in partial-write mode: one record per call).
    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer {
        if count == 1 { return write(vectors[0].iov_base, count: vectors[0].iov_len) }  // nothing to gather
        var sent = 0
        var index = 0  // the buffer of the first unsent byte
        var offset = 0  // and that byte's offset in it
        while true {
            while index < count, vectors[index].iov_len <= offset {  // skips empty and finished buffers
                index += 1
                offset = 0
            }
            guard index < count else { break }
            let length = vectors[index].iov_len - offset
            let result: Int32
            let alone = index + 1 == count || length >= TLSWriteScratch.capacity
            let planned = alone ? length : Self.recordPayload(vectors, count, from: index, offset)
            if planned <= length {  // this buffer alone: encrypted where it is
                result = sslWrite(vectors[index].iov_base! + offset, length)
            } else {
                gather(planned, vectors, from: index, offset)
                result = sslWrite(scratch.base, planned)
            }
            guard result > 0 else {
                if sent > 0 { break }
                return transferFailure(result, during: "write")
            }
            recordsWritten &+= 1
            sent += Int(result)
            var moved = Int(result)
            while moved > 0 {  // past the bytes the record took
                let left = vectors[index].iov_len - offset
                if moved < left {
                    offset += moved
                    moved = 0
                } else {
                    moved -= left
                    index += 1
                    offset = 0
                }
            }
        }
        return sent > 0 ? .moved(sent) : .wouldBlock
    }

    /// Encrypts and sends `count` bytes from `base`, as many records as the socket takes.
    private func write(_ base: UnsafeMutableRawPointer?, count: Int) -> Socket.Transfer {
        guard let base, count > 0 else { return .wouldBlock }
        var sent = 0
        repeat {
            let result = sslWrite(base + sent, count - sent)
            guard result > 0 else { return sent > 0 ? .moved(sent) : transferFailure(result, during: "write") }
            recordsWritten &+= 1
            sent += Int(result)
        } while sent < count
        return .moved(sent)
    }

    @inline(__always)
    private func sslWrite(_ base: UnsafeRawPointer, _ count: Int) -> Int32 {
        clearErrorQueue()
        return SSL_write(ssl, base, Int32(min(count, Int(Int32.max))))
    }

    /// The bytes the next record carries when it starts at buffer `index`, offset `offset`, and that
    /// buffer is smaller than a record's payload: whole buffers while they fit, then the first bytes of the
    /// next buffer when that saves a record (its last record alone would not be full: topping this one up
    /// takes that record away). Depends only on the buffers' sizes.
    private static func recordPayload(_ vectors: UnsafePointer<iovec>, _ count: Int, from index: Int, _ offset: Int) -> Int {
        let capacity = TLSWriteScratch.capacity
        var filled = 0
        var index = index
        var offset = offset
        while index < count, filled < capacity {
            let available = vectors[index].iov_len - offset
            let room = capacity - filled
            if available > room {
                let alone = (available + capacity - 1) / capacity  // records it needs by itself
                let toppingUp = (available - room + capacity - 1) / capacity  // after giving `room` to this one
                if toppingUp < alone { filled = capacity }
                break
            }
            filled += available
            index += 1
            offset = 0
        }
        return filled
    }

    /// Copies `total` bytes from buffer `index`, offset `offset` on into the scratch.
    private func gather(_ total: Int, _ vectors: UnsafePointer<iovec>, from index: Int, _ offset: Int) {
        var filled = 0
        var index = index
        var offset = offset
        while filled < total {
            let take = Swift.min(vectors[index].iov_len - offset, total - filled)
            if take > 0 { (scratch.base + filled).copyMemory(from: vectors[index].iov_base! + offset, byteCount: take) }
            filled += take
            index += 1
            offset = 0
        }
        bytesCoalesced &+= total
    }

    /// Bytes OpenSSL holds that the socket will not announce again: decrypted ones, or, read ahead, records
    /// not yet decrypted (which `SSL_pending` does not count). The corresponding OpenSSL call is
    /// `SSL_has_pending`.
    var hasPendingBytes: Bool { SSL_has_pending(ssl) == 1 }

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
    var peerCertificate: Bytes? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return nil }
        return Bytes(unsafeUninitializedCapacity: Int(length)) { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let written = i2d_X509(certificate, &cursor)
            return written > 0 ? Int(written) : 0
        }
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

/// The BIO under a TLS session whose records travel on a transport other than a socket (in memory): its
/// reads and writes are the transport's, with OpenSSL's retry flags for a transport that would block.
enum TransportBIO {
    /// What a BIO's data pointer names: the transport (unretained; the session keeps it alive).
    final class Target {
        let transport: Transport
        init(_ transport: Transport) { self.transport = transport }
    }

    /// The method table, made once and never changed after: read-only to every thread from then on, which
    /// is what its unchecked `Sendable` stands for.
    final class Method: @unchecked Sendable {  // an OpenSSL BIO_METHOD: written once in init, read only after
        let raw: OpaquePointer
        init() {
            raw = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "LoopKit transport")!
            _ = BIO_meth_set_write(raw) { bio, data, length in
                guard let bio, let data, length > 0 else { return 0 }
                loopkit_BIO_clear_retry_flags(bio)
                var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: data), iov_len: Int(length))
                switch TransportBIO.transport(of: bio).write(&vector, count: 1) {
                case .moved(let count):
                    return Int32(count)
                case .wouldBlock:
                    loopkit_BIO_set_retry_write(bio)
                    return -1
                case .endOfFile:
                    errno = EPIPE
                    return -1
                case .failed(let reason):
                    errno = reason.errnoValue  // read back by SSL_ERROR_SYSCALL's handling
                    return -1
                }
            }
            _ = BIO_meth_set_read(raw) { bio, data, length in
                guard let bio, let data, length > 0 else { return 0 }
                loopkit_BIO_clear_retry_flags(bio)
                switch TransportBIO.transport(of: bio).read(into: data, count: Int(length)) {
                case .moved(let count):
                    return Int32(count)
                case .wouldBlock:
                    loopkit_BIO_set_retry_read(bio)
                    return -1
                case .endOfFile:
                    errno = 0
                    return 0
                case .failed(let reason):
                    errno = reason.errnoValue
                    return -1
                }
            }
            _ = BIO_meth_set_ctrl(raw) { _, command, _, _ in command == BIO_CTRL_FLUSH ? 1 : 0 }
            _ = BIO_meth_set_create(raw) { bio in
                BIO_set_init(bio, 1)
                return 1
            }
        }
    }

    static let method = Method()

    /// The transport of a BIO of ours.
    static func transport(of bio: OpaquePointer) -> Transport {
        Unmanaged<Target>.fromOpaque(BIO_get_data(bio)).takeUnretainedValue().transport
    }
}

extension CloseReason {
    /// The `errno` a transport's failure stands for, as OpenSSL's caller reads it back.
    fileprivate var errnoValue: Int32 {
        switch self {
        case .reset: ECONNRESET
        case .brokenPipe: EPIPE
        case .failed(let code): code
        default: EIO
        }
    }
}
