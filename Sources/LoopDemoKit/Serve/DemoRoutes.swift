import HTTPTypes
import LoopKit
import LoopKitHTTP

/// The routes of `LoopDemo serve`: `/hello`, `/echo`, `/stream`, `/work`; anything else is 404.
public enum DemoRoutes {
    /// The router.
    ///
    /// - Parameter work: The per-item work of `/work` (about 1 µs per item once calibrated).
    /// - Returns: A router with exactly the demo's four routes.
    public static func router(work: SyntheticWork) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/hello") { _ in
            HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .bytes(hello))
        }
        router.post("/echo") { request in
            var fields = HTTPFields()
            if let type = request.head.headerFields[.contentType] { fields[.contentType] = type }
            return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(request.body))
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
        router.get("/work") { (request: HTTPServerRequest) async throws -> HTTPServerResponse in
            guard let items = request.query("items").flatMap({ Int($0) }), items >= 0 else {
                return .text("items=N required\n", status: .badRequest)
            }
            // Keeps the work's result observable so the optimiser cannot drop it (loop thread only).
            let sink = LoopBound(UInt64(0), on: request.loop)
            // The budget is per job and iteration: 1 ms each keeps four concurrent jobs within ~4 ms a turn.
            try await request.loop.process(0..<items, budget: workBudget, each: { item in sink.value &+= work(item) })
            return .text("processed \(items)")
        }
        return router
    }

    static let hello = Array("Hello, World!".utf8)

    /// The time each `/work` job may take per loop iteration.
    public static let workBudget = ProcessingBudget.time(.milliseconds(1))
}
