extension HTTPRouter {
    /// Serves the files under `root` at `prefix`: `GET /static/css/site.css` sends `root/css/site.css`.
    ///
    /// ```swift
    /// var router = HTTPRouter()
    /// router.files("/static", root: "/srv/www")
    /// ```
    /// `GET` and `HEAD` only (other methods get `405` with `Allow`, `OPTIONS` gets `204`), with a
    /// `Content-Type` from ``HTTPFileOptions/contentTypes``, a strong `ETag` (inode, size, modification
    /// time) and `Last-Modified`, the conditional requests of RFC 9110 §13 (`If-None-Match` and
    /// `If-Modified-Since` give `304`, `If-Match` and `If-Unmodified-Since` `412`), byte ranges (§14: one
    /// range is `206` with `Content-Range`, several a `multipart/byteranges` body, none satisfiable `416`
    /// with `Content-Range: bytes */length`; `If-Range` sends the whole file when its validator no longer
    /// matches), and the precompressed variant (`file.br`, `.zst`, `.gz`) the client's `Accept-Encoding`
    /// prefers, with `Vary: Accept-Encoding` and the variant's own `ETag`. A directory's path without its
    /// slash is redirected (`301`) to the path with it, which serves the index file.
    ///
    /// Nothing outside `root` is served: a `.` or `..` segment, written or percent-encoded, an encoded `/`
    /// or NUL is `400`; a dot file and a symbolic link leading out of the root are `404` unless the options
    /// allow them. Files are read on the work pool (LoopKitNet's ``FileSystem``) and streamed with the
    /// connection's backpressure, over HTTP/1.1 and HTTP/2 alike. A small file (16 KiB at most) read whole
    /// is kept with its fields, and answered again on the loop thread, with no task, for as long as one
    /// `stat(2)` a request finds it unchanged (behind inline middleware only; an async one puts every
    /// request in a task).
    ///
    /// - Parameters:
    ///   - prefix: The path the files are under (`/static`; `/` for the whole site).
    ///   - root: The directory served.
    ///   - options: Index file, `Cache-Control`, the range limit, the content types, variants, links.
    ///
    /// Build the router on any thread.
    public mutating func files(_ prefix: String, root: String, options: HTTPFileOptions = HTTPFileOptions()) {
        let server = HTTPFileServer(root: root, options: options)
        let base = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        add(.get, base + "/*path", .inlineOrTask(HTTPInlineOrTaskRoute(inline: { request in server.respondInline(request) },
                                                                       inTask: { request in try await server.respond(request) })))
    }
}
