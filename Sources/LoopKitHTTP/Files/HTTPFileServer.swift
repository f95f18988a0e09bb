#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

/// Answers `GET` and `HEAD` for the files under a root: what ``HTTPRouter/files(_:root:options:)`` routes to.
///
/// Every file-system call runs on the work pool through LoopKitNet's ``FileSystem`` (on the loop thread only
/// the one `stat(2)` that checks a kept small file, below), and the body streams from the open file with the connection's backpressure, framed by its
/// `Content-Length`: the same over HTTP/1.1 and HTTP/2. On a plain HTTP/1 connection a body (or a single
/// range) that is not compressed goes with `sendfile(2)` from the loop, with no read on the pool;
/// over TLS, HTTP/2, for multiple ranges and behind ``CompressionMiddleware`` it is read in chunks. A file of
/// at most ``smallFileLimit`` bytes is read whole in the pool task that opens it, and goes with the head in
/// one write. A file that shrinks while it is sent ends the connection (the client sees a body shorter than
/// its length); one that grows is sent as it was.
///
/// Such a small file, once read, is kept in the server's ``HTTPFileCache`` with its validators and fields
/// (up to ``HTTPFileOptions/cachedFileSizeLimit`` bytes, ``HTTPFileOptions/cachedPathLimit`` paths), and
/// so is a precompressed variant sent and the variants found absent: the next request for it is answered
/// on the loop thread, inline (``respondInline(_:)``), after a `stat(2)` of the path (and of each variant
/// path its choice depends on) has told that they are unchanged; any other request goes to
/// ``respond(_:)`` in a task.
///
/// A plain value; safe from any thread.
struct HTTPFileServer: Sendable {
    /// The directory served, without a trailing slash.
    let root: String
    let options: HTTPFileOptions
    /// The small files sent whole, shared by every loop the route answers on; nil when the options turn
    /// the cache off.
    let cache: HTTPFileCache?
    /// The largest file read whole in the task that opens it: ``smallFileLimit``, or the cache's limit
    /// when larger.
    let readWholeLimit: Int

    init(root: String, options: HTTPFileOptions) {
        var root = root
        while root.count > 1, root.hasSuffix("/") { root.removeLast() }
        self.root = root
        self.options = options
        let caches = options.cachedFileSizeLimit > 0 && options.cachedPathLimit > 0
        cache = caches ? HTTPFileCache(pathLimit: options.cachedPathLimit, sizeLimit: options.cachedFileSizeLimit) : nil
        readWholeLimit = max(Self.smallFileLimit, caches ? options.cachedFileSizeLimit : 0)
    }

    /// A file's validators and the fields every response about it carries: `ETag`, `Last-Modified`, and
    /// the route's `Cache-Control` and `Vary`.
    struct Validators: Sendable {
        let tag: HTTPEntityTag
        /// The modification time, in seconds since 1970.
        let modified: Int
        let fields: HTTPFields
    }

    /// The validators of the file `info` describes.
    func validators(of info: FileInfo) -> Validators {
        let tag = HTTPEntityTag(inode: info.inode, size: info.size, modificationTime: info.modificationTime)
        let modified = Int(info.modificationTime.components.seconds)
        var fields = HTTPFields()
        fields[.eTag] = tag.description
        fields[.lastModified] = HTTPDateFormat.string(forSeconds: modified)
        if let cacheControl = options.cacheControl { fields[.cacheControl] = cacheControl }
        if !options.precompressed.isEmpty { fields[.vary] = "Accept-Encoding" }
        return Validators(tag: tag, modified: modified, fields: fields)
    }

    /// Answers from the cache, on the loop thread, a request for a file held there that is still the same
    /// on disk (or for its precompressed variant, ``respondInlineWithVariant(_:key:cache:accept:)``); nil
    /// for any other (``respond(_:)`` then). Loop thread (it blocks for one `stat(2)`, or a few).
    func respondInline(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        guard let cache, let key = request.parameters["path"] else { return nil }
        // The usual request, a plain `GET` of the file: answered without the head built.
        let plainGet = request.method == .get && !request.hasField(namedAnyOf: Self.fieldsRead)
        if !plainGet, let field = request.head.headerFields[.acceptEncoding] {
            let accept = HTTPAcceptEncoding(field)
            if !Self.takesIdentityOnly(accept, options: options) {
                return options.precompressed.isEmpty ? nil : respondInlineWithVariant(request, key: key, cache: cache, accept: accept)
            }
        }
        guard let entry = cache.entry(for: key) else { return nil }
        guard entry.isCurrent else {
            cache.remove(key, ifItIs: entry)
            return nil
        }
        if plainGet, entry.info.size > 0 {
            return HTTPServerResponse(status: .ok, encoded: entry.wholeFieldLines, body: .bytes(entry.contents))
        }
        return response(to: request, from: entry)
    }

    /// Answers from the path's record a request whose `Accept-Encoding` takes a precompressed variant: the
    /// coding it prefers among the variants recorded present, after a `stat(2)` of the file itself and of
    /// each variant path ranked at or above the one chosen has found them as recorded. Nil (the task then)
    /// when anything differs, a variant the choice depends on was not looked at yet, or nothing is
    /// acceptable (`406`). Loop thread.
    private func respondInlineWithVariant(_ request: HTTPServerRequest, key: Substring, cache: HTTPFileCache,
                                          accept: HTTPAcceptEncoding) -> HTTPServerResponse? {
        guard let record = cache.record(for: key), let base = record.base, FileSystem.identity(at: record.path) == base else {
            return nil
        }
        // The candidates still in the running, by their place in the route's order.
        var candidates = options.precompressed.indices.filter { accept.quality(of: options.precompressed[$0].token) > 0 }
        while true {
            switch accept.preferred(among: candidates.map { options.precompressed[$0] }) {
            case .notAcceptable:
                return nil
            case .identity:
                guard let plain = record.plain, plain.identity == base else { return nil }
                return response(to: request, from: plain)
            case .coding(let coding):
                guard let chosen = options.precompressed.firstIndex(of: coding), let variant = record.variants[chosen] else { return nil }
                switch variant {
                case .absent(let identity):
                    guard FileSystem.identity(at: record.variantPaths[chosen]) == identity else { return nil }
                    candidates.removeAll { $0 == chosen }
                case .present(let entry):
                    guard entry.isCurrent else { return nil }
                    return response(to: request, from: entry)
                }
            }
        }
    }

    /// The response to `request` of a kept file found current.
    private func response(to request: HTTPServerRequest, from entry: HTTPFileCache.Entry) -> HTTPServerResponse {
        if request.head.method == .get, entry.info.size > 0,
           case .proceed(rangeApplies: false) = HTTPPreconditions.evaluate(request.head.headerFields, tag: entry.validators.tag,
                                                                           modified: entry.validators.modified) {
            return HTTPServerResponse(status: .ok, encoded: entry.wholeFieldLines, body: .bytes(entry.contents))
        }
        return response(to: request, body: .contents(entry.contents), info: entry.info, name: entry.name, coding: entry.coding,
                        validators: entry.validators)
    }

    /// The request fields a file's response depends on: with none of them, a `GET` gets the whole file.
    private static let fieldsRead = HTTPFieldNames([.acceptEncoding, .range, .ifMatch, .ifNoneMatch, .ifModifiedSince,
                                                    .ifUnmodifiedSince, .ifRange])

    /// Whether the identity is what `accept` prefers, and no precompressed variant is acceptable to it.
    private static func takesIdentityOnly(_ accept: HTTPAcceptEncoding, options: HTTPFileOptions) -> Bool {
        guard case .identity = accept.preferred(among: []) else { return false }
        return !options.precompressed.contains(where: { accept.quality(of: $0.token) > 0 })
    }

    /// A file that changed size while it was being sent.
    struct FileChanged: Error, CustomStringConvertible {
        let path: String
        var description: String { "\(path) shrank while it was being sent" }
    }

    /// The file found for a request: its path, its name (for the type), and its variants' paths.
    private struct Target {
        var path: String
        var name: Substring
    }

    /// Answers a request routed to the files; the remainder of its path is the `path` parameter.
    func respond(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let files = FileSystem(loop: request.loop)
        let relative: String
        do {
            relative = try HTTPFilePath.relativePath(request.parameters["path"] ?? "", servesHiddenFiles: options.servesHiddenFiles)
        } catch .malformed {
            return .text("bad path\n", status: .badRequest)
        } catch {
            return Self.notFound
        }
        var path = relative.isEmpty ? root : root + "/" + relative
        let accept = HTTPAcceptEncoding(request.head.headerFields[.acceptEncoding])
        // The common request, for a file with no variant the client takes: opened at once, with no `stat`
        // before (and kept in the cache when small). Anything else (a directory, a refusal, an error) is
        // looked at step by step below.
        if Self.takesIdentityOnly(accept, options: options),
           let answer = try await send(path, coding: nil, to: request, files: files, nilUnlessSent: true,
                                       cacheKey: request.parameters["path"]) {
            return answer
        }
        guard var found = try await Self.status(at: path, files) else { return Self.notFound }
        var cacheKey = cache == nil ? nil : request.parameters["path"]
        if found.info.kind == .directory {
            guard request.path.hasSuffix("/") else { return redirectToDirectory(request) }
            guard let indexFile = options.indexFile else { return Self.notFound }
            path += "/" + indexFile
            guard let index = try await Self.status(at: path, files) else { return Self.notFound }
            found = index
            cacheKey = nil  // a directory's index is not kept
        }
        guard found.info.kind == .regularFile else { return Self.notFound }

        // The variants there are (regular files beside the file), then the coding the client prefers.
        var variants: [HTTPContentCoding] = []
        var absent: [(index: Int, identity: FileIdentity?)] = []
        for (index, coding) in options.precompressed.enumerated() where accept.quality(of: coding.token) > 0 {
            let variant = try await Self.status(at: path + "." + coding.fileExtension, files)
            if let variant, variant.info.kind == .regularFile {
                variants.append(coding)
            } else {
                absent.append((index, variant?.identity))
            }
        }
        // What was found is recorded for the next request (each use checks it again): the file's identity,
        // and the variants found absent; a variant sent whole is recorded by `send`.
        if let cache, let cacheKey, !variants.isEmpty || !absent.isEmpty {
            cache.update(cacheKey, paths: recordPaths(path)) { record in
                record.base = found.identity
                for (index, identity) in absent { record.variants[index] = .absent(identity) }
            }
        }
        let coding: HTTPContentCoding?
        switch accept.preferred(among: variants) {
        case .coding(let chosen): coding = chosen
        case .identity: coding = nil
        case .notAcceptable: return .text("no acceptable content coding\n", status: .notAcceptable)
        }
        return try await send(path, coding: coding, to: request, files: files, nilUnlessSent: false, cacheKey: cacheKey)
            ?? Self.notFound
    }

    /// The paths a cache record of the file at `path` checks: its own and its variants', in the route's order.
    private func recordPaths(_ path: String) -> (path: String, variants: [String]) {
        (path, options.precompressed.map { path + "." + $0.fileExtension })
    }

    /// Sends the file at `path` (its variant of `coding`, when given). Links must not lead out of the root
    /// (checked on the pool: realpath walks the file system), then the file is opened and, when small, read
    /// whole: one task on the pool. With `nilUnlessSent`, anything but a regular file sent or checked
    /// (`304`, `412`, `416`) returns nil rather than its answer. A file read whole is kept in the cache
    /// under `cacheKey`, when given.
    private func send(_ path: String, coding: HTTPContentCoding?, to request: HTTPServerRequest, files: FileSystem,
                      nilUnlessSent: Bool, cacheKey: Substring? = nil) async throws -> HTTPServerResponse? {
        let name = path[(path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex)...]
        let servedPath = coding.map { path + "." + $0.fileExtension } ?? path
        let root = root, checksRoot = !options.followsSymbolicLinksOutOfRoot
        let found: FileSystem.FileToSend?
        do {
            found = try await files.openToSend(servedPath, readingWholeUpTo: readWholeLimit) {
                guard checksRoot else { return true }
                guard let canonicalRoot = HTTPFilePath.canonical(root) else { return false }
                return HTTPFilePath.isInside(servedPath, canonicalRoot: canonicalRoot)
            }
        } catch let error as FileError {
            return nilUnlessSent ? nil : try Self.refusal(for: error)
        }
        switch found {
        case nil:
            return nilUnlessSent ? nil : Self.notFound
        case .read(let contents, let opened, let identity)?:
            let validators = validators(of: opened)
            // A file changed within its timestamps' granularity is not kept: a rewrite of the same size
            // could follow unseen by the identity the cache checks.
            if let cache, let cacheKey, contents.count <= cache.sizeLimit, !identity.changedTooRecentlyToKeep {
                let entry = HTTPFileCache.Entry(path: servedPath, identity: identity, info: opened, contents: contents, name: name,
                                                coding: coding, validators: validators,
                                                contentType: options.contentTypes.type(forFileNamed: name))
                cache.update(cacheKey, paths: recordPaths(path)) { record in
                    if let coding {
                        if let index = options.precompressed.firstIndex(of: coding) { record.variants[index] = .present(entry) }
                    } else {
                        record.plain = entry
                    }
                }
            }
            return response(to: request, body: .contents(contents), info: opened, name: name, coding: coding, validators: validators)
        case .open(let file, let opened)?:  // the file as opened: its validators describe the bytes sent
            guard opened.kind == .regularFile else {
                await Self.close(file, logger: request.logger)
                return nilUnlessSent ? nil : Self.notFound
            }
            let response = self.response(to: request, body: .file(file), info: opened, name: name, coding: coding,
                                         validators: validators(of: opened))
            if request.head.method == .head || response.body.isBytes { await Self.close(file, logger: request.logger) }  // no stream reads it
            return response
        }
    }

    /// The largest file read whole on the pool and sent with its response's head in one write, rather
    /// than sent from its descriptor (`sendfile(2)`, or reads in chunks) after the head: no task on the
    /// pool to close it, and one write instead of two.
    static let smallFileLimit = 16 * 1024

    /// Where a response's body comes from.
    enum Source {
        /// The open file, read (or sent with `sendfile(2)`) as the body streams.
        case file(OpenFile)
        /// The whole file, read already.
        case contents(Bytes)
    }

    /// The response for an open file: `304`, `412`, `416`, `206` or `200`, with its validators.
    private func response(to request: HTTPServerRequest, body source: Source, info: FileInfo, name: Substring,
                          coding: HTTPContentCoding?, validators: Validators) -> HTTPServerResponse {
        let tag = validators.tag
        let modified = validators.modified
        var fields = validators.fields

        let rangeApplies: Bool
        switch HTTPPreconditions.evaluate(request.head.headerFields, tag: tag, modified: modified) {
        case .notModified: return HTTPServerResponse(status: .notModified, headerFields: fields)
        case .failed: return HTTPServerResponse(status: .preconditionFailed, headerFields: fields)
        case .proceed(let applies): rangeApplies = applies
        }
        let contentType = options.contentTypes.type(forFileNamed: name)
        fields[.acceptRanges] = "bytes"
        if let coding { fields[.contentEncoding] = coding.token }
        let size = info.size
        var ranges = [0..<size]
        var status = HTTPResponse.Status.ok
        var parts: (heads: [Bytes], end: Bytes)?
        if rangeApplies, let range = request.head.headerFields[.range] {
            switch HTTPByteRanges.resolve(range, length: size, limit: options.maxRanges) {
            case .ignored:
                break
            case .unsatisfiable:
                fields[.contentRange] = "bytes */\(size)"
                return HTTPServerResponse(status: .rangeNotSatisfiable, headerFields: fields)
            case .satisfiable(let satisfiable):
                status = .partialContent
                ranges = satisfiable
                if satisfiable.count == 1 {
                    fields[.contentRange] = "bytes \(satisfiable[0].lowerBound)-\(satisfiable[0].upperBound - 1)/\(size)"
                } else {
                    let boundary = Self.boundary()
                    parts = (satisfiable.map { range in
                        Bytes("\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)\r\n\r\n")
                    }, Bytes("\r\n--\(boundary)--\r\n"))
                    fields[.contentType] = "multipart/byteranges; boundary=\(boundary)"
                }
            }
        }
        if parts == nil { fields[.contentType] = contentType }
        let length = ranges.reduce(Int64(0)) { $0 + Int64($1.count) }
            + Int64(parts.map { $0.heads.reduce(0) { $0 + $1.count } + $0.end.count } ?? 0)
        fields[.contentLength] = String(length)
        if request.head.method == .head || length == 0 {
            return HTTPServerResponse(status: status, headerFields: fields, body: .bytes(Bytes()))
                .withDeclaredLength(length)
        }
        let file: OpenFile
        switch source {
        case .contents(let contents):
            fields[.contentLength] = nil  // the server frames a body of bytes itself
            return HTTPServerResponse(status: status, headerFields: fields,
                                      body: .bytes(Self.body(of: contents, ranges: ranges, parts: parts)))
        case .file(let open):
            file = open
        }
        let chunkSize = options.chunkSize
        let sentRanges = ranges, sentParts = parts, logger = request.logger
        return HTTPServerResponse(status: status, headerFields: fields, body: .stream { writer in
            do {
                for (index, range) in sentRanges.enumerated() {
                    if let sentParts { try await writer.write(sentParts.heads[index]) }
                    if sentParts == nil, let sent = try await Self.sendDirectly(range, of: file, to: writer) {
                        guard sent == range.count else { throw FileChanged(path: file.path) }
                        continue
                    }
                    try await Self.send(range, of: file, chunkSize: chunkSize, to: writer)
                }
                if let sentParts { try await writer.write(sentParts.end) }
            } catch {
                await Self.close(file, logger: logger)
                throw error
            }
            await Self.close(file, logger: logger)
        })
    }

    /// The body of `ranges` of a file read whole: the range itself, or the parts of a `multipart/byteranges`.
    private static func body(of contents: Bytes, ranges: [Range<Int64>], parts: (heads: [Bytes], end: Bytes)?) -> Bytes {
        guard let parts else { return ranges.count == 1 ? contents[Int(ranges[0].lowerBound)..<Int(ranges[0].upperBound)] : contents }
        var joined: [Bytes] = []
        for (index, range) in ranges.enumerated() {
            joined.append(parts.heads[index])
            joined.append(contents[Int(range.lowerBound)..<Int(range.upperBound)])
        }
        joined.append(parts.end)
        return Bytes(joining: joined)
    }

    /// Sends `range` of `file` with `sendfile(2)` when the writer goes straight to a plain socket; returns
    /// the bytes sent, or nil when the writer cannot (TLS, HTTP/2, a compressed body).
    private static func sendDirectly(_ range: Range<Int64>, of file: OpenFile, to writer: HTTPBodyWriter) async throws -> Int64? {
        guard let descriptor = file.descriptor else { return nil }
        return try await writer.sendFile(descriptor, from: range.lowerBound, count: Int64(range.count))
    }

    /// Sends `range` of `file`, read ahead through ``OpenFile/chunks(chunkSize:readAhead:from:)``.
    private static func send(_ range: Range<Int64>, of file: OpenFile, chunkSize: Int, to writer: HTTPBodyWriter) async throws {
        var remaining = range.count
        guard remaining > 0 else { return }
        let size = min(chunkSize, remaining)
        let readAhead = min(FileChunks.defaultReadAhead, (remaining + size - 1) / size)
        for try await chunk in file.chunks(chunkSize: size, readAhead: max(1, readAhead), from: range.lowerBound) {
            let take = min(chunk.count, remaining)
            try await writer.write(take == chunk.count ? chunk : chunk[chunk.startIndex..<(chunk.startIndex + take)])
            remaining -= take
            if remaining == 0 { return }
        }
        throw FileChanged(path: file.path)
    }

    /// Closes a served file; a failure of `close(2)` (the descriptor is released all the same) is logged.
    private static func close(_ file: OpenFile, logger: Logger) async {
        do {
            try await file.close()
        } catch {
            logger.warning("closing a served file failed", metadata: ["path": "\(file.path)", "error": "\(error)"])
        }
    }

    /// `stat` of `path`, with its identity, or nil when there is nothing to serve there (no such file, a
    /// file where a directory was expected, no permission).
    private static func status(at path: String, _ files: FileSystem) async throws -> (info: FileInfo, identity: FileIdentity)? {
        do {
            return try await files.infoAndIdentity(at: path)
        } catch let error as FileError where [ENOENT, ENOTDIR, EACCES, ENAMETOOLONG, ELOOP].contains(error.code) {
            return nil
        }
    }

    private static func refusal(for error: FileError) throws -> HTTPServerResponse {
        switch error.code {
        case EACCES: return .text("forbidden\n", status: .forbidden)
        case ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP, EISDIR: return notFound
        default: throw error
        }
    }

    private static var notFound: HTTPServerResponse { .text("not found\n", status: .notFound) }

    /// `301` to the directory's path with its slash (the query kept), so that its page's relative links work.
    private func redirectToDirectory(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let target = request.head.path ?? "/"
        let query = target.firstIndex(of: "?").map { String(target[$0...]) } ?? ""
        return HTTPServerResponse(status: .movedPermanently, headerFields: [.location: String(request.path) + "/" + query])
    }

    /// A multipart boundary: 24 random hexadecimal digits, which no file part is expected to hold.
    private static func boundary() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<3).map { _ in
            let word = String(generator.next() as UInt32, radix: 16)
            return String(repeating: "0", count: 8 - word.count) + word
        }.joined()
    }
}

extension HTTPResponseBody {
    /// Whether the body is bytes known up front (not a stream).
    var isBytes: Bool {
        if case .bytes = storage { return true }
        return false
    }
}

extension HTTPServerResponse {
    /// A bodiless answer (`HEAD`, an empty file) that keeps the `Content-Length` of the body it describes:
    /// sent as a stream that writes nothing, which the codecs frame by the declared length.
    fileprivate func withDeclaredLength(_ length: Int64) -> HTTPServerResponse {
        guard length > 0 else { return self }
        var response = self
        response.body = .stream { _ in }
        return response
    }
}
