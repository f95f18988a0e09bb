import Foundation
import Testing

/// Rules about the libraries' own source, checked on the files: no silently dropped error, and the C
/// boundaries (libevent, the C library's clock and threads, sockets) each in one `Internal/` folder.
@Suite("Source rules")
struct SourceRulesTests {
    /// The library targets whose sources the rules cover, with the fewest Swift files each has (so a
    /// moved folder fails the rules rather than passing them on no files).
    static let libraryTargets = [("LoopKit", 30), ("LoopKitNet", 10), ("LoopKitHTTP", 15), ("LoopKitTesting", 3), ("LoopKitC", 5),
                                  ("LoopKitExecutors", 3), ("LoopKitNetTesting", 2)]

    /// The Swift files of `Sources/<target>`, as (path relative to it, contents).
    static func librarySources(_ target: String = "LoopKit") throws -> [(path: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/\(target)")
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        return try files.map { url in
            (String(url.path.dropFirst(root.path.count + 1)), try String(contentsOf: url, encoding: .utf8))
        }
    }

    /// The code of `text`: each line without its `//` comment, doc comments dropped.
    static func code(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("//") { return "" }
            return String(line)
        }
    }

    @Test("LoopKitTesting (loop-ordering tests) imports LoopKit only: the network stack stays out of it")
    func loopKitTestingDependsOnLoopKitOnly() throws {
        for (path, text) in try Self.librarySources("LoopKitTesting") {
            for (number, line) in Self.code(text).enumerated()
            where line.hasPrefix("import ") && line != "import LoopKit" && !line.hasPrefix("import Synchronization") {
                Issue.record("LoopKitTesting/\(path):\(number + 1): \(line)")
            }
        }
    }

    @Test("Each @unchecked Sendable says on its line why the compiler cannot check it")
    func everyUncheckedSendableSaysWhy() throws {
        let targets = Self.libraryTargets.map(\.0) + ["LoopKitMetrics", "LoopKitHTTPTesting"]
        for target in targets {
            for (path, text) in try Self.librarySources(target) {
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where line.contains("@unchecked Sendable") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                    guard let comment = line.range(of: "// "), line[comment.upperBound...].count >= 10 else {
                        Issue.record("\(target)/\(path):\(number + 1): no reason given: \(line)")
                        continue
                    }
                }
            }
        }
    }

    @Test("Library code drops no error with try?: every failure reaches an outcome, a throw or onDiagnostic")
    func libraryCodeHasNoTryQuestionMark() throws {
        for (target, fewest) in Self.libraryTargets {
            let sources = try Self.librarySources(target)
            #expect(sources.count >= fewest, "Sources/\(target) has \(sources.count) Swift files")
            for (path, text) in sources {
                for (number, line) in Self.code(text).enumerated() where line.contains(/(^|[^A-Za-z0-9_])try\?/) {  // not `Registry?`
                    Issue.record("\(target)/\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }

    @Test("libevent is imported only in LoopKit/Internal/: LoopKitNet's one use of it is the loop's watches")
    func libeventStaysInTheCoresInternalFolder() throws {
        for (target, _) in Self.libraryTargets {
            for (path, text) in try Self.librarySources(target) where !(target == "LoopKit" && path.hasPrefix("Internal/")) {
                for (number, line) in Self.code(text).enumerated() where line.contains("import CEvent") {
                    Issue.record("\(target)/\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }

    @Test("Socket system calls are made only in LoopKitNet/Internal/Socket.swift")
    func socketCallsStayInOneFile() throws {
        let calls = ["socket(", "accept4", "setsockopt(", "getsockopt(", "writev(", "Glibc.read(", "Glibc.connect(",
                     "Glibc.close(", "Glibc.shutdown(", "getaddrinfo("]
        for target in ["LoopKitNet", "LoopKitHTTP"] {
            let sources = try Self.librarySources(target)
            #expect(sources.contains { $0.path == "Internal/Socket.swift" } == (target == "LoopKitNet"))
            for (path, text) in sources where path != "Internal/Socket.swift" {
                for (number, line) in Self.code(text).enumerated() where calls.contains(where: { line.contains($0) }) {
                    Issue.record("\(target)/\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }

    @Test("clock_gettime and pthread keys are called only in Internal/: one clock, one thread-local")
    func platformCallsStayInInternal() throws {
        for (path, text) in try Self.librarySources() where !path.hasPrefix("Internal/") {
            for (number, line) in Self.code(text).enumerated()
            where line.contains("clock_gettime") || line.contains("pthread_") || line.contains("import Glibc") {
                Issue.record("\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    @Test("No Swift code reads pthread_self: the calling thread comes from lk_thread_self, which the optimiser cannot move across an await")
    func threadIdentityIsNeverReadThroughTheConstPthreadSelf() throws {
        for (target, _) in Self.libraryTargets {
            for (path, text) in try Self.librarySources(target) {
                for (number, line) in Self.code(text).enumerated() where line.contains("pthread_self(") {
                    Issue.record("\(target)/\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }
}
