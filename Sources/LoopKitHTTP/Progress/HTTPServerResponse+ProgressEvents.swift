// Progress on the wire: a `TaskProgress` served as server-sent events (here), sent over a WebSocket
// (WebSocket+Progress), shared by its streams on one loop (ProgressFanOut) with ids that go on between
// streams (ProgressEventIDs), each state encoded as JSON once (ProgressSnapshot+JSON).
import HTTPTypes
import LoopKit

extension HTTPServerResponse {
    /// `progress` as server-sent events: one `progress` event per change, coalesced to at most one per
    /// iteration of the connection's loop, then a last `finished` or `cancelled` event, and the stream
    /// ends.
    ///
    /// Each event's data is the snapshot as one JSON object (`ProgressSnapshot.jsonObject`), its `id` the
    /// state's number among the progress's states: the ids go on from one stream to the next, on every
    /// loop, for as long as the progress lives, so that a client can resume with
    /// ``progressEvents(_:resumingAfter:keepAlive:)``. There is no polling: the streams that follow one
    /// progress on one loop share one observation (`TaskProgress.observe(on:)`) and each state is encoded
    /// once; the states are written to the subscribers a time-budgeted slice per loop iteration (300 µs),
    /// so a thousand subscribers leave the loop's other work its time. A subscriber reached late, or a
    /// slow client, gets the newest state when it is reached (the states in between are dropped), and the
    /// final state is never dropped. A client that disconnects ends its stream at once.
    ///
    /// - Parameters:
    ///   - progress: The progress to serve; any thread may change it.
    ///   - keepAlive: As in ``events(keepAlive:_:)``.
    /// - Returns: A `text/event-stream` response.
    public static func progressEvents(_ progress: TaskProgress, keepAlive: Duration? = .seconds(15)) -> HTTPServerResponse {
        progressEvents(progress, resumingAfter: nil, keepAlive: keepAlive)
    }

    /// `progress` as server-sent events, as ``progressEvents(_:keepAlive:)``, for a client that may have
    /// seen some of them: pass its `Last-Event-ID` field (`HTTPField.Name.lastEventID`).
    ///
    /// The stream sends only what follows that id: the current state if it is newer, then each change. A
    /// client that has seen the final event gets `204 No Content`, which tells a browser's `EventSource`
    /// to stop reconnecting (the HTML standard's way to end a stream for good). An id the progress never
    /// gave is ignored: the client gets the current state.
    ///
    /// ```swift
    /// router.get("/jobs/:id/events") { request in
    ///     .progressEvents(job.progress, resumingAfter: request.head.headerFields[.lastEventID])
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - progress: The progress to serve; any thread may change it.
    ///   - lastEventID: The id of the last event the client has seen (its `Last-Event-ID`), if any.
    ///   - keepAlive: As in ``events(keepAlive:_:)``.
    /// - Returns: A `text/event-stream` response, or `204 No Content` when the client has seen the end.
    ///
    /// Safe from any thread (a route handler calls it on the connection's loop).
    public static func progressEvents(
        _ progress: TaskProgress,
        resumingAfter lastEventID: String?,
        keepAlive: Duration? = .seconds(15)
    ) -> HTTPServerResponse {
        switch ProgressEventIDs.of(progress).resumption(after: lastEventID) {
        case .finalStateSeen:
            return HTTPServerResponse(status: .noContent)
        case .after(let seen):
            return .events(keepAlive: keepAlive) { events in
                await ProgressFanOut.of(progress, on: events.loop).follow(with: events, after: seen)
            }
        }
    }
}

extension HTTPServerResponse {
    /// `progress` as server-sent events, as ``progressEvents(_:keepAlive:)``, from streams that own the
    /// work: when the last such stream of the progress ends because its client left, before the final
    /// state, the progress is cancelled, and with it the work it reports (a `ProcessingJob`'s progress
    /// cancels the job).
    ///
    /// ```swift
    /// router.get("/reports/:id/events") { request in
    ///     let job = request.loop.process(rows, each: { render($0) })   // the work lives as long as its viewers
    ///     return .progressEvents(job.progress, cancelsWhenAbandoned: true)
    /// }
    /// ```
    ///
    /// Streams of the same progress on any loop count together; a stream without the option neither counts
    /// nor cancels. A stream that ends because the server shuts down cancels too.
    ///
    /// - Parameters:
    ///   - progress: The progress to serve and, when abandoned, cancel.
    ///   - cancelsWhenAbandoned: Whether the stream owns the work (false: as ``progressEvents(_:keepAlive:)``).
    ///   - keepAlive: As in ``events(keepAlive:_:)``.
    /// - Returns: A `text/event-stream` response.
    ///
    /// Safe from any thread (a route handler calls it on the connection's loop).
    public static func progressEvents(_ progress: TaskProgress, cancelsWhenAbandoned: Bool,
                                      keepAlive: Duration? = .seconds(15)) -> HTTPServerResponse {
        guard cancelsWhenAbandoned else { return progressEvents(progress, keepAlive: keepAlive) }
        let ids = ProgressEventIDs.of(progress)
        return .events(keepAlive: keepAlive) { events in
            ids.addOwner()  // when the stream starts: a response never sent (to HEAD) owns nothing
            await ProgressFanOut.of(progress, on: events.loop).follow(with: events, after: 0)
            if ids.removeOwner() == 0, !progress.isFinished, !progress.isCancelled { progress.cancel() }
        }
    }
}
