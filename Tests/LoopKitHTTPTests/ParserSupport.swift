import HTTPTypes
@testable import LoopKitHTTP

/// One request as the parser reported it: its head and its decoded body.
struct ParsedRequest: Equatable {
    var head: HTTPRequestHead
    var body: [UInt8]
}

/// Everything the parser reported for a byte stream delivered in pieces.
struct ParseResult: Equatable {
    var requests: [ParsedRequest] = []
    var error: HTTPRequestError?
    /// Bytes received but not consumed at the end.
    var leftover = 0
}

/// Feeds `bytes` to a parser in pieces cut at `cuts` (offsets), as a connection would: unconsumed bytes
/// stay in front of the next piece.
func parse(_ bytes: [UInt8], cuts: [Int] = [], limits: HTTPParserLimits = HTTPParserLimits()) -> ParseResult {
    var parser = HTTPRequestParser(limits: limits)
    var result = ParseResult()
    var pending: [UInt8] = []
    var current: ParsedRequest?
    var bounds = cuts.filter { $0 > 0 && $0 < bytes.count }.sorted()
    bounds.append(bytes.count)
    var start = 0
    for end in bounds where end > start {
        pending += bytes[start..<end]
        start = end
        while true {
            let step: (event: HTTPRequestParser.Event, consumed: Int)
            let outcome = pending.withUnsafeBytes { bytes in
                Result { () throws(HTTPRequestError) in try parser.parse(bytes) }
            }
            switch outcome {
            case .success(let value): step = value
            case .failure(let error):
                result.error = error
                return result
            }
            var stop = false
            switch step.event {
            case .needMoreBytes:
                stop = true
            case .head(let head):
                current = ParsedRequest(head: head, body: [])
            case .body(let range):
                current?.body += pending[range]
            case .end:
                if let finished = current { result.requests.append(finished) }
                current = nil
            }
            pending.removeFirst(step.consumed)
            if stop { break }
        }
    }
    result.leftover = pending.count
    return result
}

func parse(_ text: String, cuts: [Int] = [], limits: HTTPParserLimits = HTTPParserLimits()) -> ParseResult {
    parse(Array(text.utf8), cuts: cuts, limits: limits)
}

/// The error a request text gets, or nil when it parses.
func parseError(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> HTTPRequestError? {
    parse(text, limits: limits).error
}
