#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport
import HTTPTypes
import Logging
import LoopKit
@testable import LoopKitHTTP

/// Query strings and authorities, checked against references written here from the standards: a request
/// `GET <target> HTTP/1.1` with `Host: <authority>` goes through the request parser, and then
///
/// - the parser accepts the `Host` value exactly when RFC 3986's `host [ ":" port ]` does (a registered name
///   or IPv4 address of unreserved characters, sub-delimiters and `%XX` escapes; an IPv6 literal in brackets;
///   a port of at most five digits), and the request's authority is that value, byte for byte; a rejected one
///   is `HTTPRequestError.invalidHost`, nothing else;
/// - an absolute-form target (`scheme://authority/path?query`) splits into parts that reassemble to it (the
///   scheme lower-cased, `/` before a bare query), or, with an authority the reference rejects, is
///   `HTTPRequestError.invalidTarget`;
/// - `query(_:)`, `queryValue(_:)`, `queryValues(_:)` and `query(_:as:)` agree with a byte-level split of the
///   query and the WHATWG percent-decoding written here, for names taken from the query itself;
/// - percent-decoding is consistent: bytes percent-encoded and decoded again are the same text, and text with
///   no escape (no `+` in a query) decodes to itself.
///
/// Input: three parts separated by 0xFF: the query, the authority, an absolute-form target (each may be empty
/// or missing).
@_cdecl("LLVMFuzzerTestOneInput")
public func queryAuthorityFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let parts = input.split(separator: 0xFF, maxSplits: 2, omittingEmptySubsequences: false).map(Array.init)
    let query = parts.count > 0 ? parts[0] : []
    let authority = parts.count > 1 ? parts[1] : []
    let absolute = parts.count > 2 ? parts[2] : []

    checkPercentDecoding(query + authority)
    checkOriginForm(query: query, host: authority)
    if !absolute.isEmpty { checkAbsoluteForm(absolute) }
    return 0
}

// MARK: The request parser

/// Parses one request head, whole; the head or the error.
func parseHead(_ bytes: [UInt8]) -> Result<HTTPRequestHead, HTTPRequestError>? {
    var parser = HTTPRequestParser(limits: HTTPParserLimits())
    return bytes.withUnsafeBytes { buffer in
        do throws(HTTPRequestError) {
            let (event, _) = try parser.parse(buffer)
            if case .head(let head) = event { return .success(head) }
            return nil
        } catch {
            return .failure(error)
        }
    }
}

func isVisible(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F }

/// `GET /p?QUERY HTTP/1.1` with `Host: HOST`: the parser against the references.
func checkOriginForm(query: [UInt8], host: [UInt8]) {
    let target = Array("/p?".utf8) + query
    let head = Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: ".utf8) + host + Array("\r\n\r\n".utf8)
    guard let outcome = parseHead(head) else {
        fuzzCheck(false, "a complete head gave no head")
        return
    }
    // What the parser must say, in its order: the request line first, then the field line, then the host.
    let hostValue = trimmed(host)
    let expectedError: HTTPRequestError?
    if (query + host).contains(where: { $0 == 0x0D || $0 == 0x0A }) {
        return  // a line break in the request line or the field: another head altogether, any outcome
    } else if query.contains(0x20) {
        // A space ends the target early: the rest does not make a version, always some error.
        if case .success = outcome { fuzzCheck(false, "a request line with a space in its target was accepted") }
        return
    } else if !target.allSatisfy(isVisible) {
        expectedError = .invalidTarget
    } else if hostValue.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
        expectedError = .invalidFieldValue
    } else if ReferenceAuthority(hostValue) == nil {
        expectedError = .invalidHost
    } else {
        expectedError = .none
        guard case .success(let parsed) = outcome else {
            fuzzCheck(false, "a valid request refused: \(outcome), host \(String(reflecting: String(decoding: hostValue, as: UTF8.self)))")
            return
        }
        fuzzCheck(parsed.request.authority.map { Array($0.utf8) } == hostValue,
                  "authority \(String(describing: parsed.request.authority)) for Host \(String(decoding: hostValue, as: UTF8.self))")
        fuzzCheck(parsed.request.path == String(decoding: target, as: UTF8.self), "the path changed")
        checkQuery(parsed.request, rawQuery: query)
        return
    }
    if let expectedError {
        guard case .failure(let error) = outcome else {
            fuzzCheck(false, "expected \(expectedError), the head was accepted: host \(String(decoding: hostValue, as: UTF8.self))")
            return
        }
        fuzzCheck(error == expectedError, "expected \(expectedError), got \(error)")
        fuzzCheck(error.status == .badRequest, "\(error) answered \(error.status), not 400")
    }
}

/// A field value as the parser keeps it: without leading and trailing spaces and tabs.
func trimmed(_ value: [UInt8]) -> [UInt8] {
    var slice = value[...]
    while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
    while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
    return Array(slice)
}

/// `GET <absolute> HTTP/1.1` (the bytes as given, when they are a visible target).
func checkAbsoluteForm(_ target: [UInt8]) {
    guard target.allSatisfy(isVisible) else { return }
    let head = Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)
    guard let outcome = parseHead(head) else {
        fuzzCheck(false, "a complete head gave no head")
        return
    }
    let text = String(decoding: target, as: UTF8.self)
    guard let reference = ReferenceAbsoluteForm(target) else {
        // Not absolute form: the target is the path, as sent.
        if case .success(let parsed) = outcome {
            fuzzCheck(parsed.request.path == text && parsed.request.authority == "example.com" && parsed.request.scheme == nil,
                      "an origin-form target \(text) became \(parsed.request)")
        } else {
            fuzzCheck(false, "a visible origin-form target refused: \(outcome)")
        }
        return
    }
    guard ReferenceAuthority(reference.authority) != nil else {
        if case .failure(let error) = outcome {
            fuzzCheck(error == .invalidTarget, "an absolute target with a bad authority gave \(error)")
        } else {
            fuzzCheck(false, "an absolute target with an invalid authority was accepted: \(text)")
        }
        return
    }
    guard case .success(let parsed) = outcome else {
        fuzzCheck(false, "a valid absolute target refused: \(text) \(outcome)")
        return
    }
    let request = parsed.request
    fuzzCheck(request.scheme == String(decoding: reference.scheme, as: UTF8.self).lowercased(), "scheme \(String(describing: request.scheme)) of \(text)")
    fuzzCheck(request.authority.map { Array($0.utf8) } == reference.authority, "authority \(String(describing: request.authority)) of \(text)")
    // The parts reassemble: scheme "://" authority path, where the path gained a "/" only before a bare query
    // or for an empty path.
    guard let scheme = request.scheme, let authority = request.authority, let path = request.path else {
        fuzzCheck(false, "an absolute target without its parts: \(request)")
        return
    }
    let rest = reference.rest
    let expectedPath = rest.first == UInt8(ascii: "/") ? rest : [UInt8(ascii: "/")] + rest
    fuzzCheck(Array(path.utf8) == expectedPath, "path \(path) of \(text)")
    let reassembled = scheme + "://" + authority + (rest.first == UInt8(ascii: "/") ? path : String(path.dropFirst()))
    fuzzCheck(reassembled == String(decoding: reference.scheme, as: UTF8.self).lowercased() + text.drop(while: { $0 != ":" }),
              "\(text) reassembled as \(reassembled)")
}

// MARK: The query

/// The query's lookups against a byte-level split and the reference decoder, for names from the query.
func checkQuery(_ head: HTTPRequest, rawQuery: [UInt8]) {
    let request = HTTPServerRequest(head: head, version: .http1_1, body: [], parameters: HTTPPathParameters(), id: "fuzz",
                                    server: fuzzServer)
    // Pairs split at "&", empty ones dropped; the name before the first "=".
    let pairs: [(name: [UInt8], value: [UInt8])] = rawQuery.split(separator: UInt8(ascii: "&")).map { pair in
        if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
            return (Array(pair[..<equals]), Array(pair[(equals + 1)...]))
        }
        return (Array(pair), [])
    }
    var names = Set(pairs.prefix(8).map { String(decoding: $0.name, as: UTF8.self) })
    names.insert("absent-\(rawQuery.count)")
    for name in names {
        // Raw: the first pair whose raw name is `name`.
        let raw = pairs.first { String(decoding: $0.name, as: UTF8.self) == name }.map { String(decoding: $0.value, as: UTF8.self) }
        fuzzCheck(request.query(name).map(String.init) == raw, "query(\(name)) = \(String(describing: request.query(name))), expected \(String(describing: raw))")
        // Decoded: names compared after decoding (as Swift strings), values decoded, "+" a space.
        let decodedName = referenceDecode(Array(name.utf8), plusIsSpace: true)
        let values = pairs.filter { referenceDecode($0.name, plusIsSpace: true) == decodedName }
            .map { referenceDecode($0.value, plusIsSpace: true) }
        fuzzCheck(request.queryValues(decodedName) == values, "queryValues(\(decodedName)) = \(request.queryValues(decodedName)), expected \(values)")
        fuzzCheck(request.queryValue(decodedName) == values.first, "queryValue(\(decodedName)) = \(String(describing: request.queryValue(decodedName)))")
        // Converted: nil when absent, the integer when it is one, else a typed 400.
        do throws(HTTPError) {
            let number = try request.query(decodedName, as: Int.self)
            fuzzCheck(number == values.first.flatMap { Int($0) }, "query(\(decodedName), as: Int) = \(String(describing: number))")
        } catch {
            fuzzCheck(values.first != nil && Int(values.first!) == nil, "query(\(decodedName), as: Int) threw \(error) for \(values)")
            fuzzCheck(error.status == .badRequest, "a query conversion failed with \(error.status), not 400")
        }
    }
}

/// A loop and a server context for building requests (one per process, made on libFuzzer's thread).
let fuzzLoop = try! EventLoop()
let fuzzServer = HTTPLoopContext(loop: fuzzLoop, configuration: HTTPServer.Configuration(), router: HTTPRouter(),
                                 logger: Logger(label: "fuzz"), tracing: nil)

// MARK: Percent-decoding

/// WHATWG URL's percent-decode (and, with `plusIsSpace`, form-urlencoded's `+`), over bytes, then UTF-8 with
/// repair.
func referenceDecode(_ bytes: [UInt8], plusIsSpace: Bool) -> String {
    var output: [UInt8] = []
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == UInt8(ascii: "%"), index + 2 < bytes.count + 0, let high = hexDigit(bytes[index + 1]), let low = hexDigit(bytes[index + 2]) {
            output.append(high << 4 | low)
            index += 3
            continue
        }
        output.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
        index += 1
    }
    return String(decoding: output, as: UTF8.self)
}

func hexDigit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
}

/// Decoding against the reference, encoded bytes decoded back, and text without escapes left alone.
func checkPercentDecoding(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    for plusIsSpace in [false, true] {
        let decoded = PercentDecoding.decode(text[...], plusIsSpace: plusIsSpace)
        fuzzCheck(decoded == referenceDecode(Array(text.utf8), plusIsSpace: plusIsSpace),
                  "decode(\(String(reflecting: text)), plusIsSpace: \(plusIsSpace)) = \(String(reflecting: decoded))")
        // Every byte not unreserved as %XX (upper or lower case, by position): decodes to the bytes as text.
        var encoded = ""
        for (index, byte) in bytes.enumerated() {
            let unreserved = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            if unreserved && index % 3 != 0 {
                encoded.append(Character(Unicode.Scalar(byte)))
            } else {
                let digits = Array(index % 2 == 0 ? "0123456789ABCDEF".utf8 : "0123456789abcdef".utf8)
                encoded += "%" + String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
            }
        }
        let roundTrip = PercentDecoding.decode(encoded[...], plusIsSpace: plusIsSpace)
        fuzzCheck(roundTrip == String(decoding: bytes, as: UTF8.self), "\(encoded) decoded to \(String(reflecting: roundTrip))")
        if !text.contains("%") && !(plusIsSpace && text.contains("+")) {
            fuzzCheck(decoded == text, "text without escapes changed")
        }
    }
}

// MARK: Authorities, by RFC 3986

/// `host [ ":" port ]` (RFC 3986 §3.2.2, §3.2.3, as HTTP's `Host` and absolute-form authority use it): nil
/// when `bytes` is not one. The host: an IPv6 address in brackets (no IPvFuture and no zone: LoopKit refuses
/// both), or a registered name (IPv4 addresses are registered names by their characters); the port at most
/// five digits (LoopKit's bound; RFC 3986 has none). Its parts reassemble to the bytes.
struct ReferenceAuthority {
    var host: [UInt8]
    var port: [UInt8]?

    init?(_ bytes: [UInt8]) {
        var hostEnd = bytes.count
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let literal = String(decoding: bytes[1..<close], as: UTF8.self)
            var address = in6_addr()
            guard bytes[1..<close].allSatisfy({ hexDigit($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                  inet_pton(AF_INET6, literal, &address) == 1 else { return nil }
            hostEnd = close + 1
            if hostEnd < bytes.count && bytes[hostEnd] != UInt8(ascii: ":") { return nil }
        } else {
            hostEnd = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.count
            var index = 0
            while index < hostEnd {
                let byte = bytes[index]
                if byte == UInt8(ascii: "%") {
                    guard index + 2 < hostEnd, hexDigit(bytes[index + 1]) != nil, hexDigit(bytes[index + 2]) != nil else { return nil }
                    index += 3
                    continue
                }
                guard isUnreserved(byte) || isSubDelimiter(byte) else { return nil }
                index += 1
            }
        }
        host = Array(bytes[..<hostEnd])
        if hostEnd < bytes.count {
            let digits = bytes[(hostEnd + 1)...]
            guard digits.count <= 5, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            port = Array(digits)
        }
        fuzzCheck(host + (port.map { [UInt8(ascii: ":")] + $0 } ?? []) == bytes, "the reference's parts do not reassemble")
    }
}

func isUnreserved(_ byte: UInt8) -> Bool {
    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
}

func isSubDelimiter(_ byte: UInt8) -> Bool {
    Array("!$&'()*+,;=".utf8).contains(byte)
}

/// `scheme "://" authority rest`, rest empty or starting with "/" or "?" (RFC 9112 §3.2.2's absolute form as
/// LoopKit reads it); nil when the target is not of that shape.
struct ReferenceAbsoluteForm {
    var scheme: [UInt8]
    var authority: [UInt8]
    var rest: [UInt8]

    init?(_ target: [UInt8]) {
        guard let first = target.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first),
              let colon = target.firstIndex(of: UInt8(ascii: ":")), target[colon...].starts(with: Array("://".utf8)) else { return nil }
        scheme = Array(target[..<colon])
        guard scheme.allSatisfy({ isUnreserved($0) && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: "~") || $0 == UInt8(ascii: "+") })
        else { return nil }
        let afterSeparator = colon + 3
        let end = target[afterSeparator...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? target.count
        authority = Array(target[afterSeparator..<end])
        rest = Array(target[end...])
    }
}
