import LoopKit

/// Busy work standing in for real per-item work (parsing, hashing): a fixed number of mixing rounds,
/// calibrated so that one item costs about the requested time on this machine and in this build.
public struct SyntheticWork: Sendable {
    /// Mixing rounds per item.
    public let rounds: Int

    public init(rounds: Int) { self.rounds = max(1, rounds) }

    /// Processes one item: a splitmix-style hash, `rounds` times.
    @inline(never)
    public func callAsFunction(_ item: Int) -> UInt64 {
        var x = UInt64(truncatingIfNeeded: item) &+ 0x9E37_79B9_7F4A_7C15
        for _ in 0..<rounds {
            x ^= x >> 30
            x &*= 0xBF58_476D_1CE4_E5B9
            x ^= x >> 27
        }
        return x
    }

    /// Work that costs about `nanoseconds` per item, measured now.
    public static func calibrated(nanosecondsPerItem nanoseconds: UInt64) -> SyntheticWork {
        let probe = SyntheticWork(rounds: 200)
        var sink: UInt64 = 0
        var best = UInt64.max
        for _ in 0..<3 {
            let start = now()
            for item in 0..<500 { sink &+= probe(item) }
            best = min(best, now() - start)
        }
        let perRound = max(Double(best) / (500 * 200), 0.05)
        return SyntheticWork(rounds: Int(Double(nanoseconds) / perRound) | Int(sink & 0))
    }
}
