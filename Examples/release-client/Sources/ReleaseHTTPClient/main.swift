#if canImport(Glibc)
import Glibc
#endif
import LoopKit
import LoopKitHTTP
import LoopKitNet
import Synchronization

// What a user's release build must see from LoopKitHTTP and LoopKitNet: a server on 127.0.0.1 (port 0)
// built with the public API, its async sequences (streamed request bodies, WebSocket messages, TCP
// `inbound`) read with `for await`, and clients that check every byte. Exits 1 when any check fails.

let failures = Atomic<Int>(0)

func expect(_ rule: String, _ expected: [String], _ check: @Sendable @escaping () async throws -> [String]) async {
    let seen: [String]
    do {
        seen = try await Task(executorPreference: clientLoop) { try await check() }.value
    } catch {
        seen = ["threw \(error)"]
    }
    let ok = seen == expected
    print((ok ? "ok    " : "FAIL  ") + rule + (ok ? "" : ": saw \(seen), expected \(expected)"))
    if !ok { failures.add(1, ordering: .relaxed) }
}

// A check that waits for ever is a failure too: the whole run has two minutes.
Task.detached {
    try? await Task.sleep(for: .seconds(120))
    print("FAIL  the checks did not finish within 120 s")
    exit(1)
}

let serverGroup = try LoopGroup(threads: 1)
let clientGroup = try LoopGroup(threads: 1)
let clientLoop = clientGroup.loops[0]

var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
configuration.logsAccess = false
let server = HTTPServer(group: serverGroup, configuration: configuration, router: HTTPChecks.router())
let port = try server.start()
let echo = try TCPListener.bind(host: "127.0.0.1", port: 0, on: serverGroup) { connection in
    for try await chunk in connection.inbound { try await connection.send(chunk) }
}
let echoPort = echo.localAddress.port

await expect("an inline route answers two pipelined requests in order on one connection",
             ["200 Hello, World!", "200 Hello, World!"]) {
    try await HTTPChecks.inlineRoutePipelined(port: port, on: clientLoop)
}
await expect("a streaming route reads a Content-Length body and a chunked one with for await, byte for byte",
             HTTPChecks.expectedStreamedRequestBodies()) {
    try await HTTPChecks.streamedRequestBodies(port: port, on: clientLoop)
}
await expect("an .inTask route gets its collected body", ["200 tneilc esaeler"]) {
    try await HTTPChecks.collectedBodyInATask(port: port, on: clientLoop)
}
await expect("a WebSocket route's for-await loop echoes every message, then the close handshake ends it",
             HTTPChecks.expectedWebSocketEcho()) {
    try await HTTPChecks.webSocketEcho(port: port, on: clientLoop)
}
await expect("a TCP echo server's for-await loop over inbound sends every byte back in order",
             HTTPChecks.expectedTCPInboundEcho()) {
    try await HTTPChecks.tcpInboundEcho(port: echoPort, on: clientLoop)
}

await server.shutdown()
await echo.shutdown()
serverGroup.shutdown()
clientGroup.shutdown()
let failed = failures.load(ordering: .relaxed)
print(failed == 0 ? "==> release HTTP client: every check passed" : "==> release HTTP client: \(failed) check(s) failed")
exit(failed == 0 ? 0 : 1)
