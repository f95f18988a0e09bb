import HTTPTypes
import LoopKit
import LoopKitHTTP

/// The routes of `LoopDemo serve`: `GET /` (the live page, and `GET /favicon.ico`, 204), `GET /hello`,
/// `POST /echo`, `POST /upload`, `GET /stream`, `GET /work`, the jobs (`POST /jobs`, `GET /jobs/ID/events`,
/// `GET /ws/jobs/ID`, `POST /jobs/ID/cancel`), `GET /ws/echo` (a WebSocket) and, with `serve --root DIR`, the
/// directory's files under `/files/`; anything else is 404.
public enum DemoRoutes {
    /// Where `serve --root DIR` serves the directory.
    public static let filesPrefix = "/files"

    /// The router.
    ///
    /// - Parameters:
    ///   - work: The per-item work of `/work` and of the jobs (about 1 µs per item once calibrated).
    ///   - jobs: The jobs of the live page (a fresh table by default).
    ///   - maxBodySize: The largest body `/echo` and `/upload` read (413, and the connection closed, past
    ///     it); nil, the default, for no limit. `serve --max-body` sets it, and with it the server's
    ///     `HTTPServer.Configuration.maxBodySize`, which limits the routes whose body is collected.
    ///   - webSocket: The `/ws/echo` route's limits (its largest message: `serve --ws-max-message`).
    ///   - filesRoot: A directory served under `/files/` (`serve --root`): validators, ranges and
    ///     precompressed variants, `Cache-Control: no-cache` (revalidated at each use); nil for none.
    ///     The files, the page and its job events are compressed (``CompressionMiddleware``).
    /// - Returns: A router with exactly the demo's routes.
    public static func router(work: SyntheticWork, jobs: DemoJobs = DemoJobs(), maxBodySize: Int? = nil,
                              webSocket: WebSocketConfiguration = WebSocketConfiguration(), filesRoot: String? = nil) -> HTTPRouter {
        var router = HTTPRouter()
        // `?items=N` sets the page's "Items per job" field, which the jobs it starts (`?start=`) run.
        // The page, its events and the files are compressed (zstd, br or gzip, as the browser accepts); the
        // benchmark routes (/hello, /echo, /stream) are not, so their figures stay the server's own.
        router.group("") { compressed in
            compressed.use(CompressionMiddleware())
            compressed.get("/") { request in
                HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache"],
                                   body: .bytes(LivePage.html(items: LivePage.itemsPerJob(query: request.query("items")))))
            }
            compressed.get("/jobs/:id/events") { request in
                guard let job = request.parameters["id"].flatMap({ Int($0) }).flatMap(jobs.job) else {
                    return .text("no such job\n", status: .notFound)
                }
                // Ids go on across connections: a reconnect gets only what follows its Last-Event-ID, and 204
                // once it has seen the final event (which stops an EventSource that does not close itself).
                return .progressEvents(job.progress, resumingAfter: request.head.headerFields[.lastEventID])
            }
            if let filesRoot {
                compressed.files(filesPrefix, root: filesRoot, options: HTTPFileOptions(cacheControl: "no-cache"))
            }
        }
        // The page declares an empty icon, so browsers do not ask; one that does gets no icon, not a 404.
        router.get("/favicon.ico") { _ in
            HTTPServerResponse(status: .noContent, headerFields: [.cacheControl: "max-age=86400"])
        }
        // The live page's jobs: started here, on this connection's loop, and watched from any connection.
        router.post("/jobs") { request in
            guard let items = request.query("items").flatMap({ Int($0) }), (0...100_000_000).contains(items) else {
                return .text("items=N (0...100000000) required\n", status: .badRequest)
            }
            do {
                let id = try jobs.start(items: items, work: work, on: request.loop)
                return HTTPServerResponse(status: .created, headerFields: [.contentType: "application/json"],
                                          body: .string("{\"id\":\(id),\"items\":\(items)}"))
            } catch {
                return .text("cannot start a job: \(error)\n", status: .serviceUnavailable)
            }
        }
        router.webSocket("/ws/jobs/:id", .inTask, shouldUpgrade: { request in
            request.parameters["id"].flatMap({ Int($0) }).flatMap(jobs.job) == nil ? .refuse(status: .notFound) : .accept
        }) { request, socket in
            guard let job = request.parameters["id"].flatMap({ Int($0) }).flatMap(jobs.job) else { return }
            try await socket.send(progress: job.progress)
        }
        // 202 when this request (or an earlier one) cancelled the running job; 409 when it had ended first.
        router.post("/jobs/:id/cancel") { request in
            guard let id = request.parameters["id"].flatMap({ Int($0) }), let job = jobs.job(id) else {
                return .text("no such job\n", status: .notFound)
            }
            // A job that ended before this request, or as it came (the cancel then finds it completed), is
            // not cancelled by it. The demo's jobs do not throw: a job that ended was cancelled or finished.
            let endedFirst = job.isFinished
            if !endedFirst { job.cancel() }
            if !endedFirst && job.isCancelled { return .text("cancelled\n", status: .accepted) }
            let state = job.isCancelled ? "cancelled" : "finished"
            return .text("job \(id) has already finished: \(state) (\(job.progress.description))\n", status: .conflict)
        }
        router.get("/hello") { _ in
            HTTPServerResponse(status: .ok, headerFields: plainText, body: .bytes(hello))
        }
        // Any size in constant memory: each chunk of the request body goes back out as a chunk of the
        // response body; the client's reading paces the server's reading of the upload. Under a limit, a
        // sized body streams the same way (its `Content-Length` was checked at the head), but a chunked
        // one is read whole first (at most the limit): only its end tells whether it fits, and its 413
        // must come before a 200.
        router.on(.post, "/echo", bodyLimit: maxBodySize) { request, body in
            var fields = HTTPFields()
            if let type = request.head.headerFields[.contentType] { fields[.contentType] = type }
            if maxBodySize != nil && request.head.headerFields[.contentLength] == nil {
                let whole = try await body.collect(upTo: .max)  // the route's limit ends it with 413 past maxBodySize
                return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(whole))
            }
            return HTTPServerResponse(status: .ok, headerFields: fields, body: .stream { writer in
                for try await chunk in body { try await writer.write(chunk) }
            })
        }
        // Counts and hashes the body as it arrives: "received N sha256 HEX".
        router.on(.post, "/upload", bodyLimit: maxBodySize) { _, body in
            var digest = SHA256Digest()
            var count = 0
            for try await chunk in body {
                count += chunk.count
                chunk.withUnsafeBytes { digest.update($0) }
            }
            return .text("received \(count) sha256 \(digest.hexDigest())\n")
        }
        router.get("/stream") { request in
            guard let count = request.query("bytes").flatMap({ Int($0) }), count >= 0 else {
                return .text("bytes=N required\n", status: .badRequest)
            }
            return HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .stream { writer in
                let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
                var left = count
                while left > 0 {
                    let size = min(left, chunk.count)
                    try await writer.write(size == chunk.count ? chunk : Array(chunk[..<size]))
                    left -= size
                }
            })
        }
        router.get("/work", .inTask) { request in
            guard let items = request.query("items").flatMap({ Int($0) }), items >= 0 else {
                return .text("items=N required\n", status: .badRequest)
            }
            // Keeps the work's result observable so the optimiser cannot drop it (loop thread only).
            let sink = LoopBound(UInt64(0), on: request.loop)
            // The budget is per job and iteration: 1 ms each keeps four concurrent jobs within ~4 ms a turn.
            try await request.loop.process(0..<items, budget: workBudget, each: { item in sink.value &+= work(item) })
            return .text("processed \(items)")
        }
        // A WebSocket that sends every message back (permessage-deflate when the client offers it); the
        // client's reading paces the echo: `send` waits while the output is above the high-water mark.
        router.webSocket("/ws/echo", .inTask, configuration: webSocket) { _, socket in
            for try await message in socket.messages { try await socket.send(message) }
        }
        return router
    }

    static let hello = Bytes("Hello, World!")
    /// Built once: a fields literal per response costs about 800 instructions.
    static let plainText: HTTPFields = [.contentType: "text/plain"]

    /// The time each `/work` job may take per loop iteration.
    public static let workBudget = ProcessingBudget.time(.milliseconds(1))
}
