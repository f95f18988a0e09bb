import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Watches files and directories for changes with inotify, on one `EventLoop`: what libuv's `uv_fs_event_t`
/// does, with events coalesced per loop iteration and directories watched recursively on request.
///
/// ```swift
/// let watcher = try PathWatcher(watching: "/srv/site", recursive: true, on: loop)
/// watcher.onEvents { events in                  // one batch per iteration, one event per path
///     for event in events where event.changes.contains(.modified) { reload(event.path) }
/// }
/// ```
///
/// A watcher is one inotify instance: ``watch(_:recursive:)`` adds paths to it and ``unwatch(_:)`` removes
/// them. Watching a directory tells of changes to its entries (created, modified, removed, renamed) and to
/// the directory itself; watching a file, of changes to the file. A **recursive** watch also watches every
/// subdirectory, and each one that appears later (created or moved in): the watcher lists a new
/// subdirectory when it starts watching it and tells its entries as ``PathChanges/created``, so a file made
/// in a new directory before the watch reached it is not missed (one made in between may be told twice).
///
/// **When events are told** (rule R16): in phase 2 of the iteration whose poll found the inotify
/// descriptor readable, the watcher reads the kernel's events (up to eight reads of 64 KiB), coalesces them
/// (every event for the same path becomes one, its ``PathEvent/changes`` merged, in the place of the
/// path's first event) and hands them over in one batch: to the ``onEvents(_:)`` handler there, or to the
/// task awaiting ``events``, which goes on in that iteration's drain. A change made during an iteration is
/// told in a later one, after the next poll.
///
/// Two ways to receive, both on the loop's thread: the ``onEvents(_:)`` handler, or the ``events``
/// asynchronous sequence, whose consumer's demand drives reading: past ``bufferLimit`` untaken events the
/// descriptor is not read, the kernel queues up to `/proc/sys/fs/inotify/max_queued_events` and then
/// drops, telling one ``PathChanges/overflow`` event. Until one of them is set, nothing is read.
///
/// **Ending**: ``close()``, or the loop's shutdown, closes the watcher once: the inotify descriptor is
/// closed, the handler released, and a task awaiting ``events`` resumed (nil after ``close()``,
/// ``PathWatchError/loopShutDown`` on shutdown). The loop keeps an open watcher alive: dropping the
/// reference does not close it.
///
/// **Thread rule**: confined to its loop. Call every method and property on the loop's thread (checked
/// with a precondition: the process stops otherwise), except ``loop`` and ``bufferLimit``, which are safe
/// from any thread. The corresponding libuv calls are `uv_fs_event_start` and `uv_fs_event_stop`; the
/// system calls, `inotify_init1`, `inotify_add_watch` and `read`.
public final class PathWatcher: @unchecked Sendable {  // loop-confined: every entry point checks the thread
    /// The loop the watcher lives on. Safe from any thread.
    public let loop: EventLoop
    /// The most events the ``events`` sequence holds untaken before the watcher stops reading the kernel's
    /// queue. Safe from any thread.
    public let bufferLimit: Int

    /// A watch descriptor's directory or file.
    struct Entry {
        var path: String
        /// The watched paths (keys of `roots`) it serves: a directory under two of them is one inotify watch
        /// (the kernel gives one descriptor per inode), removed when neither needs it.
        var roots: Set<String>
        let isDirectory: Bool
    }

    /// A path given to ``watch(_:recursive:)``.
    struct Root {
        let recursive: Bool
        let wd: Int32
    }

    var fd: Int32
    var readWatch: Watch?
    var isReadWatchActive = false
    /// Why the watcher closed (``PathWatchError/closed`` or ``PathWatchError/loopShutDown``); nil while open.
    var closeReason: PathWatchError?
    var entries: [Int32: Entry] = [:]
    var roots: [String: Root] = [:]
    let readBuffer: UnsafeMutableRawBufferPointer

    var eventsHandler: (([PathEvent]) -> Void)?
    var errorHandler: ((PathWatchError) -> Void)?
    /// True while ``onEvents(_:)``'s handler runs.
    var inDispatch = false
    var toldCount: UInt64 = 0

    // The async consumer.
    var inbound: [PathEvent] = []
    var inboundHead = 0
    var asyncConsumerStarted = false
    var readWaiter = SingleConsumerWaiter<PathEvent, PathWatchError>()
    /// Which call of `nextEvent()` the waiter is (a cancellation resumes only its own).
    var readWaiterToken: UInt64 = 0
    var nextWaiterToken: UInt64 = 0

    /// The watcher's own reference, held while it is open.
    var keepAlive: Unmanaged<PathWatcher>?

    /// Bytes one `read` of the inotify descriptor takes, and reads per readiness.
    static let readBufferSize = 64 * 1024
    static let readsPerReadiness = 8

    /// Creates a watcher that watches nothing yet; add paths with ``watch(_:recursive:)``.
    ///
    /// - Parameters:
    ///   - loop: The loop the watcher lives on.
    ///   - bufferLimit: The most events ``events`` holds untaken (at least 1; default 1,024).
    /// - Throws: ``PathWatchError/instanceLimitReached``, ``PathWatchError/loopShutDown``,
    ///   ``PathWatchError/system(_:path:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `inotify_init1`.
    public init(on loop: EventLoop, bufferLimit: Int = 1024) throws(PathWatchError) {
        precondition(loop.isCurrent, "PathWatcher.init called off its loop's thread")
        precondition(bufferLimit >= 1, "PathWatcher.init: bufferLimit must be at least 1")
        self.loop = loop
        self.bufferLimit = bufferLimit
        fd = try Inotify.open()
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readBufferSize,
                                                           alignment: MemoryLayout<inotify_event>.alignment)
        try start()
    }

    /// Creates a watcher for one path; as ``init(on:bufferLimit:)`` followed by ``watch(_:recursive:)``.
    ///
    /// - Throws: ``PathWatchError/notFound(_:)`` (`ENOENT`), ``PathWatchError/permissionDenied(_:)``,
    ///   ``PathWatchError/watchLimitReached(_:)`` (`ENOSPC`), ``PathWatchError/instanceLimitReached``,
    ///   ``PathWatchError/loopShutDown``, ``PathWatchError/system(_:path:_:)``.
    ///
    /// Call on the loop's thread.
    public convenience init(watching path: String, recursive: Bool = false, on loop: EventLoop,
                            bufferLimit: Int = 1024) throws(PathWatchError) {
        try self.init(on: loop, bufferLimit: bufferLimit)
        do {
            try watch(path, recursive: recursive)
        } catch {
            close()
            throw error
        }
    }

    deinit { readBuffer.deallocate() }

    /// Registers the shutdown observer and the (paused) read watch. Loop thread only.
    private func start() throws(PathWatchError) {
        guard loop.addShutdownObserver(ObjectIdentifier(self), { [weak self] in self?.finish(.loopShutDown) }) else {
            Inotify.closeDescriptor(fd)
            fd = -1
            closeReason = .loopShutDown
            throw .loopShutDown
        }
        do {
            let watch = try loop.watch(fd, for: .readable) { [unowned self] _ in self.descriptorIsReadable() }
            watch.pause()
            readWatch = watch
        } catch {
            loop.removeShutdownObserver(ObjectIdentifier(self))
            Inotify.closeDescriptor(fd)
            fd = -1
            if case .shutDown = error {
                closeReason = .loopShutDown
                throw .loopShutDown
            }
            closeReason = .closed
            throw .system("event_add", path: nil, 0)
        }
        keepAlive = Unmanaged.passRetained(self)
    }

    @inline(__always)
    func checkThread(_ function: StaticString = #function) {
        precondition(loop.isCurrent, "PathWatcher.\(function) called off its loop's thread")
    }

    /// Throws when the watcher is closed.
    @inline(__always)
    func checkOpen() throws(PathWatchError) {
        if let closeReason { throw closeReason }
    }

    /// Whether the watcher is closed. Call on the loop's thread.
    public var isClosed: Bool {
        checkThread()
        return closeReason != nil
    }

    /// The paths given to ``watch(_:recursive:)`` that are still watched (a watched path that was removed
    /// or renamed away is no longer), sorted. Call on the loop's thread.
    public var watchedPaths: [String] {
        checkThread()
        return roots.keys.sorted()
    }

    /// The inotify watches the watcher holds: one per watched path, plus one per subdirectory of a recursive
    /// watch. Each counts against `/proc/sys/fs/inotify/max_user_watches`. Call on the loop's thread.
    public var watchCount: Int {
        checkThread()
        return entries.count
    }

    /// Events told so far (after coalescing). Call on the loop's thread.
    public var eventsTold: UInt64 {
        checkThread()
        return toldCount
    }

    // MARK: Watching

    /// Watches `path`: a directory (its entries and itself) or a file.
    ///
    /// Watching a path that is already watched replaces its watch (with the new `recursive`). Watched paths
    /// may overlap (a directory, and a recursive watch of its parent): the kernel's one watch of a directory
    /// serves both, events are told once, and ``unwatch(_:)`` of one keeps what the other needs.
    ///
    /// - Parameters:
    ///   - path: The path; a trailing `/` is dropped. A symbolic link is followed.
    ///   - recursive: For a directory, watch its subdirectories too, and each one that appears later.
    ///     Subdirectories that vanish or cannot be read while they are listed are skipped.
    /// - Throws: ``PathWatchError/notFound(_:)`` (`ENOENT`, `ENOTDIR`), ``PathWatchError/permissionDenied(_:)``
    ///   (`EACCES`), ``PathWatchError/watchLimitReached(_:)`` (`ENOSPC`: nothing of this path stays
    ///   watched), ``PathWatchError/closed``, ``PathWatchError/loopShutDown``,
    ///   ``PathWatchError/system(_:path:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `inotify_add_watch` (and, for a recursive
    /// watch, `opendir`/`readdir`, on the loop's thread).
    public func watch(_ path: String, recursive: Bool = false) throws(PathWatchError) {
        checkThread()
        try checkOpen()
        let root = Self.normalized(path)
        if roots[root] != nil { try unwatch(root) }
        let wd = try Inotify.addWatch(fd, root)
        let isDirectory = Inotify.isDirectory(root) || entries[wd]?.isDirectory == true
        hold(wd, path: root, for: root, isDirectory: isDirectory)
        roots[root] = Root(recursive: recursive && isDirectory, wd: wd)
        if recursive && isDirectory {
            do {
                try followSubdirectories(of: root, root: root) { _, _ in }
            } catch {
                removeWatches(of: root)
                roots[root] = nil
                throw error
            }
        }
        updateReadInterest()
    }

    /// Stops watching `path` (and, for a recursive watch, its subdirectories). Events the kernel queued
    /// for it before are dropped.
    ///
    /// - Throws: ``PathWatchError/notWatched(_:)``, ``PathWatchError/closed``, ``PathWatchError/loopShutDown``.
    ///
    /// Call on the loop's thread. The corresponding system call is `inotify_rm_watch`.
    public func unwatch(_ path: String) throws(PathWatchError) {
        checkThread()
        try checkOpen()
        let root = Self.normalized(path)
        guard roots.removeValue(forKey: root) != nil else { throw .notWatched(path) }
        removeWatches(of: root)
    }

    /// Records that `root` needs the watch `wd` of `path`.
    private func hold(_ wd: Int32, path: String, for root: String, isDirectory: Bool) {
        if entries[wd] == nil {
            entries[wd] = Entry(path: path, roots: [root], isDirectory: isDirectory)
        } else {
            entries[wd]!.roots.insert(root)
        }
    }

    /// Gives up `root`'s need of the watch `wd`; the watch is removed when no watched path needs it.
    private func release(_ wd: Int32, from root: String) {
        guard var entry = entries[wd] else { return }
        entry.roots.remove(root)
        if entry.roots.isEmpty {
            Inotify.removeWatch(fd, wd)
            entries[wd] = nil
        } else {
            entries[wd] = entry
        }
    }

    /// Gives up every watch `root` needs.
    private func removeWatches(of root: String) {
        for (wd, entry) in entries where entry.roots.contains(root) { release(wd, from: root) }
    }

    /// `path` without trailing slashes ("/" stays).
    static func normalized(_ path: String) -> String {
        var result = Substring(path)
        while result.count > 1, result.hasSuffix("/") { result = result.dropLast() }
        return String(result)
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory == "/" ? "/" + name : directory + "/" + name
    }

    /// Watches the subdirectories of `directory` (a watched directory of `root`), depth first, giving `tell`
    /// every entry found (to tell it as created, in a directory that just appeared).
    private func followSubdirectories(of directory: String, root: String,
                                      telling tell: (String, Bool) -> Void) throws(PathWatchError) {
        for (name, isDirectory) in Inotify.entries(of: directory) {
            let path = Self.join(directory, name)
            tell(path, isDirectory)
            guard isDirectory else { continue }
            let wd: Int32
            do {
                wd = try Inotify.addWatch(fd, path, onlyDirectory: true)
            } catch {
                switch error {
                case .notFound, .permissionDenied: continue  // gone already, or not ours to read
                default: throw error
                }
            }
            hold(wd, path: path, for: root, isDirectory: true)
            try followSubdirectories(of: path, root: root, telling: tell)
        }
    }

    /// Starts watching a directory that appeared under a recursive watch, telling its entries.
    private func followNewDirectory(_ path: String, root: String, telling tell: (String, Bool) -> Void) {
        do throws(PathWatchError) {
            let wd = try Inotify.addWatch(fd, path, onlyDirectory: true)
            hold(wd, path: path, for: root, isDirectory: true)
            try followSubdirectories(of: path, root: root, telling: tell)
        } catch {
            switch error {
            case .notFound, .permissionDenied: return
            default: report(error)
            }
        }
    }

    /// Stops watching a directory of a recursive watch that was renamed away, and what is under it.
    private func stopFollowing(_ path: String, root: String) {
        let prefix = path + "/"
        for (wd, entry) in entries where entry.roots.contains(root) && (entry.path == path || entry.path.hasPrefix(prefix)) {
            guard roots[root]?.wd != wd else { continue }
            release(wd, from: root)
        }
    }

    // MARK: Handlers

    /// Sets the handler for events: called with each coalesced batch (one per iteration that read events),
    /// in phase 2 (rule R16). Setting a handler starts reading; it replaces an earlier one. A watcher with a
    /// handler must not also be read through ``events``.
    ///
    /// - Parameter handler: Called on the loop's thread with the events of one read, at least one.
    ///
    /// Call on the loop's thread.
    public func onEvents(_ handler: @escaping ([PathEvent]) -> Void) {
        checkThread()
        guard closeReason == nil else { return }
        precondition(!asyncConsumerStarted, "PathWatcher.onEvents: the watcher is already read through `events`")
        eventsHandler = handler
        updateReadInterest()
    }

    /// Sets the handler told of failures no call can report: a subdirectory that appeared under a recursive
    /// watch and could not be watched (``PathWatchError/watchLimitReached(_:)``), a failed read. The watcher
    /// stays open.
    ///
    /// Call on the loop's thread.
    public func onError(_ handler: @escaping (PathWatchError) -> Void) {
        checkThread()
        guard closeReason == nil else { return }
        errorHandler = handler
    }

    /// Tells the error handler, if any.
    func report(_ error: PathWatchError) {
        errorHandler?(error)
    }

    // MARK: Ending

    /// Closes the watcher: every watch ends, the inotify descriptor is closed, ``events`` ends (nil) once
    /// the events it holds are taken, and the handlers are released. Closing again does nothing; closing from
    /// inside the ``onEvents(_:)`` handler is allowed (nothing more is told).
    ///
    /// Call on the loop's thread. The corresponding system call is `close`.
    public func close() {
        checkThread()
        finish(.closed)
    }

    /// The one way the watcher closes. Loop thread only.
    func finish(_ reason: PathWatchError) {
        guard closeReason == nil else { return }
        closeReason = reason
        if reason != .loopShutDown { loop.removeShutdownObserver(ObjectIdentifier(self)) }
        readWatch?.cancel()
        readWatch = nil
        isReadWatchActive = false
        Inotify.closeDescriptor(fd)
        fd = -1
        entries = [:]
        roots = [:]
        readWaiter.unpark()?.resume(with: reason == .closed ? .success(nil) : .failure(reason))
        if !inDispatch { eventsHandler = nil }  // a running handler is released when it returns
        errorHandler = nil
        let retained = keepAlive
        keepAlive = nil
        retained?.release()
    }

    // MARK: Reading

    /// Whether the descriptor should be read now.
    var wantsToRead: Bool {
        guard closeReason == nil else { return false }
        if eventsHandler != nil { return true }
        return asyncConsumerStarted && inbound.count - inboundHead < bufferLimit
    }

    /// Starts or stops the read watch to match ``wantsToRead``.
    func updateReadInterest() {
        guard let readWatch else { return }
        let wanted = wantsToRead
        guard wanted != isReadWatchActive else { return }
        if wanted {
            do {
                try readWatch.resume()
            } catch {
                report(.system("event_add", path: nil, 0))
                return
            }
        } else {
            readWatch.pause()
        }
        isReadWatchActive = wanted
    }

    /// The read watch fired (phase 2): reads the kernel's events, coalesces them and hands them over.
    func descriptorIsReadable() {
        var raw: [Inotify.RawEvent] = []
        reading: for _ in 0..<Self.readsPerReadiness {
            switch Inotify.readEvents(fd, into: readBuffer) {
            case .events(let count):
                Inotify.decode(UnsafeRawBufferPointer(readBuffer), count: count, into: &raw)
            case .wouldBlock:
                break reading
            case .failed(let code):
                report(.system("read", path: nil, code))
                break reading
            }
        }
        let batch = coalesce(raw)
        guard !batch.isEmpty else { return }
        toldCount &+= UInt64(batch.count)
        deliver(batch)
    }

    /// The watched path `path` is told for: itself, or the closest watched directory above it.
    private func watchedPath(of path: String) -> String {
        var best = ""
        for root in roots.keys where root.count > best.count {
            if path == root || path.hasPrefix(root == "/" ? "/" : root + "/") { best = root }
        }
        return best
    }

    /// Turns the kernel's events into paths and changes, one event per path, and follows directories that
    /// appeared under (or left) a recursive watch.
    func coalesce(_ raw: [Inotify.RawEvent]) -> [PathEvent] {
        var batch: [PathEvent] = []
        var positions: [String: Int] = [:]
        func tell(_ path: String, _ changes: PathChanges, _ isDirectory: Bool) {
            if let position = positions[path] {
                let earlier = batch[position]
                batch[position] = PathEvent(path: path, changes: earlier.changes.union(changes),
                                            isDirectory: earlier.isDirectory || isDirectory, watchedPath: earlier.watchedPath)
            } else {
                positions[path] = batch.count
                batch.append(PathEvent(path: path, changes: changes, isDirectory: isDirectory, watchedPath: watchedPath(of: path)))
            }
        }
        for event in raw {
            let mask = event.mask
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                tell("", .overflow, false)
                continue
            }
            guard let entry = entries[event.wd] else { continue }  // a watch removed already
            if mask & UInt32(IN_IGNORED) != 0 {
                watchEnded(event.wd, entry)
                continue
            }
            let isDirectory = mask & UInt32(IN_ISDIR) != 0
            var changes: PathChanges = []
            if mask & UInt32(IN_CREATE) != 0 { changes.insert(.created) }
            if mask & UInt32(IN_MODIFY) != 0 { changes.insert(.modified) }
            if mask & UInt32(IN_ATTRIB) != 0 { changes.insert(.attributesChanged) }
            if mask & UInt32(IN_DELETE) != 0 { changes.insert(.removed) }
            if mask & UInt32(IN_MOVED_FROM) != 0 { changes.insert(.movedFrom) }
            if mask & UInt32(IN_MOVED_TO) != 0 { changes.insert(.movedTo) }
            if event.name.isEmpty {
                // The watched file or directory itself. A subdirectory's own removal or rename is told by
                // its parent, with its name.
                let isRoot = entry.roots.contains { roots[$0]?.wd == event.wd }
                if isRoot, mask & UInt32(IN_DELETE_SELF) != 0 { changes.insert(.removed) }
                if isRoot, mask & UInt32(IN_MOVE_SELF) != 0 { changes.insert(.movedFrom) }
                if !changes.isEmpty { tell(entry.path, changes, entry.isDirectory) }
                continue
            }
            let path = Self.join(entry.path, event.name)
            if !changes.isEmpty { tell(path, changes, isDirectory) }
            guard isDirectory else { continue }
            for root in entry.roots where roots[root]?.recursive == true {
                if mask & UInt32(IN_MOVED_FROM) != 0 { stopFollowing(path, root: root) }
                if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    followNewDirectory(path, root: root) { found, isDirectory in tell(found, .created, isDirectory) }
                }
            }
        }
        return batch
    }

    /// The kernel ended a watch (`IN_IGNORED`: its path was removed, or the watch was removed).
    private func watchEnded(_ wd: Int32, _ entry: Entry) {
        entries[wd] = nil
        for root in entry.roots where roots[root]?.wd == wd { roots[root] = nil }
    }

    /// Hands a batch to the handler, or to the async consumer.
    private func deliver(_ batch: [PathEvent]) {
        if let handler = eventsHandler {
            inDispatch = true
            handler(batch)
            inDispatch = false
            if closeReason != nil { eventsHandler = nil }
            return
        }
        var first = 0
        if let consumer = readWaiter.unpark() {
            first = 1
            consumer.resume(returning: batch[0])
        }
        inbound.append(contentsOf: batch[first...])
        updateReadInterest()
    }
}
