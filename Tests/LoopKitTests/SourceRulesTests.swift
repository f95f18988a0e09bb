import Foundation
import Testing

/// Rules about the library's own source, checked on the files: no silently dropped error, and the C
/// library's clock and thread-local calls only in `Internal/`.
@Suite("Source rules")
struct SourceRulesTests {
    /// The Swift files of `Sources/LoopKit`, as (path relative to it, contents).
    static func librarySources() throws -> [(path: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/LoopKit")
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

    @Test("Library code drops no error with try?: every failure reaches an outcome, a throw or onDiagnostic")
    func libraryCodeHasNoTryQuestionMark() throws {
        let sources = try Self.librarySources()
        #expect(sources.count > 30)
        for (path, text) in sources {
            for (number, line) in Self.code(text).enumerated() where line.contains("try?") {
                Issue.record("\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
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
}
