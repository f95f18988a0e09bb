import ArgumentParser
import Dispatch
import Foundation
import HTTPTypes
import LoopDemoKit
import LoopKit
import LoopKitHTTPClient
import Synchronization

/// `LoopDemo fetch URL…`: downloads with LoopKitHTTPClient, a bar per file and a total.
struct FetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download URLs with LoopKitHTTPClient on one loop: a live bar per file and a total.",
        discussion: """
            On a terminal the bars redraw in place (TaskProgress, 10 times a second); through a pipe one line per \
            finished file prints, or with --json one object per line (progress every 250 ms, then the result). \
            Ctrl-C cancels every download and removes the partial files (exit status 130).
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The URLs (http or https).")
    var urls: [String]

    @Option(help: "Downloads at once.")
    var parallel = 4

    @Option(help: "The folder the files are written to (created if missing).")
    var output = "."

    func validate() throws {
        guard parallel >= 1 else { throw ValidationError("--parallel must be at least 1") }
        for url in urls {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw ValidationError("not an http(s) URL: \(url)")
            }
        }
    }

    func run() throws {
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let group = try LoopGroup(threads: 1, name: "fetch")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let interactive = !global.json && isatty(STDOUT_FILENO) == 1
        let fetch = Fetch(urls: urls, folder: output, parallel: parallel, json: global.json, interactive: interactive, loop: loop)
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<(failed: Int, interrupted: Bool)>((0, false))
        let task = Task(executorPreference: loop) {
            let result = await fetch.run()
            outcome.withLock { $0 = result }
            done.signal()
        }
        try loop.invokeAndWait {
            _ = try loop.onSignal(SIGINT) {
                fetch.interrupted.store(true, ordering: .relaxed)
                task.cancel()
            }
        }
        done.wait()
        let (failed, interrupted) = outcome.withLock { $0 }
        if interrupted { throw ExitCode(130) }
        if failed > 0 { throw ExitCode(1) }
    }
}

/// One `fetch` run: the downloads, their progress and the output.
final class Fetch: Sendable {
    let urls: [String]
    let folder: String
    let parallel: Int
    let json: Bool
    let interactive: Bool
    let loop: EventLoop
    let interrupted = Atomic(false)
    let total: TaskProgress
    let files: [TaskProgress]

    init(urls: [String], folder: String, parallel: Int, json: Bool, interactive: Bool, loop: EventLoop) {
        self.urls = urls
        self.folder = folder
        self.parallel = parallel
        self.json = json
        self.interactive = interactive
        self.loop = loop
        total = TaskProgress.discrete(totalUnitCount: Int64(urls.count), unitName: .files)
        files = urls.map { _ in TaskProgress.discrete(totalUnitCount: -1, unitName: .bytes) }
        for file in files { total.addChild(file, withPendingUnitCount: 1) }
    }

    /// Downloads every URL, `parallel` at a time; returns how many failed and whether Ctrl-C ended the run.
    func run() async -> (failed: Int, interrupted: Bool) {
        let client = HTTPClient(on: loop)
        defer { client.shutdown() }
        let redraw = startRedrawing()
        defer { redraw?.cancel() }
        var failed = 0
        await withTaskGroup(of: Bool.self) { group in
            var next = 0
            func startNext() {
                guard next < urls.count else { return }
                let index = next
                next += 1
                group.addTask { await self.download(index, with: client) }
            }
            for _ in 0..<min(parallel, urls.count) { startNext() }
            while let succeeded = await group.next() {
                if !succeeded { failed += 1 }
                startNext()
            }
        }
        if interactive { draw(final: true) }
        return (failed, interrupted.load(ordering: .relaxed))
    }

    private func download(_ index: Int, with client: HTTPClient) async -> Bool {
        let url = URL(string: urls[index])!
        let name = url.lastPathComponent.isEmpty || url.lastPathComponent == "/" ? "index.html" : url.lastPathComponent
        let path = (folder as NSString).appendingPathComponent(name)
        let progress = files[index]
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        let authority = url.port.map { "\(url.host!):\($0)" } ?? url.host!
        let request = HTTPRequest(method: .get, scheme: url.scheme, authority: authority, path: target)
        let started = ContinuousClock.now
        do {
            let response = try await client.execute(request)
            guard response.head.status.kind == .successful else {
                throw HTTPClientError(.transport, "the server answered \(response.head.status)")
            }
            if let length = response.head.headerFields[.contentLength].flatMap(Int64.init),
                response.head.headerFields[.contentEncoding] == nil
            {
                progress.totalUnitCount = length
            }
            guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
                throw HTTPClientError(.transport, "cannot write \(path)")
            }
            for try await chunk in response.body {
                try chunk.withUnsafeBytes { try handle.write(contentsOf: Data($0)) }
                progress.increment(by: Int64(chunk.count))
                if json { report(index, final: false) }
            }
            try handle.close()
            progress.totalUnitCount = progress.completedUnitCount
            report(index, final: true, seconds: seconds(since: started))
            return true
        } catch {
            progress.cancel()
            if FileManager.default.fileExists(atPath: path) {
                do { try FileManager.default.removeItem(atPath: path) } catch { FileHandle.standardError.write(Data("cannot remove \(path): \(error)\n".utf8)) }
            }
            report(index, final: true, error: "\(error)", seconds: seconds(since: started))
            return false
        }
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private let lastJSON = Mutex<[Int: ContinuousClock.Instant]>([:])

    /// One line per finished file in a pipe; with --json, progress at most every 250 ms per file and the end.
    private func report(_ index: Int, final: Bool, error: String? = nil, seconds: Double = 0) {
        let snapshot = files[index].snapshot()
        if json {
            if !final {
                let now = ContinuousClock.now
                let due = lastJSON.withLock { last in
                    if let previous = last[index], now - previous < .milliseconds(250) { return false }
                    last[index] = now
                    return true
                }
                guard due else { return }
            }
            var object: [String: Any] = [
                "event": final ? (error == nil ? "done" : "failed") : "progress", "url": urls[index],
                "bytes": snapshot.completedUnitCount,
            ]
            if snapshot.totalUnitCount >= 0 { object["total"] = snapshot.totalUnitCount }
            if let error { object["error"] = error }
            if final { object["seconds"] = seconds }
            do {
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                writeToStandardOutput(String(decoding: data, as: UTF8.self) + "\n")
            } catch {
                FileHandle.standardError.write(Data("fetch: a progress line could not be written as JSON: \(error)\n".utf8))
            }
        } else if !interactive && final {
            let rate = seconds > 0 ? Double(snapshot.completedUnitCount) / seconds / 1_000_000 : 0
            let line = error.map { "failed \(urls[index]): \($0)" }
                ?? "done \(urls[index]): \(snapshot.completedUnitCount) bytes in \(String(format: "%.2f", seconds)) s (\(String(format: "%.1f", rate)) MB/s)"
            writeToStandardOutput(line + "\n")
        }
    }

    private let drawnLines = Mutex(0)

    private func startRedrawing() -> ScheduledTimer? {
        guard interactive else { return nil }
        do {
            return try loop.schedule(after: .zero, repeating: .milliseconds(100)) { [self] in draw(final: false) }
        } catch {
            return nil  // the loop is shutting down: nothing to draw
        }
    }

    /// The bars, redrawn in place: one per file, then the total.
    private func draw(final: Bool) {
        var text = ""
        let up = drawnLines.withLock { $0 }
        if up > 0 { text += "\u{1B}[\(up)A" }
        for (index, file) in files.enumerated() {
            let name = URL(string: urls[index])?.lastPathComponent ?? urls[index]
            text += "\u{1B}[2K" + ProgressBar.line(label: String(name.prefix(24)).padding(toLength: 24, withPad: " ", startingAt: 0),
                                                   snapshot: file.snapshot(), unicode: true) + "\n"
        }
        text += "\u{1B}[2K" + ProgressBar.line(label: "total".padding(toLength: 24, withPad: " ", startingAt: 0), snapshot: total.snapshot(), unicode: true) + "\n"
        drawnLines.withLock { $0 = files.count + 1 }
        writeToStandardOutput(text)
    }
}
