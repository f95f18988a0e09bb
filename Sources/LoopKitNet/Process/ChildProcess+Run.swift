import LoopKit

/// What ``ChildProcess/run(_:arguments:environment:workingDirectory:newProcessGroup:input:outputLimit:timeout:on:)`` collected.
/// A plain value; safe from any thread.
public struct ProcessOutput: Sendable, Hashable {
    /// How the process ended.
    public var termination: ProcessTermination
    /// Its standard output, at most the output limit.
    public var standardOutput: Bytes
    /// Its standard error, at most the output limit.
    public var standardError: Bytes
    /// Standard output or error went past the limit: the rest was read and dropped.
    public var isTruncated: Bool
    /// The timeout expired and the process was terminated.
    public var timedOut: Bool
}

/// Collects one pipe's bytes up to a limit. Loop-confined.
private final class PipeCollector {
    var bytes: [UInt8] = []
    var truncated = false
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func take(_ buffer: UnsafeRawBufferPointer) {
        let room = limit - bytes.count
        if buffer.count > room {
            truncated = true
            bytes.append(contentsOf: buffer.prefix(max(room, 0)))
        } else {
            bytes.append(contentsOf: buffer)
        }
    }
}

extension ChildProcess {
    /// Runs `executable` to its end and returns its exit and its output: standard output and error each
    /// collected up to `outputLimit` bytes (the rest is read and dropped, so the child never blocks on a
    /// full pipe), standard input fed from `input` then closed (`/dev/null` when nil).
    ///
    /// It returns at most ``ChildProcess/pipeDrain`` after the child's exit: pipes that a descendant still holds
    /// open then (a shell's background job) are closed, and what came later is not collected. With a `timeout`,
    /// the call so returns within the timeout, the grace period and the drain, whatever the child started: in
    /// its own process group (the default), the timeout terminates the group.
    ///
    /// - Parameters:
    ///   - executable: A path, such as `/bin/sh`, or a name looked up in `PATH`, such as `sh` (as in ``spawn(_:arguments:environment:workingDirectory:newProcessGroup:standardInput:standardOutput:standardError:timeout:on:)``).
    ///   - arguments: The arguments after argv[0].
    ///   - environment: `NAME=value` strings, or nil for this process's environment.
    ///   - workingDirectory: The child's directory, or nil for this process's.
    ///   - newProcessGroup: The child leads a process group of its own (the default), so the timeout, and the
    ///     loop's shutdown, end everything it started in it; false keeps it in this process's group (a
    ///     terminal's Ctrl-C reaches it; the timeout signals the child alone).
    ///   - input: The bytes of its standard input, or nil for `/dev/null`.
    ///   - outputLimit: The most bytes kept of standard output, and of standard error.
    ///   - timeout: Terminate it and its process group (`SIGTERM`, `SIGKILL` after 1 s) if it still runs then.
    ///   - loop: The loop that observes it.
    /// - Returns: The termination, both outputs, and whether they were truncated or the timeout expired.
    /// - Throws: As ``spawn(_:arguments:environment:workingDirectory:newProcessGroup:standardInput:standardOutput:standardError:timeout:on:)``;
    ///   ``ProcessError/invalidArgument(_:)`` for a negative limit.
    ///
    /// Call on the loop's thread: from a `Task` whose executor preference is `loop`.
    public static func run(
        _ executable: String, arguments: [String] = [], environment: [String]? = nil, workingDirectory: String? = nil,
        newProcessGroup: Bool = true, input: Bytes? = nil, outputLimit: Int = 1 << 20, timeout: Duration? = nil,
        on loop: EventLoop
    ) async throws(ProcessError) -> ProcessOutput {
        guard outputLimit >= 0 else { throw .invalidArgument("outputLimit must not be negative, got \(outputLimit)") }
        let child = try spawn(executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                              newProcessGroup: newProcessGroup, standardInput: input == nil ? .null : .pipe, timeout: timeout,
                              on: loop)
        let output = PipeCollector(limit: outputLimit)
        let errors = PipeCollector(limit: outputLimit)
        var pending = 3  // the exit and the two pipes' ends
        var waiter: UnsafeContinuation<Void, Never>?
        let oneDone = {
            pending -= 1
            if pending == 0, let continuation = waiter {
                waiter = nil
                continuation.resume()
            }
        }
        for (connection, collector) in [(child.standardOutput, output), (child.standardError, errors)] {
            guard let connection else { continue }
            connection.onRead { buffer in
                collector.take(buffer)
                return buffer.count
            }
            connection.onClose { _ in oneDone() }
        }
        child.onExit { _ in
            oneDone()
            child.closeOutputPipes(after: ChildProcess.pipeDrain)  // a descendant may hold them open for ever
        }
        if let input, let standardInput = child.standardInput {
            do {
                try standardInput.write(input)
            } catch {
                // The child closed its input already: what it did not read is dropped, as a shell pipe does.
            }
            standardInput.close()
        }
        if pending > 0 {
            await withUnsafeContinuation { continuation in
                if pending == 0 { continuation.resume() } else { waiter = continuation }
            }
        }
        return ProcessOutput(
            termination: child.exitStatus ?? .signaled(9), standardOutput: Bytes(output.bytes), standardError: Bytes(errors.bytes),
            isTruncated: output.truncated || errors.truncated, timedOut: child.timedOut)
    }
}
