extension EventLoop {
    /// The loop's own instance of `Value`, made by `make` the first time it is asked for: state that
    /// belongs to a loop rather than to any one object on it (a read buffer shared by a loop's
    /// connections, say). It lives as long as the loop.
    ///
    /// - Parameters:
    ///   - key: Tells values apart; one value per key and loop (`ObjectIdentifier(Value.self)` usually).
    ///   - make: Makes the value, once per loop.
    /// - Returns: The loop's value for `key`.
    ///
    /// Call on the loop's thread.
    package func localValue<Value: AnyObject>(for key: ObjectIdentifier, _ make: () -> Value) -> Value {
        if state.value.lastLocalKey == key, let value = state.value.lastLocalValue { return unsafeDowncast(value, to: Value.self) }
        let value: AnyObject
        if let known = state.value.locals[key] {
            value = known
        } else {
            value = make()
            state.value.locals[key] = value
        }
        state.value.lastLocalKey = key
        state.value.lastLocalValue = value
        return unsafeDowncast(value, to: Value.self)
    }

    /// Forgets the loop's value for `key`, if any. Call on the loop's thread.
    package func removeLocalValue(for key: ObjectIdentifier) {
        state.value.locals[key] = nil
        if state.value.lastLocalKey == key {
            state.value.lastLocalKey = nil
            state.value.lastLocalValue = nil
        }
    }

    /// The loop's clock now, in nanoseconds: real time, or a test's virtual time (`LoopKitTesting`'s
    /// `VirtualClock`). What timeouts measured outside the loop's timers compare against.
    ///
    /// Safe from any thread.
    package var clockNanoseconds: UInt64 { timeSource.nanoseconds() }
}
