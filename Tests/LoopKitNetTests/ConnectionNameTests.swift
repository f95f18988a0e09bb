import LoopKitNet
import Testing

@Suite("The connection's former name, TCPConnection, still names it")
struct ConnectionNameTests {
    /// Code written against `TCPConnection` keeps compiling: the name is an alias of ``Connection``.
    @Test func tcpConnectionIsTheSameTypeAsConnection() {
        #expect(ObjectIdentifier(TCPConnection.self) == ObjectIdentifier(Connection.self))
        let asConnection: (TCPConnection) -> Connection = { $0 }
        let asTCPConnection: (Connection) -> TCPConnection = { $0 }
        _ = (asConnection, asTCPConnection)
    }
}
