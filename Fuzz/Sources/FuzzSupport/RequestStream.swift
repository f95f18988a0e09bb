import HTTPTypes
import LoopKitHTTP

/// One request as the parser reported it: its head, its decoded body and its trailers.
public struct ParsedRequest: Equatable {
    public var head: HTTPRequestHead
    public var body: [UInt8]
    public var trailers: HTTPFields?
}

/// Everything the parser reported for a byte stream delivered in pieces.
public struct ParseResult: Equatable {
    public var requests: [ParsedRequest] = []
    public var error: HTTPRequestError?
    /// Bytes received but not consumed at the end.
    public var leftover = 0
}

/// Feeds `bytes` to a parser in pieces cut at `cuts` (ascending offsets), as a connection does: unconsumed
/// bytes stay in front of the next piece. Checks the parser's contract on every call: `consumed` within the
/// bytes, a body range within the consumed prefix, progress on every event but `end`.
public func parse(_ bytes: UnsafeRawBufferPointer, cuts: [Int], limits: HTTPParserLimits) -> ParseResult {
    var parser = HTTPRequestParser(limits: limits)
    var result = ParseResult()
    var pending: [UInt8] = []
    pending.reserveCapacity(bytes.count)
    var current: ParsedRequest?
    var bounds = cuts.filter { $0 > 0 && $0 < bytes.count }
    bounds.append(bytes.count)
    var start = 0
    for end in bounds where end > start {
        pending += bytes[start..<end]
        start = end
        var idleEnds = 0
        while true {
            let outcome = pending.withUnsafeBytes { buffer in
                Result { () throws(HTTPRequestError) in try parser.parse(buffer) }
            }
            let step: (event: HTTPRequestParser.Event, consumed: Int)
            switch outcome {
            case .success(let value): step = value
            case .failure(let error):
                result.error = error
                return result
            }
            fuzzCheck(step.consumed >= 0 && step.consumed <= pending.count,
                      "consumed \(step.consumed) of \(pending.count) bytes")
            var stop = false
            switch step.event {
            case .needMoreBytes:
                stop = true
            case .head(let head):
                fuzzCheck(step.consumed > 0, "a head consumed no bytes")
                fuzzCheck(current == nil, "a head inside a request")
                current = ParsedRequest(head: head, body: [])
            case .body(let range):
                fuzzCheck(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= step.consumed,
                          "body range \(range) outside the \(step.consumed) consumed bytes")
                fuzzCheck(current != nil, "body outside a request")
                current?.body += pending[range]
                fuzzCheck((current?.body.count ?? 0) <= limits.maxBodySize, "a body over maxBodySize")
            case .end:
                fuzzCheck(current != nil, "end outside a request")
                idleEnds += step.consumed == 0 ? 1 : 0
                fuzzCheck(idleEnds <= 1 + result.requests.count, "end reported with no progress")
                if var finished = current {
                    finished.trailers = parser.trailers
                    result.requests.append(finished)
                }
                current = nil
            }
            pending.removeFirst(step.consumed)
            if stop { break }
        }
    }
    result.leftover = pending.count
    return result
}

/// Ascending cut offsets inside `count` bytes, chosen by `generator`: between one and eight of them.
public func randomCuts(count: Int, using generator: inout SplitMix) -> [Int] {
    guard count > 1 else { return [] }
    let cutCount = Int.random(in: 1...8, using: &generator)
    return (0..<cutCount).map { _ in Int.random(in: 1..<count, using: &generator) }.sorted()
}
