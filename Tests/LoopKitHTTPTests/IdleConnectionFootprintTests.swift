import Testing
@testable import LoopKitHTTP

/// What an idle keep-alive connection holds inline: the per-request state it keeps between requests must
/// stay small, as a server holds one per open connection (the README's row: bytes per idle keep-alive
/// connection, measured by `LoopKitBenchmarks --only idlemem`).
@Suite struct IdleConnectionFootprintTests {
    @Test("a route's handler is a few words inline: a WebSocket route's configuration is boxed")
    func aHandlerIsSmallInline() {
        // The largest inline payload is a streaming route's limit and closure (9 + 16 bytes, aligned).
        #expect(MemoryLayout<HTTPHandler>.size <= 40)
    }

    @Test("an exchange's matched handler and its resolution each stay under a cache line")
    func routeStateIsSmall() {
        #expect(MemoryLayout<HTTPHandler?>.size <= 64)
        #expect(MemoryLayout<HTTPRouter.Resolution>.size <= 64)
    }
}
