import CCurl
#if canImport(Glibc)
import Glibc
#endif

// The C boundary of LoopKitHTTPClient: the only file that imports CCurl. libcurl's multi-socket interface
// (what curl's docs/examples/multi-event.c does with libevent): curl tells the client which sockets to watch
// and when to call it back (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION); the client's watches and timer
// call curl_multi_socket_action; finished transfers come out of curl_multi_info_read. No curl call here is
// made from inside one of curl's own callbacks. Every type here is used on its client's loop thread only.

/// libcurl's process-wide state, set up once (curl_global_init is not safe to race; a `static let` runs once).
enum CurlGlobal {
    static let isReady: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// The text curl gives for a transfer's result code (curl_easy_strerror).
    static func describe(_ code: Int32) -> String { String(cString: curl_easy_strerror(CURLcode(UInt32(code)))) }

    /// curl's version text, such as `libcurl/7.88.1 OpenSSL/3.0.17 zlib/1.2.13 brotli/1.0.9 nghttp2/1.52.0`.
    static var version: String { String(cString: curl_version()) }
}

/// What a transfer's write callback answers curl.
enum CurlWriteAnswer {
    /// All the bytes were taken.
    case took
    /// None were taken: curl keeps them and pauses receiving until ``CurlEasy/resume()``.
    case pause
    /// The transfer stops (curl reports CURLE_WRITE_ERROR; the transfer knows why).
    case abort
}

/// What a transfer's read callback answers curl.
enum CurlReadAnswer {
    /// `count` bytes were written into the buffer; 0 is the end of the body.
    case wrote(Int)
    /// No bytes yet: curl pauses sending until ``CurlEasy/resume()``.
    case pause
    /// The transfer stops (CURLE_ABORTED_BY_CALLBACK).
    case abort
}

/// A transfer's side of curl's callbacks. Called on the loop thread, inside curl: no curl call from here.
protocol CurlTransferDelegate: AnyObject {
    /// One header line of a response (status line, field, the blank line ending the head), CRLF included.
    func curlReceivedHeaderLine(_ line: UnsafeRawBufferPointer)
    /// Decoded body bytes.
    func curlReceivedBody(_ bytes: UnsafeRawBufferPointer) -> CurlWriteAnswer
    /// Request body bytes wanted, at most `buffer.count`.
    func curlWantsBody(into buffer: UnsafeMutableRawBufferPointer) -> CurlReadAnswer
    /// curl rewinds the request body to `offset` (a redirect that keeps the body, a retry). False: it cannot.
    func curlRewindsBody(to offset: Int) -> Bool
    /// curl is about to send a request for the transfer (its first, a redirect's, a retry's), on a connection
    /// (CURLOPT_PREREQFUNCTION, set by ``CurlEasy/countRequestsSent()``).
    func curlWillSendRequest()
}

/// The multi handle's side of curl's callbacks. Called on the loop thread, inside curl.
protocol CurlMultiDelegate: AnyObject {
    /// Watch `fd` for `readable`/`writable`; both false: stop watching it (its connection went idle in the
    /// cache, or curl is about to close it).
    func curlWatches(_ fd: Int32, readable: Bool, writable: Bool)
    /// Call ``CurlMulti/timedOut()`` after `milliseconds`; nil: cancel the timer.
    func curlWantsTimer(milliseconds: Int?)
    /// curl opened `fd` for a connection (CURLOPT_OPENSOCKETFUNCTION).
    func curlOpenedSocket(_ fd: Int32)
    /// curl closes `fd`, a connection's socket, once this returns (CURLOPT_CLOSESOCKETFUNCTION): nothing may
    /// watch it after.
    func curlClosesSocket(_ fd: Int32)
}

/// A finished transfer as curl_multi_info_read reports it.
struct CurlCompletion {
    let handle: UnsafeMutableRawPointer
    let code: Int32
}

/// One curl easy handle: a request's options and callbacks. Loop thread only.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// Storage curl keeps pointers to (CURLOPT_ERRORBUFFER).
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// The transfer curl's callbacks reach (weak: the transfer owns the handle).
    private weak var delegate: (any CurlTransferDelegate)?

    /// The most body bytes curl reads from the socket and hands the write callback at once
    /// (CURLOPT_BUFFERSIZE; curl's default is 16 KiB). A 1 GiB download took 0.5–0.8 s of the client's CPU
    /// at 16 KiB, 0.34–0.47 s at 256 KiB (`make bench-client`). The buffer is a `malloc` of this size per
    /// easy handle; the pages a small response never reaches stay untouched.
    static let receiveBufferSize = 256 * 1024

    init?() {
        guard CurlGlobal.isReady, let handle = curl_easy_init() else { return nil }
        self.handle = handle
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = lk_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = lk_curl_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, Self.receiveBufferSize)
        if getenv("LOOPKIT_CURL_VERBOSE") != nil { _ = lk_curl_easy_setopt_long(handle, CURLOPT_VERBOSE, 1) }
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// The detail curl wrote for the last failure (CURLOPT_ERRORBUFFER), or "".
    var errorDetail: String { String(cString: errorBuffer) }

    /// Sets a string option (curl copies it). False when curl refuses it.
    @discardableResult
    func set(_ option: CURLoption, _ value: String) -> Bool {
        value.withCString { lk_curl_easy_setopt_pointer(handle, option, $0) } == CURLE_OK
    }

    /// Sets a long option. False when curl refuses it.
    @discardableResult
    func set(_ option: CURLoption, _ value: Int) -> Bool {
        lk_curl_easy_setopt_long(handle, option, value) == CURLE_OK
    }

    /// Sets a curl_off_t option. False when curl refuses it.
    @discardableResult
    func set(_ option: CURLoption, offset value: Int) -> Bool {
        lk_curl_easy_setopt_off(handle, option, value) == CURLE_OK
    }

    /// Unsets a string option (a null pointer: curl's default).
    func unset(_ option: CURLoption) { _ = lk_curl_easy_setopt_pointer(handle, option, nil) }

    /// Undoes what a request set on a handle that carried one before (``ClientEngine`` reuses a handle
    /// whose transfer succeeded): back to a `GET` with no body, no custom method, no deadline, and no
    /// stale failure text. The options of the client's configuration stay as they were set.
    func prepareForReuse() {
        set(CURLOPT_HTTPGET, 1)  // also clears CURLOPT_NOBODY and uploading
        unset(CURLOPT_CUSTOMREQUEST)
        set(CURLOPT_POSTFIELDSIZE_LARGE, offset: -1)
        set(CURLOPT_TIMEOUT_MS, 0)
        errorBuffer[0] = 0
    }

    func setURL(_ url: String) -> Bool { set(CURLOPT_URL, url) }
    func setMethodGET() { set(CURLOPT_HTTPGET, 1) }
    func setMethodHEAD() { set(CURLOPT_NOBODY, 1) }
    func setCustomMethod(_ method: String) { set(CURLOPT_CUSTOMREQUEST, method) }
    /// The deadline of the whole transfer (CURLOPT_TIMEOUT_MS); ``prepareForReuse()`` clears it.
    func setTimeout(milliseconds: Int) { set(CURLOPT_TIMEOUT_MS, max(1, milliseconds)) }
    func setTimeouts(connectMilliseconds: Int, totalMilliseconds: Int?) {
        set(CURLOPT_CONNECTTIMEOUT_MS, connectMilliseconds)
        if let totalMilliseconds { set(CURLOPT_TIMEOUT_MS, max(1, totalMilliseconds)) }
    }
    func setRedirects(follow: Bool, maximum: Int) {
        set(CURLOPT_FOLLOWLOCATION, follow ? 1 : 0)
        set(CURLOPT_MAXREDIRS, maximum)
        // A 301/302/303 turns a POST into a GET (curl's default, what browsers do); CURLOPT_UNRESTRICTED_AUTH
        // stays off: Authorization and cookies given by the caller are not sent to another host.
    }
    func setAcceptsEncodings() { set(CURLOPT_ACCEPT_ENCODING, "") }
    func setHTTPVersion(_ version: Int) { set(CURLOPT_HTTP_VERSION, version) }
    func setMaximumConnectionAge(seconds: Int) { set(CURLOPT_MAXAGE_CONN, seconds) }
    func setTLS(caFile: String?, certificateFile: String?, privateKeyFile: String?, verifies: Bool) {
        if let caFile { set(CURLOPT_CAINFO, caFile) }
        if let certificateFile { set(CURLOPT_SSLCERT, certificateFile) }
        if let privateKeyFile { set(CURLOPT_SSLKEY, privateKeyFile) }
        set(CURLOPT_SSL_VERIFYPEER, verifies ? 1 : 0)
        set(CURLOPT_SSL_VERIFYHOST, verifies ? 2 : 0)
    }
    func setProxy(_ url: String, tunnels: Bool) {
        set(CURLOPT_PROXY, url)
        set(CURLOPT_HTTPPROXYTUNNEL, tunnels ? 1 : 0)
        set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
    }
    func setNoProxy() { set(CURLOPT_PROXY, "") }
    /// No host bypasses the proxy, and `no_proxy` in the environment is not read (curl reads it, twice,
    /// for every transfer otherwise).
    func setNoProxyExceptions() { set(CURLOPT_NOPROXY, "") }

    /// The request's header lines, `Name: value` (curl copies the list's strings when it sends them; the
    /// list lives as long as the handle).
    func setHeaderLines(_ lines: [String]) {
        if lines.isEmpty && headerList == nil { return }  // none before either: nothing to set
        if let headerList { curl_slist_free_all(headerList) }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines { list = curl_slist_append(list, line) }
        headerList = list
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_HTTPHEADER, list)
    }

    /// A request body read through the delegate: `length` bytes, or chunked (HTTP/1.1) when nil.
    func setBody(length: Int?) {
        set(CURLOPT_POST, 1)
        set(CURLOPT_POSTFIELDSIZE_LARGE, offset: length ?? -1)
        _ = lk_curl_easy_setopt_data_callback(handle, CURLOPT_READFUNCTION, curlRead)
        _ = lk_curl_easy_setopt_seek_callback(handle, curlSeek)
    }

    private var isAttached = false

    /// Connects the handle's callbacks to `delegate` (held weakly; its owner keeps it as long as the
    /// handle), replacing the one of the handle's last transfer.
    func attach(_ delegate: any CurlTransferDelegate & AnyObject) {
        self.delegate = delegate
        guard !isAttached else { return }
        isAttached = true
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_READDATA, context)
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_SEEKDATA, context)
        _ = lk_curl_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, curlWrite)
        _ = lk_curl_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, curlHeader)
    }

    /// Resumes a transfer paused by a write or read callback (curl_easy_pause with CURLPAUSE_CONT). curl may
    /// call the write callback with the bytes it kept from inside this call.
    /// - Returns: curl's code: not OK when the kept bytes could not be delivered (the write callback refused
    ///   them), and curl does not always report that transfer as done afterwards.
    func resume() -> Int32 { Int32(curl_easy_pause(handle, CURLPAUSE_CONT).rawValue) }

    /// Stops receiving (curl_easy_pause with CURLPAUSE_RECV): curl stops reading the socket, holding
    /// nothing back, until ``resume()``. Sending goes on.
    func pauseReceiving() { _ = curl_easy_pause(handle, CURLPAUSE_RECV) }

    /// The response's status code (CURLINFO_RESPONSE_CODE).
    var responseCode: Int {
        var code = 0
        _ = lk_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// Body bytes received as sent, before decoding (CURLINFO_SIZE_DOWNLOAD_T).
    var bytesReceived: Int {
        var size: curl_off_t = 0
        _ = lk_curl_easy_getinfo_off(handle, CURLINFO_SIZE_DOWNLOAD_T, &size)
        return size
    }

    /// The HTTP version of the last response (CURLINFO_HTTP_VERSION): 11, 20, …
    var httpVersion: Int {
        var version = 0
        _ = lk_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        switch version {
        case Int(CURL_HTTP_VERSION_1_0): return 10
        case Int(CURL_HTTP_VERSION_1_1): return 11
        case Int(CURL_HTTP_VERSION_2_0): return 20
        case Int(CURL_HTTP_VERSION_3): return 30
        default: return 0
        }
    }

    /// Request body bytes sent (CURLINFO_SIZE_UPLOAD_T).
    var bytesSent: Int {
        var size: curl_off_t = 0
        _ = lk_curl_easy_getinfo_off(handle, CURLINFO_SIZE_UPLOAD_T, &size)
        return size
    }

    /// Redirects curl followed for this transfer (CURLINFO_REDIRECT_COUNT).
    var redirectCount: Int {
        var count = 0
        _ = lk_curl_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &count)
        return count
    }

    /// Has curl tell the transfer each request it is about to send (CURLOPT_PREREQFUNCTION): set only when
    /// the client reports requests, so that other clients do not pay for the call.
    func countRequestsSent() {
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_PREREQDATA, Unmanaged.passUnretained(self).toOpaque())
        _ = lk_curl_easy_setopt_prereq_callback(handle, curlPrereq)
    }

    /// Has curl open and close its connections' sockets through `sockets` (CURLOPT_OPENSOCKETFUNCTION,
    /// CURLOPT_CLOSESOCKETFUNCTION). A connection keeps the functions of the handle that opened it, and may
    /// outlive that handle in the multi handle's cache: `sockets` is the multi handle's, which outlives every
    /// connection (curl_multi_cleanup closes the last).
    func setSocketHooks(_ sockets: CurlSocketHooks) {
        let context = Unmanaged.passUnretained(sockets).toOpaque()
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, context)
        _ = lk_curl_easy_setopt_opensocket_callback(handle, curlOpenSocket)
        _ = lk_curl_easy_setopt_pointer(handle, CURLOPT_CLOSESOCKETDATA, context)
        _ = lk_curl_easy_setopt_closesocket_callback(handle, curlCloseSocket)
    }

    /// How many connections curl opened for this transfer (CURLINFO_NUM_CONNECTS): 0 when it reused one.
    var connectionsOpened: Int {
        var count = 0
        _ = lk_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &count)
        return count
    }

    fileprivate static func from(_ context: UnsafeMutableRawPointer?) -> CurlEasy {
        Unmanaged<CurlEasy>.fromOpaque(context!).takeUnretainedValue()
    }

    fileprivate var transferDelegate: (any CurlTransferDelegate)? { delegate }
}

/// CURL_VERSION values for ``CurlEasy/setHTTPVersion(_:)``.
enum CurlHTTPVersion {
    static let http1 = Int(CURL_HTTP_VERSION_1_1)
    static let http2OverTLS = Int(CURL_HTTP_VERSION_2TLS)
    static let http2PriorKnowledge = Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
}

/// curl result codes the client tells apart (CURLcode).
enum CurlCode {
    static let ok = Int32(CURLE_OK.rawValue)
    static let unsupportedProtocol = Int32(CURLE_UNSUPPORTED_PROTOCOL.rawValue)
    static let malformedURL = Int32(CURLE_URL_MALFORMAT.rawValue)
    static let couldNotResolveProxy = Int32(CURLE_COULDNT_RESOLVE_PROXY.rawValue)
    static let couldNotResolveHost = Int32(CURLE_COULDNT_RESOLVE_HOST.rawValue)
    static let couldNotConnect = Int32(CURLE_COULDNT_CONNECT.rawValue)
    static let writeError = Int32(CURLE_WRITE_ERROR.rawValue)
    static let timedOut = Int32(CURLE_OPERATION_TIMEDOUT.rawValue)
    static let tooManyRedirects = Int32(CURLE_TOO_MANY_REDIRECTS.rawValue)
    static let abortedByCallback = Int32(CURLE_ABORTED_BY_CALLBACK.rawValue)
    static let proxy = Int32(CURLE_PROXY.rawValue)
    static let tls: Set<Int32> = [
        Int32(CURLE_SSL_CONNECT_ERROR.rawValue), Int32(CURLE_PEER_FAILED_VERIFICATION.rawValue),
        Int32(CURLE_SSL_CERTPROBLEM.rawValue), Int32(CURLE_SSL_CACERT_BADFILE.rawValue),
        Int32(CURLE_SSL_CIPHER.rawValue), Int32(CURLE_SSL_ENGINE_NOTFOUND.rawValue),
    ]
}

private func curlWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let delegate = CurlEasy.from(context).transferDelegate else { return 0 }
    switch delegate.curlReceivedBody(UnsafeRawBufferPointer(start: data, count: total)) {
    case .took: return total
    case .pause: return Int(CURL_WRITEFUNC_PAUSE)
    case .abort: return 0
    }
}

private func curlHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    CurlEasy.from(context).transferDelegate?.curlReceivedHeaderLine(UnsafeRawBufferPointer(start: data, count: total))
    return total
}

private func curlRead(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let delegate = CurlEasy.from(context).transferDelegate else { return Int(CURL_READFUNC_ABORT) }
    switch delegate.curlWantsBody(into: UnsafeMutableRawBufferPointer(start: data, count: size * count)) {
    case .wrote(let written): return written
    case .pause: return Int(CURL_READFUNC_PAUSE)
    case .abort: return Int(CURL_READFUNC_ABORT)
    }
}

private func curlPrereq(_ context: UnsafeMutableRawPointer?, _ primaryIP: UnsafeMutablePointer<CChar>?,
                        _ localIP: UnsafeMutablePointer<CChar>?, _ primaryPort: Int32, _ localPort: Int32) -> Int32 {
    CurlEasy.from(context).transferDelegate?.curlWillSendRequest()
    return Int32(CURL_PREREQFUNC_OK)
}

/// The sockets of a multi handle's connections, opened and closed by the client so that it knows which
/// descriptors are connections and when each is closed. Owned by its ``CurlMulti``; loop thread only.
final class CurlSocketHooks {
    fileprivate weak var delegate: (any CurlMultiDelegate)?

    fileprivate static func from(_ context: UnsafeMutableRawPointer?) -> CurlSocketHooks {
        Unmanaged<CurlSocketHooks>.fromOpaque(context!).takeUnretainedValue()
    }
}

/// What curl does without the function (`socket(2)` with the address's family, type and protocol), with
/// close-on-exec: a child process the program spawns does not inherit the client's connections.
private func curlOpenSocket(_ context: UnsafeMutableRawPointer?, _ purpose: curlsocktype,
                            _ address: UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t {
    guard let address else { return CURL_SOCKET_BAD }
    let fd = socket(address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    guard fd >= 0 else { return CURL_SOCKET_BAD }
    CurlSocketHooks.from(context).delegate?.curlOpenedSocket(fd)
    return fd
}

private func curlCloseSocket(_ context: UnsafeMutableRawPointer?, _ fd: curl_socket_t) -> Int32 {
    CurlSocketHooks.from(context).delegate?.curlClosesSocket(fd)
    return close(fd)
}

private func curlSeek(_ context: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    guard origin == SEEK_SET, let delegate = CurlEasy.from(context).transferDelegate else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
    return delegate.curlRewindsBody(to: Int(offset)) ? Int32(CURL_SEEKFUNC_OK) : Int32(CURL_SEEKFUNC_CANTSEEK)
}

/// One curl multi handle: the client's connection cache and its transfers. Loop thread only.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer
    private weak var delegate: (any CurlMultiDelegate)?
    /// What every easy handle of this multi handle opens and closes its sockets through
    /// (``CurlEasy/setSocketHooks(_:)``); released after curl_multi_cleanup, which closes the last ones.
    let sockets = CurlSocketHooks()

    init?(maximumConnectionsPerHost: Int, maximumCachedConnections: Int, multiplexes: Bool) {
        guard CurlGlobal.isReady, let handle = curl_multi_init() else { return nil }
        self.handle = handle
        _ = lk_curl_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, maximumConnectionsPerHost)
        _ = lk_curl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, maximumCachedConnections)
        _ = lk_curl_multi_setopt_long(handle, CURLMOPT_PIPELINING, multiplexes ? Int(CURLPIPE_MULTIPLEX) : Int(CURLPIPE_NOTHING))
    }

    deinit { curl_multi_cleanup(handle) }

    func attach(_ delegate: any CurlMultiDelegate & AnyObject) {
        self.delegate = delegate
        sockets.delegate = delegate
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = lk_curl_multi_setopt_pointer(handle, CURLMOPT_SOCKETDATA, context)
        _ = lk_curl_multi_setopt_pointer(handle, CURLMOPT_TIMERDATA, context)
        _ = lk_curl_multi_setopt_socket_callback(handle, curlSocket)
        _ = lk_curl_multi_setopt_timer_callback(handle, curlTimer)
    }

    /// Adds a transfer (curl_multi_add_handle); curl starts it from its next timer. False when refused.
    func add(_ easy: CurlEasy) -> Bool { curl_multi_add_handle(handle, easy.handle) == CURLM_OK }

    /// Removes a transfer, finished or not (curl_multi_remove_handle): an unfinished one is abandoned and
    /// its connection closed.
    func remove(_ easy: CurlEasy) { _ = curl_multi_remove_handle(handle, easy.handle) }

    /// Tells curl `fd` is ready (curl_multi_socket_action).
    func socketReady(_ fd: Int32, readable: Bool, writable: Bool) {
        var flags: Int32 = 0
        if readable { flags |= CURL_CSELECT_IN }
        if writable { flags |= CURL_CSELECT_OUT }
        var running: Int32 = 0
        _ = curl_multi_socket_action(handle, fd, flags, &running)
    }

    /// Tells curl its timer fired (curl_multi_socket_action with CURL_SOCKET_TIMEOUT).
    func timedOut() {
        var running: Int32 = 0
        _ = curl_multi_socket_action(handle, -1, 0, &running)
    }

    /// The transfers that finished since the last call (curl_multi_info_read).
    func completions() -> [CurlCompletion] {
        var done: [CurlCompletion] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            done.append(CurlCompletion(handle: easy, code: Int32(message.pointee.data.result.rawValue)))
        }
        return done
    }

    fileprivate static func from(_ context: UnsafeMutableRawPointer?) -> CurlMulti {
        Unmanaged<CurlMulti>.fromOpaque(context!).takeUnretainedValue()
    }

    fileprivate var multiDelegate: (any CurlMultiDelegate)? { delegate }
}

private func curlSocket(_ easy: UnsafeMutableRawPointer?, _ fd: curl_socket_t, _ what: Int32, _ context: UnsafeMutableRawPointer?,
                        _ socketContext: UnsafeMutableRawPointer?) -> Int32 {
    let delegate = CurlMulti.from(context).multiDelegate
    switch what {
    case CURL_POLL_IN: delegate?.curlWatches(fd, readable: true, writable: false)
    case CURL_POLL_OUT: delegate?.curlWatches(fd, readable: false, writable: true)
    case CURL_POLL_INOUT: delegate?.curlWatches(fd, readable: true, writable: true)
    default: delegate?.curlWatches(fd, readable: false, writable: false)
    }
    return 0
}

private func curlTimer(_ multi: UnsafeMutableRawPointer?, _ milliseconds: Int, _ context: UnsafeMutableRawPointer?) -> Int32 {
    CurlMulti.from(context).multiDelegate?.curlWantsTimer(milliseconds: milliseconds < 0 ? nil : milliseconds)
    return 0
}
