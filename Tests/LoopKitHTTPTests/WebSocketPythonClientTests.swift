import Foundation
import Testing
@testable import LoopKitHTTP

/// Python's `websockets` (PyPI), installed with pip when missing: a real client, from another code base.
enum PythonWebSockets {
    /// Whether `python3` can import `websockets`, after installing it with pip if needed (once).
    static let isAvailable: Bool = {
        let check = ["-c", "import websockets.sync.client"]
        if (try? runBlocking("/usr/bin/env", ["python3"] + check).status) == 0 { return true }
        _ = try? runBlocking("/usr/bin/env", ["python3", "-m", "pip", "install", "--quiet", "websockets"])
        return (try? runBlocking("/usr/bin/env", ["python3"] + check).status) == 0
    }()

    /// Echo through `/ws/echo`: text, binary, a large fragmented binary and a large fragmented text, then
    /// a clean close; prints the negotiated extensions and `ok`.
    static let echo = #"""
import os, sys
from websockets.sync.client import connect
port, compression = int(sys.argv[1]), sys.argv[2]
with connect(f"ws://127.0.0.1:{port}/ws/echo", compression=None if compression == "none" else "deflate",
             max_size=4 * 1024 * 1024) as ws:
    print("extensions:", ws.response.headers.get("Sec-WebSocket-Extensions"))
    ws.send("héllo, wörld"); assert ws.recv() == "héllo, wörld"
    ws.send(b"\x00\x01\xfe\xff"); assert ws.recv() == b"\x00\x01\xfe\xff"
    big = os.urandom(300_000)
    ws.send([big[i:i + 65536] for i in range(0, len(big), 65536)])   # fragmented: 5 frames
    assert ws.recv() == big
    text = "λx" * 150_000
    ws.send([text[i:i + 10_000] for i in range(0, len(text), 10_000)])
    assert ws.recv() == text
    for i in range(100):
        ws.send(f"message {i}")
    for i in range(100):
        assert ws.recv() == f"message {i}"
    ws.ping(b"py").wait(10)
print("ok")
"""#
}

@Suite("WebSocket with Python's websockets client")
struct WebSocketPythonClientTests {
    func echo(compression: String) async throws -> String {
        try #require(PythonWebSockets.isAvailable, "python3 with the websockets package (pip install websockets)")
        var output = ""
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let result = try await run("/usr/bin/env", ["python3", "-c", PythonWebSockets.echo, "\(port)", compression])
            #expect(result.status == 0)
            output = result.output
        }
        return output
    }

    @Test func echoesTextBinaryAndLargeFragmentedMessages() async throws {
        let output = try await echo(compression: "none")
        #expect(output.contains("extensions: None"))
        #expect(output.hasSuffix("ok\n"))
    }

    @Test func echoesWithPermessageDeflate() async throws {
        let output = try await echo(compression: "deflate")
        #expect(output.contains("extensions: permessage-deflate"))
        #expect(output.hasSuffix("ok\n"))
    }
}
