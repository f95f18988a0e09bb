import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension UDPSocket {
    /// Allows (or forbids, the default) sending to broadcast addresses such as `255.255.255.255`.
    ///
    /// - Throws: ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(SO_BROADCAST)`.
    public func setBroadcast(_ enabled: Bool) throws(UDPError) {
        try setInteger(SOL_SOCKET, SO_BROADCAST, enabled ? 1 : 0)
    }

    /// Sets the time to live (IPv4) or hop limit (IPv6) of unicast datagrams sent from now on.
    ///
    /// - Parameter hops: 1 to 255.
    /// - Throws: ``UDPError/invalidArgument(_:)`` out of range, ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_TTL)` or
    /// `setsockopt(IPV6_UNICAST_HOPS)`.
    public func setTimeToLive(_ hops: Int) throws(UDPError) {
        guard (1...255).contains(hops) else { throw .invalidArgument("time to live must be in 1...255, got \(hops)") }
        if isIPv6 {
            try setInteger(Int32(IPPROTO_IPV6), IPV6_UNICAST_HOPS, Int32(hops))
        } else {
            try setInteger(Int32(IPPROTO_IP), IP_TTL, Int32(hops))
        }
    }

    /// Sets the time to live (IPv4) or hop limit (IPv6) of multicast datagrams sent from now on (the
    /// system's default is 1: the local network).
    ///
    /// - Parameter hops: 0 to 255.
    /// - Throws: ``UDPError/invalidArgument(_:)`` out of range, ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_MULTICAST_TTL)` or
    /// `setsockopt(IPV6_MULTICAST_HOPS)`.
    public func setMulticastTimeToLive(_ hops: Int) throws(UDPError) {
        guard (0...255).contains(hops) else { throw .invalidArgument("multicast time to live must be in 0...255, got \(hops)") }
        if isIPv6 {
            try setInteger(Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, Int32(hops))
        } else {
            try setInteger(Int32(IPPROTO_IP), IP_MULTICAST_TTL, Int32(hops))
        }
    }

    /// Whether multicast datagrams this socket sends are also delivered to this host's own members of
    /// the group (the system's default is yes).
    ///
    /// - Throws: ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_MULTICAST_LOOP)` or
    /// `setsockopt(IPV6_MULTICAST_LOOP)`.
    public func setMulticastLoopback(_ enabled: Bool) throws(UDPError) {
        if isIPv6 {
            try setInteger(Int32(IPPROTO_IPV6), IPV6_MULTICAST_LOOP, enabled ? 1 : 0)
        } else {
            try setInteger(Int32(IPPROTO_IP), IP_MULTICAST_LOOP, enabled ? 1 : 0)
        }
    }

    /// Sends multicast datagrams through the network interface `interface` (such as `lo` or `eth0`).
    ///
    /// - Throws: ``UDPError/invalidArgument(_:)`` for an unknown interface, ``UDPError/closed``,
    ///   ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_MULTICAST_IF)` or
    /// `setsockopt(IPV6_MULTICAST_IF)`.
    public func setMulticastInterface(_ interface: String) throws(UDPError) {
        checkThread()
        try checkOpen()
        let index = try interfaceIndex(interface)
        if isIPv6 {
            try setInteger(Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, index)
        } else {
            var request = ip_mreqn()
            request.imr_ifindex = index
            try setStruct(Int32(IPPROTO_IP), IP_MULTICAST_IF, &request, name: "IP_MULTICAST_IF")
        }
    }

    /// Sets the IP traffic class (the TOS byte: DSCP in the six high bits, ECN in the two low) of the
    /// datagrams sent from now on; `ECN.ect0.rawValue` marks them ECN-capable.
    ///
    /// - Throws: ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_TOS)` or
    /// `setsockopt(IPV6_TCLASS)`.
    public func setTrafficClass(_ value: UInt8) throws(UDPError) {
        if isIPv6 {
            try setInteger(Int32(IPPROTO_IPV6), IPV6_TCLASS, Int32(value))
        } else {
            try setInteger(Int32(IPPROTO_IP), IP_TOS, Int32(value))
        }
    }

    /// Joins the multicast group `group` (such as `239.255.0.1` or `ff02::1:3`) on `interface` (nil: the
    /// one the system picks), so the socket receives what is sent to the group and its port.
    ///
    /// - Throws: ``UDPError/invalidArgument(_:)`` for an address that is not a multicast group of the
    ///   socket's family or an unknown interface; ``UDPError/closed``; ``UDPError/system(_:_:)`` (`ENODEV`:
    ///   no interface for the group; `EADDRINUSE`: already a member).
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_ADD_MEMBERSHIP)` or
    /// `setsockopt(IPV6_ADD_MEMBERSHIP)`.
    public func joinMulticastGroup(_ group: String, interface: String? = nil) throws(UDPError) {
        try membership(group, interface: interface, join: true)
    }

    /// Leaves a multicast group joined with ``joinMulticastGroup(_:interface:)``.
    ///
    /// - Throws: As ``joinMulticastGroup(_:interface:)``; ``UDPError/system(_:_:)`` with `EADDRNOTAVAIL`
    ///   when the socket is not a member.
    ///
    /// Call on the loop's thread. The corresponding system call is `setsockopt(IP_DROP_MEMBERSHIP)` or
    /// `setsockopt(IPV6_DROP_MEMBERSHIP)`.
    public func leaveMulticastGroup(_ group: String, interface: String? = nil) throws(UDPError) {
        try membership(group, interface: interface, join: false)
    }

    private func membership(_ group: String, interface: String?, join: Bool) throws(UDPError) {
        checkThread()
        try checkOpen()
        let index = try interface.map { name throws(UDPError) in try interfaceIndex(name) } ?? 0
        if isIPv6 {
            var request = ipv6_mreq()
            guard inet_pton(AF_INET6, group, &request.ipv6mr_multiaddr) == 1,
                  withUnsafeBytes(of: request.ipv6mr_multiaddr, { $0[0] }) == 0xff else {
                throw .invalidArgument("'\(group)' is not an IPv6 multicast group (ff00::/8)")
            }
            request.ipv6mr_interface = UInt32(index)
            try setStruct(Int32(IPPROTO_IPV6), join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &request,
                          name: join ? "IPV6_ADD_MEMBERSHIP" : "IPV6_DROP_MEMBERSHIP")
        } else {
            var request = ip_mreqn()
            guard inet_pton(AF_INET, group, &request.imr_multiaddr) == 1,
                  (224...239).contains(withUnsafeBytes(of: request.imr_multiaddr, { $0[0] })) else {
                throw .invalidArgument("'\(group)' is not an IPv4 multicast group (224.0.0.0/4)")
            }
            request.imr_ifindex = index
            try setStruct(Int32(IPPROTO_IP), join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &request,
                          name: join ? "IP_ADD_MEMBERSHIP" : "IP_DROP_MEMBERSHIP")
        }
    }

    private var isIPv6: Bool { localAddress.family == .ipv6 }

    private func interfaceIndex(_ name: String) throws(UDPError) -> Int32 {
        let index = if_nametoindex(name)
        guard index != 0 else { throw .invalidArgument("no network interface named '\(name)'") }
        return Int32(index)
    }

    private func setInteger(_ level: Int32, _ option: Int32, _ value: Int32) throws(UDPError) {
        checkThread()
        try checkOpen()
        var value = value
        try setStruct(level, option, &value, name: "option \(option)")
    }

    private func setStruct<Value>(_ level: Int32, _ option: Int32, _ value: inout Value, name: String) throws(UDPError) {
        let code = withUnsafeBytes(of: &value) { Socket.setRawOption(fd, level, option, $0.baseAddress!, $0.count) }
        guard code == 0 else { throw .system("setsockopt \(name)", code) }
    }
}
