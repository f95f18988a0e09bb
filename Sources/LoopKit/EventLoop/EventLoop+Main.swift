extension EventLoop {
    /// The main thread's loop, which also runs Dispatch's main queue: `DispatchQueue.main` blocks and
    /// `@MainActor` jobs (rule R12).
    ///
    /// Run it in place of `RunLoop.main.run()` or `dispatchMain()`:
    ///
    /// ```swift
    /// let loop = EventLoop.main
    /// Task { @MainActor in model.refresh() }      // runs on the main thread, inside the loop
    /// try loop.run()
    /// ```
    ///
    /// The loop belongs to the main thread whichever thread first asks for it; only the main thread can
    /// run it. In each iteration it runs the main queue at the end of phase 2, after the I/O callbacks
    /// and due timers and before the drain of phase 3: a block queued on the main queue before that point
    /// runs in that iteration, one queued later in the next, and loop work the block enqueues runs in the
    /// same iteration's drain. Inside the loop's callbacks on the main thread, `MainActor.assertIsolated()`
    /// holds. Do not call `dispatchMain()` in a program that runs the main loop: it takes the main queue
    /// away from every run loop.
    ///
    /// Created on first use. Stops the process with a message if libevent cannot create its base (the
    /// process is out of descriptors) or if LoopKit was loaded after start-up by a thread other than the
    /// main one, which then cannot be told apart; ``makeMain()`` reports both as errors instead.
    ///
    /// Safe from any thread.
    public static var main: EventLoop {
        switch MainLoop.shared {
        case .success(let loop): return loop
        case .failure(let error): fatalError("LoopKit: the main loop could not be created: \(error)")
        }
    }

    /// The main thread's loop (``main``), or the error that kept it from being created.
    ///
    /// - Returns: The same loop as ``main``.
    /// - Throws: ``EventLoopError/wrongThread(operation:)`` when the main thread is unknown (LoopKit was
    ///   loaded later by another thread, with `dlopen`); ``EventLoopError/libevent(_:errno:)`` when libevent
    ///   cannot create a base. Every call after the first gives the first call's answer.
    ///
    /// Safe from any thread.
    public static func makeMain() throws(EventLoopError) -> EventLoop {
        try MainLoop.shared.get()
    }

    /// Starts watching the main queue's handle: its readiness ends a waiting poll; the queue itself runs at
    /// the end of phase 2 in every iteration (rule R12).
    ///
    /// The handle is an eventfd Dispatch adds 1 to whenever the queue gets work. Where the backend has
    /// edge-triggered events (epoll) it is watched as the loop's own wake-up is: each write is an edge that
    /// ends one poll, and the counter is never read (a `read` less per main-queue round trip). Elsewhere a
    /// phase 2 callback reads it, as CoreFoundation's run loop does.
    ///
    /// Called on the main thread each time the main loop is driven; a no-op after the first.
    func watchMainQueue() throws(EventLoopError) {
        guard state.value.mainQueueWatch == nil else { return }
        let handle = MainQueue.handle
        let edgeTriggered = events.wakeUpIsEdgeTriggered
        var flags: LibEventFlags = [.read]
        if edgeTriggered { flags.insert(.edgeTriggered) }
        state.value.mainQueueWatch = try register(fd: handle, flags: flags, operation: "run()") { _ in
            if !edgeTriggered { MainQueue.acknowledge(handle) }
        }
    }

    /// Phase 2, last step on the main loop: the blocks on Dispatch's main queue (rule R12).
    @inline(__always)
    func runMainQueue() {
        if isMain { MainQueue.drain() }
    }
}

/// The process's one main loop, made on first use.
enum MainLoop {
    static let shared: Result<EventLoop, EventLoopError> = Result { () throws(EventLoopError) -> EventLoop in
        guard let thread = ThreadID.main else { throw .wrongThread(operation: "EventLoop.main (the main thread is unknown)") }
        return try EventLoop(base: LibEventBase(), attached: false, clock: SystemLoopClock(), drainLimit: nil,
                             owner: thread, isMain: true)
    }
}
