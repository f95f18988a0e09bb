/// How often a failed step is tried again, and how long to wait in between.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included (1: never retry).
    public var maxAttempts: Int
    /// The wait before the second attempt.
    public var backoff: Duration
    /// Each further wait is the previous one times this.
    public var multiplier: Double

    /// Never retry.
    public static let never = RetryPolicy(maxAttempts: 1, backoff: .zero, multiplier: 1)

    /// Up to `attempts` attempts in all, waiting `backoff`, then `backoff × multiplier`, … in between.
    public static func attempts(_ attempts: Int, backoff: Duration = .milliseconds(10), multiplier: Double = 2) -> RetryPolicy {
        RetryPolicy(maxAttempts: max(1, attempts), backoff: backoff, multiplier: multiplier)
    }

    /// The wait after failed attempt number `attempt` (1-based).
    func delay(after attempt: Int) -> Duration {
        var delay = backoff
        if attempt > 1 { for _ in 1..<attempt { delay = delay * multiplier } }
        return delay
    }
}

/// What a step runs: a synchronous closure, an async one, or a callback-based one, all type-erased.
enum StepBody: Sendable {
    case sync(@Sendable (any Sendable) throws -> any Sendable)
    case async(@Sendable (any Sendable) async throws -> any Sendable)
    case callback(@Sendable (any Sendable, StepCallback<any Sendable>) -> Void)
}

/// One step of a sequence, with its options.
struct Step: Sendable {
    let name: String
    let target: EventLoop?
    let timeout: Duration?
    let retry: RetryPolicy
    let weight: Int64
    let body: StepBody
}
