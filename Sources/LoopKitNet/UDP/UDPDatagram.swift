/// A datagram received by a ``UDPSocket``, owned: what the async ``UDPSocket/datagrams`` sequence gives
/// (one copy out of the receive buffer). A plain value; safe from any thread.
public struct UDPDatagram: Sendable, Hashable {
    /// The bytes (at most ``UDPOptions/maximumDatagramSize``).
    public var payload: Bytes
    /// The sender's address.
    public var sender: SocketAddress
    /// The datagram was larger than ``UDPOptions/maximumDatagramSize`` and was cut (`MSG_TRUNC`).
    public var isTruncated: Bool
    /// The IP traffic class (the TOS byte) it arrived with, when ``UDPOptions/receivesTrafficClass`` is on.
    public var trafficClass: UInt8?

    /// A datagram with these values.
    public init(payload: Bytes, sender: SocketAddress, isTruncated: Bool = false, trafficClass: UInt8? = nil) {
        self.payload = payload
        self.sender = sender
        self.isTruncated = isTruncated
        self.trafficClass = trafficClass
    }

    /// The ECN codepoint of ``trafficClass`` (its two low bits), if it was received.
    public var ecn: ECN? { trafficClass.map { ECN(rawValue: $0 & 3)! } }
}

/// Explicit Congestion Notification: the two low bits of the IP traffic class (RFC 3168). A plain value;
/// safe from any thread.
public enum ECN: UInt8, Sendable, Hashable {
    /// Not ECN-capable transport.
    case notECT = 0
    /// ECN-capable transport, ECT(1).
    case ect1 = 1
    /// ECN-capable transport, ECT(0).
    case ect0 = 2
    /// Congestion experienced.
    case congestionExperienced = 3
}

