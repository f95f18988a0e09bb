import Foundation
import Testing
import TestSupport
@testable import LoopKitHTTP

/// `LoopDemo serve` as a deployer runs it: the built executable, its stdout lines, a signal to stop.
@Suite("LoopDemo serve, the executable")
struct ServeCommandTests {
    /// The LoopDemo built beside this test bundle (same build folder, whatever its configuration).
    static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("LoopDemo")
    }

    @Test func metricsAreServedInPrometheusTextFormatOnASecondPort() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "LoopDemo is not built beside the tests")
        let result = try await onOwnThread { () throws -> (hello: String, metrics: String, status: Int32) in
            let process = try ChildProcess(Self.executable.path, ["serve", "--port", "0", "--metrics", "0", "--log-level", "warning"])
            defer { process.terminate() }
            let output = try #require(process.output)
            var lines: [String] = []
            var pending = Data()
            while lines.count < 2 {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                pending += chunk
                while let newline = pending.firstIndex(of: 10) {
                    lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
            }
            func port(_ prefix: String) throws -> Int {
                let line = try #require(lines.first { $0.hasPrefix(prefix) }, "no '\(prefix)' line in \(lines)")
                return try #require(line.split(separator: ":").last.flatMap { Int($0) })
            }
            let hello = try RawClient(port: try port("listening on ")).exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").text
            let metrics = try RawClient(port: try port("metrics on ")).exchange("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(metrics.field("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            process.terminate()  // SIGTERM: a graceful stop, exit status 0
            return (hello, metrics.text, process.waitUntilExit())
        }
        #expect(result.hello == "Hello, World!")
        #expect(result.metrics.contains("# TYPE loopkit_loop_iterations counter"))
        #expect(result.metrics.contains("loopkit_loop_iterations{loop=\"serve-0\"}"))
        #expect(result.metrics.contains("loopkit_loop_iteration_duration_bucket{loop=\"serve-0\",le=\"0.0001\"}"))
        #expect(result.metrics.contains("http_server_requests{http_request_method=\"GET\",http_response_status_class=\"2xx\"} 1"))
        #expect(result.metrics.contains("http_server_request_duration_count{"))
        #expect(result.status == 0)
    }
}

/// Runs `body` on a thread of its own (it blocks: a child process, sockets) and returns its result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
