/// How a ``UDPSocket`` is bound and how much it batches and buffers. A plain value; safe from any thread.
public struct UDPOptions: Sendable, Hashable {
    /// `SO_REUSEADDR`: bind a port another socket still holds (a multicast receiver beside others).
    public var reuseAddress = false
    /// `SO_REUSEPORT`: several sockets (one per loop) share a port; the kernel spreads datagrams.
    public var reusePort = false
    /// An IPv6 socket receives IPv6 only (`IPV6_V6ONLY`); false lets `::` receive IPv4 too (as mapped
    /// addresses).
    public var ipv6Only = true
    /// The most datagrams one `recvmmsg` takes, and so the most one ``UDPSocket/onDatagrams(_:)`` call
    /// is lent: 1 to 1,024.
    public var receiveBatchSize = 32
    /// The largest datagram received whole, in bytes; a larger one is cut to this size and reported with
    /// ``UDPReceivedDatagram/isTruncated``. 1 to 65,535. The socket holds `receiveBatchSize` buffers of this size.
    public var maximumDatagramSize = 2048
    /// Report each datagram's IP traffic class (TOS byte, with its ECN bits) in
    /// ``UDPReceivedDatagram/trafficClass`` (`IP_RECVTOS`, `IPV6_RECVTCLASS`).
    public var receivesTrafficClass = false
    /// The async ``UDPSocket/datagrams`` sequence holds at most this many datagrams its consumer has not
    /// taken; then the socket stops reading (and the kernel drops what its buffer cannot hold: UDP).
    public var inboundLimit = 1024
    /// The most datagrams queued while the kernel takes no more (`EAGAIN`); a send beyond it is refused
    /// with ``UDPError/sendQueueFull(limit:)``.
    public var sendQueueLimit = 4096
    /// Above this many queued datagrams ``UDPSocket/isWritable`` is false and the async `send` suspends...
    public var sendHighWaterMark = 1024
    /// ...until the queue drains to this many; then ``UDPSocket/onWritable(_:)`` is called.
    public var sendLowWaterMark = 256
    /// `SO_RCVBUF`, in bytes; nil keeps the system's default.
    public var receiveBufferSize: Int?
    /// `SO_SNDBUF`, in bytes; nil keeps the system's default.
    public var sendBufferSize: Int?

    /// The defaults: 32 datagrams of up to 2,048 bytes per receive, 4,096 queued for sending.
    public init() {}

    /// The problem with these options, or nil.
    var problem: String? {
        if !(1...1024).contains(receiveBatchSize) { return "receiveBatchSize must be in 1...1024, got \(receiveBatchSize)" }
        if !(1...65_535).contains(maximumDatagramSize) { return "maximumDatagramSize must be in 1...65535, got \(maximumDatagramSize)" }
        if inboundLimit < 1 { return "inboundLimit must be at least 1" }
        if sendQueueLimit < 1 { return "sendQueueLimit must be at least 1" }
        if !(0...sendHighWaterMark).contains(sendLowWaterMark) || sendHighWaterMark > sendQueueLimit {
            return "need 0 <= sendLowWaterMark <= sendHighWaterMark <= sendQueueLimit"
        }
        return nil
    }
}
