#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The address of a socket's end: an IPv4 or IPv6 address and port, or a Unix-domain socket path.
///
/// ```swift
/// let address = try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
/// print(address)          // 127.0.0.1:8080
/// ```
///
/// A plain value; safe from any thread.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The kinds of address.
    public enum Family: Sendable, Hashable {
        /// IPv4 (`AF_INET`).
        case ipv4
        /// IPv6 (`AF_INET6`).
        case ipv6
        /// A Unix-domain socket (`AF_UNIX`).
        case unix
    }

    /// The address family.
    public let family: Family
    /// The numeric host (`127.0.0.1`, `::1`), or the socket path for a Unix-domain address.
    public let host: String
    /// The port; 0 for a Unix-domain address.
    public let port: Int

    /// Parses a numeric IPv4 or IPv6 address (no name resolution).
    ///
    /// - Parameters:
    ///   - ipAddress: Such as `127.0.0.1`, `0.0.0.0`, `::1` or `::`.
    ///   - port: 0 to 65535; 0 lets the kernel pick a free port when binding.
    /// - Throws: ``NetError/invalidAddress(_:)`` when `ipAddress` is not a numeric address or the port
    ///   is out of range.
    public init(ipAddress: String, port: Int) throws(NetError) {
        guard (0...65_535).contains(port) else { throw .invalidAddress("port \(port) is out of range 0...65535") }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, ipAddress, &v4) == 1 {
            family = .ipv4
        } else if inet_pton(AF_INET6, ipAddress, &v6) == 1 {
            family = .ipv6
        } else {
            throw .invalidAddress("'\(ipAddress)' is not a numeric IPv4 or IPv6 address")
        }
        host = ipAddress
        self.port = port
    }

    /// A Unix-domain socket address.
    ///
    /// - Parameter path: The socket's path in the file system; at most 107 bytes.
    /// - Throws: ``NetError/invalidAddress(_:)`` for an empty or over-long path.
    public init(unixDomainSocketPath path: String) throws(NetError) {
        guard !path.isEmpty else { throw .invalidAddress("a Unix-domain socket path must not be empty") }
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw .invalidAddress("Unix-domain socket path is too long (\(path.utf8.count) bytes): \(path)")
        }
        family = .unix
        host = path
        port = 0
    }

    init(family: Family, host: String, port: Int) {
        self.family = family
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, `[HOST]:PORT` for IPv6, `unix:PATH` for Unix-domain sockets.
    public var description: String {
        switch family {
        case .ipv4: "\(host):\(port)"
        case .ipv6: "[\(host)]:\(port)"
        case .unix: "unix:\(host)"
        }
    }

    /// Calls `body` with this address as a C `sockaddr` and its length.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(NetError) -> Result) throws(NetError) -> Result {
        var storage = sockaddr_storage()
        let length: socklen_t
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            withUnsafeBytes(of: address) { source in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            withUnsafeBytes(of: address) { source in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        case .unix:
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { path in
                for (index, byte) in host.utf8.enumerated() { path[index] = byte }
            }
            withUnsafeBytes(of: address) { source in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_un>.size)
        }
        return try withUnsafePointer(to: &storage) { pointer throws(NetError) in
            try body(UnsafeRawPointer(pointer).assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// Reads a C `sockaddr`; nil for an unknown family.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            var addr = v4.sin_addr
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
            self.init(family: .ipv4, host: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                      port: Int(UInt16(bigEndian: v4.sin_port)))
        case AF_INET6:
            let v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            var addr = v6.sin6_addr
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
            self.init(family: .ipv6, host: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                      port: Int(UInt16(bigEndian: v6.sin6_port)))
        case AF_UNIX:
            let un = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_un.self)
            let path = withUnsafeBytes(of: un.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            self.init(family: .unix, host: path, port: 0)
        default:
            return nil
        }
    }
}
