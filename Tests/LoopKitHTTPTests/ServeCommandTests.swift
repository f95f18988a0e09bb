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

    /// What one run of `LoopDemo serve --metrics 0` answered: `requests` sent in turn to the server's port,
    /// then a scrape of `/metrics`, then SIGTERM.
    struct Run: Sendable {
        var answers: [String]
        var metricsContentType: String?
        var metrics: String
        var status: Int32
    }

    /// Starts the executable, sends `requests` (raw HTTP/1.1, one connection each), scrapes, stops it.
    static func run(_ requests: [String]) async throws -> Run {
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "LoopDemo is not built beside the tests")
        return try await onOwnThread { () throws -> Run in
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
            let server = try port("listening on ")
            let answers = try requests.map { try RawClient(port: server).exchange($0).text }
            let metrics = try RawClient(port: try port("metrics on ")).exchange("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
            process.terminate()  // SIGTERM: a graceful stop, exit status 0
            return Run(answers: answers, metricsContentType: metrics.field("Content-Type"), metrics: metrics.text,
                       status: process.waitUntilExit())
        }
    }

    @Test func metricsAreServedInPrometheusTextFormatOnASecondPort() async throws {
        let result = try await Self.run(["GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"])
        #expect(result.metricsContentType?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(result.answers == ["Hello, World!"])
        #expect(result.metrics.contains("# TYPE loopkit_loop_iterations counter"))
        #expect(result.metrics.contains("loopkit_loop_iterations{loop=\"serve-0\"}"))
        #expect(result.metrics.contains("loopkit_loop_iteration_duration_bucket{loop=\"serve-0\",le=\"0.0001\"}"))
        #expect(result.metrics.contains("http_server_requests{http_request_method=\"GET\",http_response_status_class=\"2xx\"} 1"))
        #expect(result.metrics.contains("http_server_request_duration_count{"))
        #expect(result.status == 0)
    }

    /// promtool's rule: every family has a `# HELP` line (with text) before its `# TYPE` line. The requests
    /// (one with a body) make the server's families appear beside the loops'.
    @Test func everyMetricFamilyHasAHelpLine() async throws {
        let result = try await Self.run([
            "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n",
            "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
        ])
        let lines = result.metrics.split(separator: "\n").map(String.init)
        let types = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(types.count >= 13, "\(types)")
        for family in types {
            let help = lines.firstIndex { $0.hasPrefix("# HELP \(family) ") }
            let type = lines.firstIndex { $0.hasPrefix("# TYPE \(family) ") }
            #expect(help != nil && help! < type!, "no # HELP line before # TYPE \(family)")
            if let help { #expect(lines[help].count > "# HELP \(family) ".count + 10, "\(lines[help])") }
        }
        #expect(result.metrics.contains("# HELP http_server_request_body_size "))
    }
}

/// Runs `body` on a thread of its own (it blocks: a child process, sockets) and returns its result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
