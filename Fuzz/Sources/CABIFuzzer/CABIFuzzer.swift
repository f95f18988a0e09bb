#if canImport(Glibc)
import Glibc
#endif
import CLoopKit
import FuzzSupport

/// The C ABI (loopkit.h) as a host that calls it in any order: each input is a program of `lk_*` calls on a
/// real loop (one per input), read a byte at a time: queue, invoke, timers, fd watches on a pipe, signal watches,
/// `lk_process` jobs, work on a pool of its own and on the shared one, file calls (half of them through the
/// `_req` twins, some cancelled with `lk_fs_cancel`), directory scans, UDP sockets, iterations,
/// stop and shutdown, calls with NULL and out-of-range arguments, calls from inside callbacks and from another
/// thread. Every call must return one of the codes its comment in loopkit.h documents (and exactly the one the
/// model expects where the header says which); every callback the header promises (a job's complete, a work's
/// after, a file call's or a scan's cb, LK_ECANCELED for a request lk_fs_cancel cancelled) runs exactly once, on the loop's thread; queued work runs before the loop is freed;
/// nothing crashes, nothing is touched after its callback released it, nothing leaks (AddressSanitizer).
///
/// The calls go through the C declarations of loopkit.h (the `CLoopKit` module), into libLoopKitC as a C host
/// links it.
@_cdecl("LLVMFuzzerTestOneInput")
public func cABIFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var program = Program(UnsafeRawBufferPointer(start: data, count: size))
    let host = Host()
    current = host
    defer { current = nil }
    host.start()
    var steps = 0
    while let op = program.next(), steps < 256 {
        host.perform(op, &program)
        steps += 1
    }
    host.finish()
    return 0
}

// MARK: The program

/// The input, read as operations and their arguments; zeros once it is used up.
struct Program {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func next() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func byte() -> UInt8 { next() ?? 0 }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(byte()) % (range.upperBound - range.lowerBound + 1)
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }
}

// MARK: Documented codes

let ok = Int32(LK_OK), invalid = Int32(LK_EINVAL), closed = Int32(LK_ECLOSED), busy = Int32(LK_EBUSY)
let noMemory = Int32(LK_ENOMEM), cancelled = Int32(LK_ECANCELED), wrongThread = Int32(LK_ETHREAD)
let system = Int32(LK_ESYS), again = Int32(LK_EAGAIN)

/// Checks that `status`, returned by `call`, is one of `documented`.
func expect(_ status: Int32, _ documented: Set<Int32>, _ call: @autoclosure () -> String) {
    fuzzCheck(documented.contains(status), "\(call()) returned \(status) (\(String(cString: lk_strerror(status)))), documented: \(documented.sorted())")
    fuzzCheck(strlen(lk_strerror(status)) > 0, "lk_strerror(\(status)) is empty")
}

// MARK: The host

/// The host whose callbacks are running (C callbacks carry no Swift context: they find it here).
nonisolated(unsafe) var current: Host?

/// A regular file (epoll refuses it: lk_watch_fd's LK_ESYS) and a scratch folder, one per process.
let scratch: (folder: String, regularFD: Int32) = {
    let folder = "/tmp/loopkit-cabi-fuzz-\(getpid())"
    mkdir(folder, 0o700)
    let fd = open(folder + "/regular", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
    precondition(fd >= 0, "cannot make the fuzzer's scratch file")
    return (folder, fd)
}()

/// Everything one input's host holds, and what it expects of the loop.
final class Host {
    var loop: OpaquePointer?
    var isShutDown = false
    var pipe: (read: Int32, write: Int32) = (-1, -1)
    var pool: OpaquePointer?
    var poolQueueLimit = 0
    var timers: [OpaquePointer] = []
    var watches: [OpaquePointer] = []
    var signals: [(handle: OpaquePointer?, signum: Int32)] = []
    var udps: [OpaquePointer] = []
    /// Children not freed: id -> (handle, exited); ids of children whose on_exit ran.
    var children: [Int: OpaquePointer] = [:]
    var exitedChildren: Set<Int> = []
    var pathWatches: [(handle: OpaquePointer, stopped: Bool)] = []
    /// Jobs and works whose one callback has not run: id -> handle (nil without one).
    var jobs: [Int: OpaquePointer?] = [:]
    var works: [Int: OpaquePointer?] = [:]
    /// File calls whose cb has not run: id -> buffer (freed by the cb, as a host may).
    var files: [Int: UnsafeMutableRawPointer?] = [:]
    /// File calls (an even id) whose request handle the host holds until their cb returns; those lk_fs_cancel
    /// cancelled (their cb must say LK_ECANCELED).
    var requests: [Int: OpaquePointer] = [:]
    var cancelledFiles: Set<Int> = []
    let requestSlot = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: 1)
    var fileDescriptors: [Int32] = []
    /// A pipe a file read waits on (a shared pool thread blocked in read()), written at the end.
    var blockingPipe: (read: Int32, write: Int32) = (-1, -1)
    var nextID = 1
    /// Work queued (lk_loop_enqueue accepted it) and queued work that ran; invoked work that ran.
    var enqueued = 0
    var queuedRan = 0
    var ran = 0
    var inCallback = 0
    var threadCalls = 0

    func id() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    func start() {
        _ = scratch
        var out: OpaquePointer?
        expect(lk_init(), [ok, noMemory], "lk_init")
        expect(lk_loop_create(&out), [ok, noMemory], "lk_loop_create")
        fuzzCheck(out != nil, "lk_loop_create gave no loop")
        loop = out
        fuzzCheck(lk_loop_is_current(loop) == 1, "a new loop is not current on its thread")
        var fds: [Int32] = [0, 0]
        precondition(Glibc.pipe(&fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        self.pipe = (fds[0], fds[1])
    }

    /// Runs one operation; `op` picks it.
    func perform(_ op: UInt8, _ program: inout Program) {
        let loop = self.loop!
        let accepting: Set<Int32> = isShutDown ? [closed] : [ok]
        switch op % 29 {
        case 0:  // enqueue
            let status = lk_loop_enqueue(loop, { _ in current!.queuedRan += 1 }, nil)
            expect(status, accepting, "lk_loop_enqueue")
            if status == ok { enqueued += 1 }
        case 1:  // invoke: inline on the loop's thread
            let before = ran
            let status = lk_loop_invoke(loop, { _ in current!.ran += 1 }, nil)
            expect(status, isShutDown ? [ok, closed] : [ok], "lk_loop_invoke")
            if status == ok { fuzzCheck(ran == before + 1, "lk_loop_invoke on the loop's thread did not run inline") }
        case 2:  // invoke and wait: inline on the loop's thread
            let before = ran
            let status = lk_loop_invoke_wait(loop, { _ in current!.ran += 1 }, nil)
            expect(status, isShutDown ? [ok, closed] : [ok], "lk_loop_invoke_wait")
            if status == ok { fuzzCheck(ran == before + 1, "lk_loop_invoke_wait on the loop's thread did not run inline") }
        case 3:  // timer
            // The last value of each: a duration with the top bit set (292 years; it never fires here).
            let delay = topBitDuration(UInt64(program.int(0...40)), last: 40, unit: 25_000)
            let repeating = program.bool() ? topBitDuration(UInt64(program.int(1...20)), last: 20, unit: 50_000) : 0
            var out: OpaquePointer?
            let keep = program.bool() || repeating > 0
            let fired: lk_fn = { _ in current!.timerFired() }
            let status = keep ? lk_timer_start(loop, delay, repeating, fired, nil, &out) : lk_timer_start(loop, delay, repeating, fired, nil, nil)
            expect(status, accepting, "lk_timer_start")
            if status == ok && keep { timers.append(out!) }
        case 4:  // timer cancel
            guard !timers.isEmpty else { return }
            expect(lk_timer_cancel(timers.remove(at: program.int(0...(timers.count - 1)))), [ok], "lk_timer_cancel")
        case 5:  // watch
            let choice = program.int(0...4)
            let fd: Int32 = [pipe.read, pipe.write, -1, scratch.regularFD, pipe.read][choice]
            let events = Int32(program.int(0...4))
            var out: OpaquePointer?
            // Always with a handle (one without lives until the loop ends, and the pipe outlives no input).
            let status = lk_watch_fd(loop, fd, events, { _, fd, events in current!.watchFired(fd, events) }, nil, &out)
            if fd < 0 || events == 0 || events > 3 {
                expect(status, [invalid], "lk_watch_fd(fd \(fd), events \(events))")
            } else if isShutDown {
                expect(status, [closed], "lk_watch_fd after shutdown")
            } else if fd == scratch.regularFD {
                expect(status, [system], "lk_watch_fd on a regular file")
                fuzzCheck(lk_last_errno() == EPERM, "lk_last_errno after a regular file's watch: \(lk_last_errno())")
            } else {
                expect(status, [ok], "lk_watch_fd")
            }
            if status == ok { watches.append(out!) }
        case 6:  // watch cancel
            guard !watches.isEmpty else { return }
            expect(lk_watch_cancel(watches.remove(at: program.int(0...(watches.count - 1)))), [ok], "lk_watch_cancel")
        case 7:  // the pipe: write a few bytes or drain it
            if program.bool() {
                let bytes = [UInt8](repeating: 0x2A, count: program.int(1...8))
                _ = write(pipe.write, bytes, bytes.count)
            } else {
                var buffer = [UInt8](repeating: 0, count: 64)
                _ = read(pipe.read, &buffer, 64)
            }
        case 8:  // process
            let count = program.int(0...48)
            let budget = program.bool() ? 0 : UInt64(program.int(1...50)) * 2_000
            let update: lk_update_fn? = program.bool() ? { _, done, total in
                fuzzCheck(done <= total, "lk_process update \(done) of \(total)")
            } : nil
            let job = id()
            var out: OpaquePointer?
            // Always a complete: it tells when the handle stops being valid.
            let status = lk_process(loop, count, budget, { _, _ in }, update, { context, status in
                current!.jobCompleted(Int(bitPattern: context), status)
            }, UnsafeMutableRawPointer(bitPattern: job), &out)
            expect(status, accepting, "lk_process")
            if status == ok { jobs[job] = out }
        case 9:  // job cancel
            guard let (_, handle) = jobs.randomElement(using: &program), let handle else { return }
            expect(lk_job_cancel(handle), [ok], "lk_job_cancel")
        case 10:  // work on a pool of this input's own, or on the shared pool
            let shared = program.bool()
            if !shared && pool == nil {
                poolQueueLimit = program.int(1...3)
                var out: OpaquePointer?
                expect(lk_work_pool_create(1, poolQueueLimit, &out), [ok, system], "lk_work_pool_create")
                pool = out
                guard pool != nil else { return }
            }
            let work = id()
            var out: OpaquePointer?
            let status = lk_work_queue(loop, shared ? nil : pool, { _ in usleep(50) }, { context, status in
                current!.workEnded(Int(bitPattern: context), status)
            }, UnsafeMutableRawPointer(bitPattern: work), &out)
            expect(status, isShutDown ? [closed] : shared ? [ok] : [ok, again], "lk_work_queue")
            if status == ok { works[work] = out }
        case 11:  // work cancel
            guard let (_, handle) = works.randomElement(using: &program), let handle else { return }
            expect(lk_work_cancel(handle), [ok, busy], "lk_work_cancel")
        case 12:  // pool info
            var info = lk_work_pool_info()
            let mine = program.bool() && pool != nil
            expect(lk_work_pool_get_info(mine ? pool : nil, &info), [ok], "lk_work_pool_get_info")
            fuzzCheck(info.threads >= 1 && info.queued <= info.queue_limit, "pool info \(info)")
            if mine { fuzzCheck(info.threads == 1 && info.queue_limit == poolQueueLimit, "own pool info \(info)") }
        case 13:  // files
            fileCall(&program)
        case 14:  // UDP
            udpCall(&program)
        case 15:  // one iteration, never blocking
            let status = lk_loop_run_once(loop, 0)
            if isShutDown { expect(status, [closed], "lk_loop_run_once after shutdown") } else { fuzzCheck(status >= 0, "lk_loop_run_once returned \(status)") }
        case 16:  // stop: the next run returns
            expect(lk_loop_stop(loop), [ok], "lk_loop_stop")
            if !isShutDown, program.bool() {
                // A run that queued work stops: it returns once that work has run.
                expect(lk_loop_enqueue(loop, { _ in
                    current!.queuedRan += 1
                    expect(lk_loop_stop(current!.loop), [ok], "lk_loop_stop inside a callback")
                }, nil), [ok], "lk_loop_enqueue")
                enqueued += 1
                expect(lk_loop_run(loop), [ok], "lk_loop_run")
            } else if isShutDown {
                expect(lk_loop_run(loop), [closed], "lk_loop_run after shutdown")
            }
        case 17:  // shutdown (rarely)
            guard program.int(0...7) == 0 else { return }
            isShutDown = true  // the work the shutdown runs sees a loop that refuses new work
            expect(lk_loop_shutdown(loop), [ok], "lk_loop_shutdown")
            expect(lk_loop_shutdown(loop), [ok], "lk_loop_shutdown twice")
            signals.removeAll { $0.handle == nil }  // cancelled with the loop
        case 18:  // iteration observer
            let observer: lk_iteration_fn? = program.bool() ? { _, report in
                fuzzCheck(report!.pointee.total_ns >= report!.pointee.drain_ns, "an iteration shorter than its drain")
            } : nil
            let status = lk_loop_set_iteration_observer(loop, observer, nil)
            expect(status, isShutDown ? [ok, closed] : [ok], "lk_loop_set_iteration_observer")
        case 19:  // NULL and out-of-range arguments
            nullCalls(&program)
        case 20:  // the library's strings
            let status = Int32(truncatingIfNeeded: Int(program.byte()) - 128)
            fuzzCheck(lk_strerror(status) != nil && strlen(lk_strerror(status)) > 0, "lk_strerror(\(status))")
            fuzzCheck(String(cString: lk_version()) == "\(LK_VERSION_MAJOR).\(LK_VERSION_MINOR).\(LK_VERSION_PATCH)", "lk_version")
            _ = lk_loop_iteration(loop)
            // A spin with the top bit set is taken whole, clamped to 10 ms like any value above it.
            for spin in [UInt64.max, 1 << 63] {
                expect(lk_loop_set_timer_spin(loop, spin), [ok], "lk_loop_set_timer_spin(\(spin))")
                fuzzCheck(lk_loop_timer_spin(loop) == 10_000_000, "lk_loop_timer_spin after \(spin): \(lk_loop_timer_spin(loop))")
            }
            expect(lk_loop_set_timer_spin(loop, 0), [ok], "lk_loop_set_timer_spin(0)")
        case 21:  // calls from inside a callback: no re-entrant run, no destroy from inside
            let status = lk_loop_enqueue(loop, { _ in current!.reentrantCalls() }, nil)
            expect(status, accepting, "lk_loop_enqueue")
            if status == ok { enqueued += 1 }
        case 22:  // calls from another thread
            guard threadCalls < 4 else { return }
            threadCalls += 1
            crossThreadCalls()
        case 23:  // signals (SIGUSR1, SIGUSR2; raised only while watched)
            let signum = [SIGUSR1, SIGUSR2, 0, 65][program.int(0...3)]
            let keep = program.bool()
            var out: OpaquePointer?
            let status = keep ? lk_signal_watch(loop, signum, { _, _ in }, nil, &out) : lk_signal_watch(loop, signum, { _, _ in }, nil, nil)
            if signum < 1 || signum > 64 { expect(status, [invalid], "lk_signal_watch(\(signum))") } else {
                expect(status, isShutDown ? [closed] : [ok, system], "lk_signal_watch")
            }
            if status == ok { signals.append((out, signum)) }
        case 24:  // raise a watched signal, or cancel a watch
            if program.bool() {
                guard !isShutDown, let watched = signals.randomElement(using: &program) else { return }
                raise(watched.signum)
            } else {
                guard let index = signals.indices.randomElement(using: &program), let handle = signals[index].handle else { return }
                expect(lk_signal_cancel(handle), [ok], "lk_signal_cancel")
                signals.remove(at: index)
            }
        case 26:  // a child process
            childSpawn(&program)
        case 27:  // a child's calls
            childCall(&program)
        case 28:  // path watching
            pathWatchCall(&program)
        default:  // a few iterations
            for _ in 0..<program.int(1...4) {
                let status = lk_loop_run_once(loop, 0)
                if isShutDown { expect(status, [closed], "lk_loop_run_once after shutdown") } else { fuzzCheck(status >= 0, "lk_loop_run_once returned \(status)") }
            }
        }
    }

    // MARK: Callbacks

    func timerFired() {
        fuzzCheck(lk_loop_is_current(loop) == 1, "a timer fired off the loop's thread")
    }

    func watchFired(_ fd: Int32, _ events: Int32) {
        fuzzCheck(fd == pipe.read || fd == pipe.write, "a watch fired for fd \(fd)")
        fuzzCheck(events & ~Int32(LK_READABLE | LK_WRITABLE) == 0 && events != 0, "a watch fired with events \(events)")
    }

    func jobCompleted(_ job: Int, _ status: Int32) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "a job completed off the loop's thread")
        fuzzCheck(jobs.removeValue(forKey: job) != nil, "job \(job) completed twice, or never started")
        expect(status, [ok, cancelled], "lk_process's complete")
    }

    func workEnded(_ work: Int, _ status: Int32) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "a work's after ran off the loop's thread")
        fuzzCheck(works.removeValue(forKey: work) != nil, "work \(work)'s after ran twice, or it never started")
        expect(status, [ok, cancelled], "lk_work_queue's after")
    }

    func fileDone(_ call: Int, _ status: Int32, _ result: Int64) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "a file call's cb ran off the loop's thread")
        guard let buffer = files.removeValue(forKey: call) else {
            fuzzCheck(false, "file call \(call)'s cb ran twice, or it never started")
            return
        }
        expect(status, cancelledFiles.remove(call) != nil ? [cancelled] : [ok, system, cancelled], "an lk_fs_* cb")
        if let handle = requests.removeValue(forKey: call) {
            expect(lk_fs_cancel(handle), [busy], "lk_fs_cancel inside its own cb")  // valid until the cb returns
        }
        if status == system { fuzzCheck(Int64(lk_last_errno()) == result && result > 0, "an lk_fs_* cb's errno \(result), lk_last_errno \(lk_last_errno())") }
        // As a host may: the buffer (or lk_fs_info) is released by the cb that ends the call.
        buffer?.deallocate()
        if call < 0 && status == ok && result >= 0 { fileDescriptors.append(Int32(result)) }  // an open
    }

    func scanDone(_ call: Int, _ status: Int32, _ entries: UnsafePointer<lk_fs_dirent>?, _ count: Int) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "lk_fs_scandir's cb ran off the loop's thread")
        fuzzCheck(files.removeValue(forKey: call) != nil, "scan \(call)'s cb ran twice, or it never started")
        expect(status, cancelledFiles.remove(call) != nil ? [cancelled] : [ok, system, cancelled], "lk_fs_scandir's cb")
        if let handle = requests.removeValue(forKey: call) {
            expect(lk_fs_cancel(handle), [busy], "lk_fs_cancel inside lk_fs_scandir's cb")
        }
        fuzzCheck((count > 0) == (entries != nil) && (status == ok || count == 0), "a scan's cb: \(status), \(count) entries")
        if status == system { fuzzCheck(lk_last_errno() > 0, "a failed scan's lk_last_errno \(lk_last_errno())") }
        var previous: [UInt8]?
        for index in 0..<count {
            let entry = entries![index]
            let name = Array(UnsafeBufferPointer(start: entry.name, count: strlen(entry.name)).map { UInt8(bitPattern: $0) })
            fuzzCheck(!name.isEmpty && !name.contains(0x2F) && name != [0x2E] && name != [0x2E, 0x2E], "a scanned name \(name)")
            fuzzCheck((0...7).contains(entry.type), "a scanned type \(entry.type)")
            if let previous { fuzzCheck(previous.lexicographicallyPrecedes(name), "scanned names out of order") }
            previous = name
        }
    }

    /// Inside queued work (phase 3): no re-entrant run, no destroy; queuing goes on.
    func reentrantCalls() {
        queuedRan += 1
        guard let loop else { return }
        // While the loop shuts down (lk_loop_destroy runs what was queued), a run may be refused as closed first.
        expect(lk_loop_run_once(loop, 0), isShutDown ? [busy, closed] : [busy], "lk_loop_run_once inside a callback")
        expect(lk_loop_run(loop), isShutDown ? [busy, closed] : [busy], "lk_loop_run inside a callback")
        expect(lk_loop_destroy(loop), [busy], "lk_loop_destroy inside a callback")
        let status = lk_loop_enqueue(loop, { _ in current!.queuedRan += 1 }, nil)
        expect(status, isShutDown ? [closed] : [ok], "lk_loop_enqueue inside a callback")
        if status == ok { enqueued += 1 }
    }

    /// What another thread may and may not do: queue (any thread), watch and process (the loop's thread only).
    func crossThreadCalls() {
        final class Box: @unchecked Sendable {
            var loop: OpaquePointer?
            var statuses: [Int32] = []
        }
        let box = Box()
        box.loop = loop
        var thread = pthread_t()
        let pointer = Unmanaged.passRetained(box).toOpaque()
        precondition(pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.statuses.append(lk_loop_enqueue(box.loop, { _ in current!.queuedRan += 1 }, nil))
            box.statuses.append(lk_watch_fd(box.loop, 0, Int32(LK_READABLE), { _, _, _ in }, nil, nil))
            box.statuses.append(lk_process(box.loop, 1, 0, { _, _ in }, nil, nil, nil, nil))
            box.statuses.append(lk_loop_is_current(box.loop))
            box.statuses.append(lk_loop_destroy(box.loop))
            box.statuses.append(lk_loop_stop(box.loop))
            return nil
        }, pointer) == 0)
        pthread_join(thread, nil)
        expect(box.statuses[0], isShutDown ? [closed] : [ok], "lk_loop_enqueue from another thread")
        if box.statuses[0] == ok { enqueued += 1 }
        expect(box.statuses[1], isShutDown ? [closed, wrongThread] : [wrongThread], "lk_watch_fd from another thread")
        expect(box.statuses[2], isShutDown ? [closed, wrongThread] : [wrongThread], "lk_process from another thread")
        fuzzCheck(box.statuses[3] == 0, "lk_loop_is_current is 1 on another thread")
        expect(box.statuses[4], [wrongThread], "lk_loop_destroy from another thread")
        expect(box.statuses[5], [ok], "lk_loop_stop from another thread")
    }

    // MARK: Files and UDP

    func fileCall(_ program: inout Program) {
        let loop = self.loop!
        let accepting: Set<Int32> = isShutDown ? [closed] : [ok, again]
        let path = scratch.folder + "/f\(program.int(0...3))"
        let cb: lk_fs_fn = { context, status, result in current!.fileDone(Int(bitPattern: context), status, result) }
        let status: Int32
        var call = id()
        var buffer: UnsafeMutableRawPointer?
        // Calls with an even id hand back a request (the _req twins), for lk_fs_cancel; the others pass NULL.
        requestSlot.pointee = nil
        var request: UnsafeMutablePointer<OpaquePointer?>? { call % 2 == 0 ? requestSlot : nil }
        switch program.int(0...10) {
        case 0:
            call = -call  // an open: its descriptor is closed at the end
            status = lk_fs_open_req(loop, path, O_CREAT | O_RDWR, 0o600, cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 1:
            let length = program.int(0...4096)
            buffer = .allocate(byteCount: max(1, length), alignment: 8)
            buffer!.initializeMemory(as: UInt8.self, repeating: program.byte(), count: max(1, length))
            let fd = fileDescriptors.last ?? scratch.regularFD
            status = lk_fs_write_req(loop, fd, buffer, length, Int64(program.int(0...8192)) - 1, cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 2:
            let length = program.int(0...4096)
            buffer = .allocate(byteCount: max(1, length), alignment: 8)
            let fd = fileDescriptors.last ?? scratch.regularFD
            status = lk_fs_read_req(loop, fd, buffer, length, Int64(program.int(0...8192)) - 1, cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 3:
            buffer = .allocate(byteCount: MemoryLayout<lk_fs_info>.size, alignment: 8)
            status = lk_fs_stat_req(loop, path, buffer!.assumingMemoryBound(to: lk_fs_info.self), cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 4:
            status = lk_fs_unlink_req(loop, path, cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 5:
            status = lk_fs_rename_req(loop, path, scratch.folder + "/f\(program.int(0...3))", cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 6:
            status = lk_fs_mkdir_req(loop, scratch.folder + "/d\(program.int(0...1))", 0o700, cb, UnsafeMutableRawPointer(bitPattern: call), request)
        case 7:
            // Only with no file call pending: a pending one may use the descriptor (whose number is reused).
            guard files.isEmpty, let fd = fileDescriptors.popLast() else { return }
            status = lk_fs_close_req(loop, fd, cb, UnsafeMutableRawPointer(bitPattern: call), request)
            if status != ok { fileDescriptors.append(fd) }
        case 9:
            let path = [scratch.folder, scratch.folder + "/d0", scratch.folder + "/f0", "/nonexistent"][program.int(0...3)]
            status = lk_fs_scandir(loop, path, { context, status, entries, count in
                current!.scanDone(Int(bitPattern: context), status, entries, count)
            }, UnsafeMutableRawPointer(bitPattern: call), request)
        case 10:
            // Cancel a pending request: LK_OK before a pool thread took it (its cb then says LK_ECANCELED), else LK_EBUSY.
            guard let (pending, handle) = requests.randomElement(using: &program) else { return }
            let cancel = lk_fs_cancel(handle)
            expect(cancel, cancelledFiles.contains(pending) ? [busy] : [ok, busy], "lk_fs_cancel")
            if cancel == ok { cancelledFiles.insert(pending) }
            return
        default:
            // A read of the pipe: a shared pool thread waits in read() until the host writes (at the end).
            guard blockingPipe.read < 0 else { return }
            var fds: [Int32] = [0, 0]
            precondition(Glibc.pipe(&fds) == 0)
            blockingPipe = (fds[0], fds[1])
            buffer = .allocate(byteCount: 16, alignment: 8)
            status = lk_fs_read_req(loop, blockingPipe.read, buffer, 16, -1, cb, UnsafeMutableRawPointer(bitPattern: call), request)
        }
        expect(status, accepting, "an lk_fs_* call")
        if status == ok { files[call] = buffer } else { buffer?.deallocate() }
        if status == ok, call % 2 == 0 {
            fuzzCheck(requestSlot.pointee != nil, "an lk_fs_*_req call gave no request")
            requests[call] = requestSlot.pointee
        } else {
            fuzzCheck(requestSlot.pointee == nil, "an lk_fs_* call that returned \(status) set *req")
        }
    }

    func udpCall(_ program: inout Program) {
        let loop = self.loop!
        if udps.isEmpty || program.int(0...3) == 0 {
            guard udps.count < 3 else { return }
            let host = ["127.0.0.1", "::1", "localhost", "256.1.1.1", "0.0.0.0"][program.int(0...4)]
            let flags = UInt32(program.int(0...15))
            // Sizes in range, past it, and with the top bit set (SIZE_MAX, 2^63: negative as a Swift Int).
            let batch = [0, 8, 16, 24, 1024, 1025, Int(bitPattern: UInt.max), Int.min][program.int(0...7)]
            let size = [0, 1024, 2048, 65_535, Int(bitPattern: UInt.max), Int.min + 2048][program.int(0...5)]
            var out: OpaquePointer?
            let status = lk_udp_bind(loop, host, 0, flags, batch, size, &out)
            if host == "localhost" || host == "256.1.1.1" || !(0...1024).contains(batch) || !(0...65_535).contains(size) {
                expect(status, [invalid], "lk_udp_bind(\(host))")
            } else {
                expect(status, isShutDown ? [closed] : [ok, invalid, system], "lk_udp_bind(\(host), flags \(flags))")
            }
            if status == ok {
                fuzzCheck(lk_udp_local_port(out) > 0, "a bound socket has no port")
                udps.append(out!)
            }
            return
        }
        let index = program.int(0...(udps.count - 1))
        let udp = udps[index]
        let state: Set<Int32> = isShutDown ? [closed] : []
        switch program.int(0...7) {
        case 0:
            let port = lk_udp_local_port(udp)
            let bytes = [UInt8](repeating: 7, count: program.int(0...600))
            let status = lk_udp_send(udp, bytes, bytes.count, program.bool() ? "127.0.0.1" : "::1", port)
            expect(status, state.union([ok, invalid, again, system]), "lk_udp_send")
        case 1:
            let status = lk_udp_recv_start(udp, { _, udp, datagrams, count in
                fuzzCheck(count >= 1 && datagrams != nil, "a receive callback with \(count) datagrams")
                if let first = datagrams?.pointee, first.length > 0 {
                    expect(lk_udp_reply(udp, first.data, min(first.length, 64), datagrams), [ok, again, system], "lk_udp_reply")
                }
                expect(lk_udp_close(udp), [busy], "lk_udp_close inside its own receive callback")
            }, nil)
            expect(status, state.union([ok]), "lk_udp_recv_start")
        case 2:
            expect(lk_udp_recv_stop(udp), state.union([ok]), "lk_udp_recv_stop")
        case 3:
            let ttl = program.int(0...300) - 10
            let status = lk_udp_set_ttl(udp, Int32(ttl))
            if (1...255).contains(ttl) { expect(status, state.union([ok, system]), "lk_udp_set_ttl(\(ttl))") } else {
                expect(status, state.union([invalid]), "lk_udp_set_ttl(\(ttl))")
            }
        case 4:
            let value = program.int(0...3) - 1
            // 0 off, any other value on.
            let status = [lk_udp_set_broadcast, lk_udp_set_multicast_loop][program.int(0...1)](udp, Int32(value))
            expect(status, state.union([ok, system]), "lk_udp_set_*(\(value))")
        case 5:
            let status = lk_udp_connect(udp, ["127.0.0.1", "::1", "nowhere"][program.int(0...2)], Int32(program.int(0...2) * 30000))
            expect(status, state.union([ok, invalid, system]), "lk_udp_connect")
        case 6:
            let queued = lk_udp_queued(udp)
            fuzzCheck(queued >= 0, "lk_udp_queued returned \(queued) (documented: a count, LK_EINVAL, LK_ETHREAD)")
        default:
            expect(lk_udp_close(udp), [ok], "lk_udp_close")
            udps.remove(at: index)
        }
    }

    // MARK: Child processes and path watching

    func childSpawn(_ program: inout Program) {
        let loop = self.loop!
        let kind = program.int(0...5)
        let file = ["/bin/cat", "/bin/true", "sh", "/nonexistent/x", scratch.folder, "sh"][kind]
        let arguments: [String] = kind == 5 ? ["-c", "echo out; echo err >&2; exit 3"] : []
        let stdio = (0..<3).map { _ in Int32([LK_CHILD_NULL, LK_CHILD_PIPE, LK_CHILD_PIPE, 7][program.int(0...3)]) }
        let flags = UInt32(program.int(0...2))
        let badDirectory = program.int(0...7) == 0
        let timeout = program.bool() ? topBitDuration(UInt64(program.int(1...50)), last: 50, unit: 1_000_000) : 0
        let child = id()
        var out: OpaquePointer?
        let status = withCStrings([file] + arguments + [badDirectory ? "/nonexistent" : scratch.folder]) { strings in
            var args: [UnsafePointer<CChar>?] = Array(strings[1..<(1 + arguments.count)]) + [nil]
            return args.withUnsafeMutableBufferPointer { args in
                var options = lk_child_options()
                options.file = strings[0]
                options.args = UnsafePointer(args.baseAddress)
                options.cwd = strings.last!
                options.stdio = (stdio[0], stdio[1], stdio[2])
                options.flags = flags
                options.timeout_ns = timeout
                return lk_child_spawn(loop, &options, { context, handle, exitStatus, signal in
                    current!.childExited(Int(bitPattern: context), handle, exitStatus, signal)
                }, program.bool() ? { context, handle, fd, data, length in
                    current!.childOutput(Int(bitPattern: context), handle, fd, data, length)
                } : nil, UnsafeMutableRawPointer(bitPattern: child), &out)
            }
        }
        if stdio.contains(7) || flags > 1 || badDirectory {
            expect(status, isShutDown ? [invalid, closed] : [invalid], "lk_child_spawn with a bad option")
        } else if isShutDown {
            expect(status, [closed], "lk_child_spawn after shutdown")
        } else if kind == 3 || kind == 4 {
            expect(status, [system], "lk_child_spawn(\(file))")
            fuzzCheck(lk_last_errno() == (kind == 3 ? ENOENT : EACCES), "lk_child_spawn(\(file)): errno \(lk_last_errno())")
        } else {
            expect(status, [ok, system], "lk_child_spawn(\(file))")  // EAGAIN, EMFILE
        }
        if status == ok {
            fuzzCheck(lk_child_pid(out) > 0, "a child without a pid")
            children[child] = out!
        }
    }

    func childCall(_ program: inout Program) {
        guard let (child, handle) = children.randomElement(using: &program) else { return }
        switch program.int(0...5) {
        case 0:
            let signum = [0, SIGTERM, SIGKILL, SIGUSR1, 65][program.int(0...4)]
            let status = lk_child_kill(handle, signum)
            if signum < 1 || signum > 64 { expect(status, [invalid], "lk_child_kill(\(signum))") } else {
                expect(status, [ok, system], "lk_child_kill(\(signum))")
            }
        case 1:
            expect(lk_child_terminate(handle, topBitDuration(UInt64(program.int(0...20)), last: 20, unit: 1_000_000)), [ok], "lk_child_terminate")
        case 2:
            let bytes = [UInt8](repeating: 0x41, count: program.int(0...2000))
            expect(lk_child_write(handle, bytes, bytes.count), [ok, invalid, closed, again], "lk_child_write")
            for length in topBitSizes { expect(lk_child_write(handle, bytes, length), [invalid], "lk_child_write(length \(UInt(bitPattern: length)))") }
        case 3:
            expect(lk_child_on_stdin_writable(handle, { _, _ in }), [ok, invalid, closed], "lk_child_on_stdin_writable")
            expect(lk_child_close_stdin(handle), [ok, invalid, closed], "lk_child_close_stdin")
        case 4:
            fuzzCheck(lk_child_pid(handle) > 0, "lk_child_pid after the start")
        default:
            expect(lk_child_free(handle), [ok], "lk_child_free")
            children.removeValue(forKey: child)
        }
    }

    func childExited(_ child: Int, _ handle: OpaquePointer?, _ exitStatus: Int32, _ signal: Int32) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "on_exit off the loop's thread")
        fuzzCheck(children[child] == handle, "on_exit for a child freed or unknown (\(child))")
        fuzzCheck(exitedChildren.insert(child).inserted, "on_exit twice for child \(child)")
        fuzzCheck((0...255).contains(exitStatus) && (0...64).contains(signal), "exit \(exitStatus), signal \(signal)")
        if child % 5 == 0 {  // freed inside its own callback, as allowed
            expect(lk_child_free(handle), [ok], "lk_child_free inside on_exit")
            children.removeValue(forKey: child)
        }
    }

    func childOutput(_ child: Int, _ handle: OpaquePointer?, _ fd: Int32, _ data: UnsafeRawPointer?, _ length: Int) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "on_output off the loop's thread")
        fuzzCheck(children[child] == handle, "on_output for a child freed or unknown")
        fuzzCheck(fd == 1 || fd == 2, "on_output for fd \(fd)")
        fuzzCheck(length == 0 || data != nil, "on_output without its bytes")
    }

    func pathWatchCall(_ program: inout Program) {
        let loop = self.loop!
        let path = [scratch.folder, scratch.folder + "/f0", scratch.folder + "/nonexistent", ""][program.int(0...3)]
        let flags = UInt32(program.int(0...2))
        let action = pathWatches.isEmpty ? 0 : program.int(0...4)
        let index = pathWatches.isEmpty ? 0 : program.int(0...(pathWatches.count - 1))
        let expected: (Set<Int32>, String)
        let status: Int32
        switch action {
        case 0:
            guard pathWatches.count < 3 else { return }
            var out: OpaquePointer?
            status = lk_fs_watch_start(loop, path, flags, { _, watch, path, changes in
                current!.pathChanged(watch, path, changes)
            }, nil, &out)
            if path.isEmpty || flags > 1 { expected = (isShutDown ? [invalid, closed] : [invalid], "lk_fs_watch_start(\(path), \(flags))") }
            else if isShutDown { expected = ([closed], "lk_fs_watch_start after shutdown") }
            else { expected = ([ok, system], "lk_fs_watch_start(\(path))") }  // ENOENT (f0 may not exist), ENOSPC, EMFILE
            if status == ok { pathWatches.append((out!, false)) }
        case 1:
            let watch = pathWatches[index]
            status = lk_fs_watch_add(watch.handle, path, flags)
            expected = (path.isEmpty || flags > 1 || watch.stopped || isShutDown ? [invalid, closed] : [ok, system], "lk_fs_watch_add(\(path), \(flags))")
        case 2:
            let watch = pathWatches[index]
            status = lk_fs_watch_remove(watch.handle, path)
            expected = ([ok, invalid, closed], "lk_fs_watch_remove(\(path))")
        case 3:
            status = lk_fs_watch_stop(pathWatches[index].handle)
            expected = (pathWatches[index].stopped || isShutDown ? [closed] : [ok], "lk_fs_watch_stop")
            pathWatches[index].stopped = true
        default:
            status = lk_fs_watch_free(pathWatches[index].handle)
            expected = ([ok], "lk_fs_watch_free")
            pathWatches.remove(at: index)
        }
        expect(status, expected.0, expected.1)
    }

    func pathChanged(_ watch: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ changes: Int32) {
        fuzzCheck(lk_loop_is_current(loop) == 1, "a path watch's fn off the loop's thread")
        guard let index = pathWatches.firstIndex(where: { $0.handle == watch }) else {
            fuzzCheck(false, "a path watch's fn after it was freed")
            return
        }
        fuzzCheck(!pathWatches[index].stopped, "a path watch's fn after it was stopped")
        fuzzCheck(path != nil && changes != 0 && changes & ~255 == 0, "a path watch's fn with changes \(changes)")
        expect(lk_fs_watch_free(watch), [busy], "lk_fs_watch_free inside its own fn")
        if changes & Int32(LK_FS_REMOVED) != 0 {
            expect(lk_fs_watch_stop(watch), [ok], "lk_fs_watch_stop inside its own fn")
            pathWatches[index].stopped = true
        }
    }

    // MARK: NULL

    /// Every call with a NULL handle, callback or out-parameter: LK_EINVAL (or the documented value).
    func nullCalls(_ program: inout Program) {
        let loop = self.loop!
        var out: OpaquePointer?
        switch program.int(0...5) {
        case 0:
            expect(lk_loop_create(nil), [invalid], "lk_loop_create(NULL)")
            expect(lk_loop_destroy(nil), [invalid], "lk_loop_destroy(NULL)")
            expect(lk_loop_run(nil), [invalid], "lk_loop_run(NULL)")
            expect(lk_loop_run_once(nil, 0), [invalid], "lk_loop_run_once(NULL)")
            expect(lk_loop_stop(nil), [invalid], "lk_loop_stop(NULL)")
            expect(lk_loop_shutdown(nil), [invalid], "lk_loop_shutdown(NULL)")
            fuzzCheck(lk_loop_iteration(nil) == 0 && lk_loop_is_current(nil) == 0 && lk_loop_event_base(nil) == nil, "NULL loop queries")
            expect(lk_loop_attach(nil, &out), [invalid], "lk_loop_attach(NULL)")
            expect(lk_loop_main(nil), [invalid], "lk_loop_main(NULL)")
        case 1:
            expect(lk_loop_enqueue(nil, { _ in }, nil), [invalid], "lk_loop_enqueue(NULL)")
            expect(lk_loop_enqueue(loop, nil, nil), [invalid], "lk_loop_enqueue(fn NULL)")
            expect(lk_loop_invoke(loop, nil, nil), [invalid], "lk_loop_invoke(fn NULL)")
            expect(lk_loop_invoke_wait(nil, { _ in }, nil), [invalid], "lk_loop_invoke_wait(NULL)")
            expect(lk_loop_set_iteration_observer(nil, nil, nil), [invalid], "lk_loop_set_iteration_observer(NULL)")
        case 2:
            expect(lk_timer_start(nil, 0, 0, { _ in }, nil, &out), [invalid], "lk_timer_start(NULL)")
            expect(lk_timer_start(loop, 0, 0, nil, nil, &out), [invalid], "lk_timer_start(fn NULL)")
            expect(lk_timer_cancel(nil), [invalid], "lk_timer_cancel(NULL)")
            expect(lk_watch_fd(nil, 0, 1, { _, _, _ in }, nil, &out), [invalid], "lk_watch_fd(NULL)")
            expect(lk_watch_fd(loop, 0, 1, nil, nil, &out), [invalid], "lk_watch_fd(fn NULL)")
            expect(lk_watch_cancel(nil), [invalid], "lk_watch_cancel(NULL)")
            expect(lk_signal_watch(nil, SIGUSR1, { _, _ in }, nil, &out), [invalid], "lk_signal_watch(NULL)")
            expect(lk_signal_cancel(nil), [invalid], "lk_signal_cancel(NULL)")
        case 3:
            expect(lk_process(nil, 1, 0, { _, _ in }, nil, nil, nil, nil), [invalid], "lk_process(NULL)")
            expect(lk_process(loop, 1, 0, nil, nil, nil, nil, nil), [invalid], "lk_process(each NULL)")
            expect(lk_job_cancel(nil), [invalid], "lk_job_cancel(NULL)")
            expect(lk_work_pool_create(0, 1, &out), [invalid], "lk_work_pool_create(0 threads)")
            expect(lk_work_pool_create(1, 0, &out), [invalid], "lk_work_pool_create(queue 0)")
            expect(lk_work_pool_create(1, 1, nil), [invalid], "lk_work_pool_create(out NULL)")
            expect(lk_work_pool_shutdown(nil), [invalid], "lk_work_pool_shutdown(NULL)")
            expect(lk_work_pool_destroy(nil), [invalid], "lk_work_pool_destroy(NULL)")
            expect(lk_work_pool_get_info(nil, nil), [invalid], "lk_work_pool_get_info(out NULL)")
            expect(lk_work_queue(nil, nil, { _ in }, nil, nil, nil), [invalid], "lk_work_queue(NULL)")
            expect(lk_work_queue(loop, nil, nil, nil, nil, nil), [invalid], "lk_work_queue(work NULL)")
            expect(lk_work_cancel(nil), [invalid], "lk_work_cancel(NULL)")
            for size in topBitSizes {
                let shown = UInt(bitPattern: size)
                expect(lk_process(loop, size, 0, { _, _ in }, nil, { _, _ in fuzzCheck(false, "a refused lk_process completed") }, nil, nil),
                       [invalid], "lk_process(count \(shown))")
                expect(lk_work_pool_create(size, 1, &out), [invalid], "lk_work_pool_create(threads \(shown))")
                expect(lk_work_pool_create(1, size, &out), [invalid], "lk_work_pool_create(queue \(shown))")
            }
        case 4:
            expect(lk_fs_open(nil, "/", 0, 0, nil, nil), [invalid], "lk_fs_open(NULL)")
            expect(lk_fs_open(loop, nil, 0, 0, nil, nil), [invalid], "lk_fs_open(path NULL)")
            expect(lk_fs_close(loop, -1, nil, nil), [invalid], "lk_fs_close(-1)")
            expect(lk_fs_read(loop, 0, nil, 1, 0, nil, nil), [invalid], "lk_fs_read(buffer NULL)")
            expect(lk_fs_read(loop, -1, &out, 1, 0, nil, nil), [invalid], "lk_fs_read(-1)")
            expect(lk_fs_write(loop, 0, nil, 1, 0, nil, nil), [invalid], "lk_fs_write(buffer NULL)")
            expect(lk_fs_stat(loop, "/", nil, nil, nil), [invalid], "lk_fs_stat(out NULL)")
            expect(lk_fs_unlink(loop, nil, nil, nil), [invalid], "lk_fs_unlink(NULL)")
            expect(lk_fs_rename(loop, "/a", nil, nil, nil), [invalid], "lk_fs_rename(to NULL)")
            expect(lk_fs_mkdir(loop, nil, 0, nil, nil), [invalid], "lk_fs_mkdir(NULL)")
            expect(lk_fs_scandir(nil, "/", nil, nil, nil), [invalid], "lk_fs_scandir(NULL)")
            expect(lk_fs_scandir(loop, nil, nil, nil, &out), [invalid], "lk_fs_scandir(path NULL)")
            expect(lk_fs_stat_req(loop, "/", nil, nil, nil, &out), [invalid], "lk_fs_stat_req(out NULL)")
            expect(lk_fs_cancel(nil), [invalid], "lk_fs_cancel(NULL)")
            var byte: UInt8 = 0
            for size in topBitSizes {
                expect(lk_fs_read(loop, 0, &byte, size, 0, nil, nil), [invalid], "lk_fs_read(len \(UInt(bitPattern: size)))")
                expect(lk_fs_write(loop, 1, &byte, size, -1, nil, nil), [invalid], "lk_fs_write(len \(UInt(bitPattern: size)))")
            }
        default:
            expect(lk_udp_bind(nil, "127.0.0.1", 0, 0, 0, 0, &out), [invalid], "lk_udp_bind(NULL)")
            expect(lk_udp_bind(loop, nil, 0, 0, 0, 0, &out), [invalid], "lk_udp_bind(host NULL)")
            expect(lk_udp_bind(loop, "127.0.0.1", 70000, 0, 0, 0, &out), isShutDown ? [invalid, closed] : [invalid], "lk_udp_bind(port 70000)")
            expect(lk_udp_local_port(nil), [invalid], "lk_udp_local_port(NULL)")
            expect(lk_udp_send(nil, nil, 0, nil, 0), [invalid], "lk_udp_send(NULL)")
            expect(lk_udp_recv_start(nil, nil, nil), [invalid], "lk_udp_recv_start(NULL)")
            expect(lk_udp_close(nil), [invalid], "lk_udp_close(NULL)")
            if let udp = udps.first {
                expect(lk_udp_send(udp, nil, 5, "127.0.0.1", 9), isShutDown ? [invalid, closed] : [invalid], "lk_udp_send(data NULL, 5)")
                var byte: UInt8 = 0
                for size in topBitSizes {
                    expect(lk_udp_send(udp, &byte, size, nil, 0), isShutDown ? [invalid, closed] : [invalid], "lk_udp_send(length \(UInt(bitPattern: size)))")
                }
            }
        }
    }

    // MARK: The end

    /// Releases every handle, frees the loop, and checks that every promised callback ran once.
    func finish() {
        for timer in timers { expect(lk_timer_cancel(timer), [ok], "lk_timer_cancel") }
        for watch in watches { expect(lk_watch_cancel(watch), [ok], "lk_watch_cancel") }
        for signal in signals { if let handle = signal.handle { expect(lk_signal_cancel(handle), [ok], "lk_signal_cancel") } }
        for udp in udps { expect(lk_udp_close(udp), [ok], "lk_udp_close") }
        for (index, watch) in pathWatches.enumerated() where index % 2 == 0 {
            expect(lk_fs_watch_free(watch.handle), [ok], "lk_fs_watch_free")
        }
        pathWatches = pathWatches.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        timers = []; watches = []; signals = []; udps = []
        // Some iterations first (or not), so work is both done and still pending when the loop is freed.
        if !isShutDown { for _ in 0..<3 { _ = lk_loop_run_once(loop, 0) } }
        isShutDown = true  // what lk_loop_destroy's shutdown runs sees a loop that refuses new work
        expect(lk_loop_destroy(loop), [ok], "lk_loop_destroy")
        // Every child the loop's shutdown found running was killed and told; handles are freed after it.
        for (child, handle) in children {
            fuzzCheck(exitedChildren.contains(child), "child \(child) not told of its end by the loop's shutdown")
            expect(lk_child_free(handle), [ok], "lk_child_free after the loop")
        }
        children = [:]
        for watch in pathWatches { expect(lk_fs_watch_free(watch.handle), [ok], "lk_fs_watch_free after the loop") }
        pathWatches = []
        // A pool thread blocked in read() on the pipe: release it (its cb has run, cancelled, with the loop).
        if blockingPipe.write >= 0 { _ = write(blockingPipe.write, "0123456789abcdef", 16) }
        if let pool { expect(lk_work_pool_destroy(pool), [ok], "lk_work_pool_destroy") }
        // Every job's complete, every work's after and every file call's cb ran, once; all queued work ran.
        fuzzCheck(jobs.isEmpty, "\(jobs.count) jobs never completed")
        fuzzCheck(works.isEmpty, "\(works.count) works never got their after callback")
        fuzzCheck(files.isEmpty, "\(files.count) file calls never got their cb")
        fuzzCheck(requests.isEmpty && cancelledFiles.isEmpty, "\(requests.count) file requests held after their cb")
        requestSlot.deallocate()
        fuzzCheck(queuedRan == enqueued, "queued work lost: \(enqueued) queued, \(queuedRan) ran")
        // The shared pool may still hold this input's file calls' work (their cbs ran cancelled): wait for it,
        // so the next input starts clean and nothing runs into freed memory unseen.
        var info = lk_work_pool_get_info_value()
        var spins = 0
        while info.active + info.queued > 0 && spins < 20_000 {
            usleep(100)
            info = lk_work_pool_get_info_value()
            spins += 1
        }
        for fd in fileDescriptors { close(fd) }
        close(pipe.read)
        close(pipe.write)
        if blockingPipe.read >= 0 {
            close(blockingPipe.read)
            close(blockingPipe.write)
        }
        loop = nil
    }
}

/// Sizes with the top bit set as the Swift Ints C's size_t arrives as: SIZE_MAX, 2^63, 2^63 + 1024.
let topBitSizes = [Int(bitPattern: UInt.max), Int.min, Int.min + 1024]

/// `value * unit`, or for the range's last two values a duration with the top bit set (UINT64_MAX, 2^63).
func topBitDuration(_ value: UInt64, last: UInt64, unit: UInt64) -> UInt64 {
    switch value {
    case last: .max
    case last - 1: 1 << 63
    default: value * unit
    }
}

func lk_work_pool_get_info_value() -> lk_work_pool_info {
    var info = lk_work_pool_info()
    _ = lk_work_pool_get_info(nil, &info)
    return info
}

extension Dictionary {
    func randomElement(using program: inout Program) -> Element? {
        guard !isEmpty else { return nil }
        let keys = self.keys.sorted { "\($0)" < "\($1)" }
        let key = keys[program.int(0...(keys.count - 1))]
        return (key, self[key]!)
    }
}

extension Array {
    func randomElement(using program: inout Program) -> Element? {
        guard !isEmpty else { return nil }
        return self[program.int(0...(count - 1))]
    }
}

extension Range where Bound == Int {
    func randomElement(using program: inout Program) -> Int? {
        guard !isEmpty else { return nil }
        return lowerBound + program.int(0...(count - 1))
    }
}

/// `strings` as C strings for the duration of `body`.
func withCStrings<Result>(_ strings: [String], _ body: ([UnsafePointer<CChar>]) -> Result) -> Result {
    let copies = strings.map { strdup($0)! }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) })
}
