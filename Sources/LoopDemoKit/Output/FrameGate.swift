/// Decides when the live region may be redrawn: at most once per loop iteration and at most 60 times a
/// second.
///
/// A value: the output keeps one under its lock.
public struct FrameGate: Sendable {
    /// The shortest time between two frames: 1/60 s.
    public static let minimumInterval: UInt64 = 16_666_667

    private(set) var lastIteration: UInt64?
    private(set) var lastTime: UInt64?
    /// Frames drawn so far.
    public private(set) var frames = 0

    public init() {}

    /// How long to wait, from `now`, before a frame may be drawn (zero when one may be drawn now).
    public func delay(now: UInt64) -> UInt64 {
        guard let lastTime else { return 0 }
        let earliest = lastTime &+ Self.minimumInterval
        return earliest > now ? earliest - now : 0
    }

    /// Whether a frame may be drawn in loop iteration `iteration` at time `now`.
    public func mayDraw(iteration: UInt64, now: UInt64) -> Bool {
        if let lastIteration, lastIteration == iteration { return false }
        return delay(now: now) == 0
    }

    /// Records a frame drawn in `iteration` at `now`.
    public mutating func didDraw(iteration: UInt64, now: UInt64) {
        lastIteration = iteration
        lastTime = now
        frames += 1
    }
}
