import Foundation

/// This benchmark executable started again as a child process with other arguments (a hidden
/// sub-command), for a scenario that needs a process of its own: it answers in lines on its stdout, its
/// stdin stays open until ``closeInput()`` (its signal to finish), its stderr is this process's.
///
/// Every wait has a deadline, so a child that hangs or dies is reported, never waited on forever.
final class ChildProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    /// Bytes read from the child's stdout and not yet returned as a line.
    private var pending: [UInt8] = []

    /// Starts this executable (`/proc/self/exe`) with `arguments`.
    init(arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The child's process id.
    var id: Int32 { process.processIdentifier }

    /// The next line the child writes (without its newline), or nil if none comes within `timeout`
    /// (the child is late or has closed its stdout: see ``state``).
    func readLine(timeout: Duration) -> String? {
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                return line
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
            var polled = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&polled, 1, Int32(clamping: milliseconds))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            pending += chunk[..<n]
        }
    }

    /// Closes the child's stdin: it reads end of file, its signal to finish.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits up to `timeout` for the child to exit; kills it (`SIGKILL`) if it has not by then. Returns
    /// whether it exited by itself. The child is reaped either way.
    @discardableResult
    func waitForExit(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        let exitedByItself = !process.isRunning
        if !exitedByItself { kill() }
        return exitedByItself
    }

    /// Kills the child (`SIGKILL`) and waits until it is reaped.
    func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Whether the child has exited with status 0.
    var succeeded: Bool {
        !process.isRunning && process.terminationReason == .exit && process.terminationStatus == 0
    }

    /// What became of the child, for an error message: running, or how it ended.
    var state: String {
        if process.isRunning { return "still running" }
        return process.terminationReason == .exit
            ? "exited with status \(process.terminationStatus)" : "killed by signal \(process.terminationStatus)"
    }
}
