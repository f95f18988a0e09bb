#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The datagrams one receive took, lent to ``UDPSocket/onDatagrams(_:)`` without copying: each
/// ``UDPReceivedDatagram`` points into the socket's receive buffers, valid only during the call.
///
/// A random-access collection; not `Sendable` and not to be kept: copy what must outlive the call
/// (``UDPReceivedDatagram/copied()``). Use on the loop's thread, inside the handler it was lent to.
public struct UDPDatagramBatch: RandomAccessCollection {
    let buffers: DatagramReceiveBuffers
    /// How many datagrams the batch holds (at least 1, at most ``UDPOptions/receiveBatchSize``).
    public let count: Int

    /// 0. Use on the loop's thread.
    public var startIndex: Int { 0 }
    /// ``count``. Use on the loop's thread.
    public var endIndex: Int { count }

    /// The datagram at `position`, lent. Use on the loop's thread, inside the handler.
    public subscript(position: Int) -> UDPReceivedDatagram {
        precondition(position >= 0 && position < count, "UDPDatagramBatch index \(position) out of 0..<\(count)")
        return buffers.datagram(position)
    }
}

/// One received datagram, lent: its bytes and its sender's address point into the socket's receive
/// buffers and are valid only during the ``UDPSocket/onDatagrams(_:)`` call that lent it.
///
/// Answer it without formatting the sender's address with ``UDPSocket/write(copying:toSenderOf:)``.
/// Use on the loop's thread, inside the handler.
public struct UDPReceivedDatagram {
    /// The bytes received (at most ``UDPOptions/maximumDatagramSize``), valid during the call.
    public let payload: UnsafeRawBufferPointer
    /// The datagram was larger than ``UDPOptions/maximumDatagramSize`` and was cut (`MSG_TRUNC`).
    public let isTruncated: Bool
    /// The IP traffic class (TOS byte) it arrived with, when ``UDPOptions/receivesTrafficClass`` is on.
    public let trafficClass: UInt8?
    /// The sender's `sockaddr` as the kernel gave it, in the receive buffers (for the C ABI's datagrams).
    package let senderName: UnsafeRawPointer
    /// The length of ``senderName``.
    package let senderLength: socklen_t

    /// The sender's address (formatted on each call: numeric host and port). Use on the loop's thread.
    public var sender: SocketAddress {
        SocketAddress(senderName.assumingMemoryBound(to: sockaddr.self))
            ?? SocketAddress(family: .ipv4, host: "0.0.0.0", port: 0)
    }

    /// The ECN codepoint of ``trafficClass``, if it was received. Use on the loop's thread.
    public var ecn: ECN? { trafficClass.map { ECN(rawValue: $0 & 3)! } }

    /// An owned copy (the bytes copied once), to keep past the call. Use on the loop's thread.
    public func copied() -> UDPDatagram {
        UDPDatagram(payload: Bytes(copying: payload), sender: sender, isTruncated: isTruncated, trafficClass: trafficClass)
    }
}

/// A socket's receive buffers for `recvmmsg`: `count` payload buffers of `size` bytes, their sender
/// addresses and (when the traffic class is asked for) control buffers, set up once. Loop-confined.
final class DatagramReceiveBuffers {
    let count: Int
    let size: Int
    let vector: Socket.MessageVector
    private let payloads: UnsafeMutableRawPointer
    private let names: UnsafeMutablePointer<sockaddr_storage>
    private let vectors: UnsafeMutablePointer<iovec>
    private let controls: UnsafeMutableRawPointer?
    static let controlSize = 64

    init(count: Int, size: Int, receivesTrafficClass: Bool) {
        self.count = count
        self.size = size
        vector = Socket.MessageVector(capacity: count)
        payloads = UnsafeMutableRawPointer.allocate(byteCount: count * size, alignment: 16)
        names = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: count)
        names.initialize(repeating: sockaddr_storage(), count: count)
        vectors = UnsafeMutablePointer<iovec>.allocate(capacity: count)
        controls = receivesTrafficClass ? UnsafeMutableRawPointer.allocate(byteCount: count * Self.controlSize, alignment: 8) : nil
        for index in 0..<count {
            vectors[index] = iovec(iov_base: payloads + index * size, iov_len: size)
            let header = vector.header(index)
            header.pointee.msg_name = UnsafeMutableRawPointer(names + index)
            header.pointee.msg_iov = vectors + index
            header.pointee.msg_iovlen = 1
            header.pointee.msg_control = controls.map { $0 + index * Self.controlSize }
        }
    }

    deinit {
        payloads.deallocate()
        names.deallocate()
        vectors.deallocate()
        controls?.deallocate()
    }

    /// Resets what `recvmmsg` overwrote in the first `count` headers.
    @inline(__always)
    func prepare(_ count: Int) {
        let nameLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let controlLength = controls == nil ? 0 : Self.controlSize
        for index in 0..<count {
            let header = vector.header(index)
            header.pointee.msg_namelen = nameLength
            header.pointee.msg_controllen = controlLength
            header.pointee.msg_flags = 0
        }
    }

    /// The received datagram `index`, lent.
    @inline(__always)
    func datagram(_ index: Int) -> UDPReceivedDatagram {
        let header = vector.header(index)
        let length = min(vector.length(index), size)
        return UDPReceivedDatagram(
            payload: UnsafeRawBufferPointer(start: payloads + index * size, count: length),
            isTruncated: header.pointee.msg_flags & Int32(MSG_TRUNC) != 0,
            trafficClass: controls == nil ? nil : trafficClass(header),
            senderName: UnsafeRawPointer(names + index),
            senderLength: header.pointee.msg_namelen
        )
    }

    /// The `IP_TOS` or `IPV6_TCLASS` control message of a received header, read by hand (Swift cannot
    /// call the `CMSG_*` macros): `cmsghdr` is a `size_t` length, two `int`s, then the data, each message
    /// padded to 8 bytes.
    private func trafficClass(_ header: UnsafeMutablePointer<msghdr>) -> UInt8? {
        guard let control = header.pointee.msg_control else { return nil }
        let total = Int(header.pointee.msg_controllen)
        let headerSize = MemoryLayout<Int>.size + 2 * MemoryLayout<Int32>.size
        var offset = 0
        while offset + headerSize <= total {
            let length = control.load(fromByteOffset: offset, as: Int.self)
            guard length >= headerSize, offset + length <= total else { return nil }
            let level = control.load(fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self)
            let type = control.load(fromByteOffset: offset + MemoryLayout<Int>.size + 4, as: Int32.self)
            if level == Int32(IPPROTO_IP) && type == IP_TOS {
                return control.load(fromByteOffset: offset + headerSize, as: UInt8.self)
            }
            if level == Int32(IPPROTO_IPV6) && type == IPV6_TCLASS {
                return UInt8(truncatingIfNeeded: control.loadUnaligned(fromByteOffset: offset + headerSize, as: Int32.self))
            }
            offset += (length + 7) & ~7
        }
        return nil
    }
}
