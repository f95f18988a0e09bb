import Foundation

/// The process's descriptor limit (`RLIMIT_NOFILE`), raised for the scenarios that hold thousands of
/// sockets open.
enum DescriptorLimit {
    /// The soft limit before and after ``raiseToHard()``, and the hard limit.
    struct Change: CustomStringConvertible {
        var from: Int
        var to: Int
        var hard: Int

        var description: String { "\(from) → \(to) (hard \(hard))" }
    }

    /// Raises the soft limit to the hard limit with `setrlimit` (to at least 65,536 when the hard limit is
    /// unlimited); returns the limits before and after. The soft limit stays as it was if `setrlimit` fails.
    static func raiseToHard() -> Change {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let original = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max == rlim_t.max ? max(limit.rlim_cur, 65_536) : limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Change(from: Int(clamping: original), to: Int(clamping: limit.rlim_cur), hard: Int(clamping: limit.rlim_max))
    }
}
