// Throughput and time-remaining estimates, sampled lazily when the progress is read (never on the
// increment path), smoothed with an exponential moving average.

/// An exponential moving average of throughput, fed by samples of (time, effective completed units).
struct ThroughputEstimator {
    /// Samples closer together than this are skipped, so frequent reads do not make the rate noisy.
    static let minimumSampleInterval: UInt64 = 100_000_000  // 100 ms
    /// The weight of the newest rate in the average.
    static let smoothing = 0.3

    private var lastTime: UInt64?
    private var lastUnits = 0.0
    /// The smoothed rate in units per second, once two samples were taken.
    private(set) var unitsPerSecond: Double?

    /// Records `units` completed at `now` (nanoseconds).
    mutating func sample(units: Double, at now: UInt64) {
        guard let lastTime else {
            self.lastTime = now
            lastUnits = units
            return
        }
        guard now >= lastTime, now - lastTime >= Self.minimumSampleInterval else { return }
        let seconds = Double(now - lastTime) / 1e9
        let rate = max(0, units - lastUnits) / seconds
        if let previous = unitsPerSecond {
            unitsPerSecond = Self.smoothing * rate + (1 - Self.smoothing) * previous
        } else {
            unitsPerSecond = rate
        }
        self.lastTime = now
        lastUnits = units
    }

    /// The time left at the smoothed rate, or nil without a positive rate.
    func remaining(after value: Evaluation) -> Duration? {
        if value.isFinished { return .zero }
        guard !value.isIndeterminate, value.total > 0, let rate = unitsPerSecond, rate > 0 else { return nil }
        let seconds = max(0, Double(value.total) - value.effectiveUnits) / rate
        guard seconds < 1e9 else { return nil }  // about 31 years: no useful estimate
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}

extension TaskProgress {
    /// The smoothed rate of work in this progress's units per second, including children's partial work;
    /// nil until two samples at least 100 ms apart were taken.
    ///
    /// Samples are taken when the progress is read (this property, ``estimatedTimeRemaining``,
    /// ``snapshot()``, and so each observer delivery), from the clock given at creation; the rate is an
    /// exponential moving average (weight 0.3 for the newest sample).
    ///
    /// Safe from any thread.
    public var throughput: Double? {
        state.withLock { s in
            let value = evaluate(&s)
            s.estimator.sample(units: value.effectiveUnits, at: clock.nanoseconds())
            return s.estimator.unitsPerSecond
        }
    }

    /// The estimated time until this progress finishes at the current ``throughput``; zero when finished,
    /// nil when indeterminate or before a rate is known.
    ///
    /// Safe from any thread.
    public var estimatedTimeRemaining: Duration? {
        state.withLock { s in
            let value = evaluate(&s)
            s.estimator.sample(units: value.effectiveUnits, at: clock.nanoseconds())
            return s.estimator.remaining(after: value)
        }
    }
}
