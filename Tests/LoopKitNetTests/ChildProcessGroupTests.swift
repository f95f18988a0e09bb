import Foundation
import LoopKit
@testable import LoopKitNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a child started: a shell's background job outlives the shell and holds its pipes. A timeout and
/// `terminate` end the child's process group, and `run` returns within a bounded drain after the exit
/// whatever still holds the pipes (issue 43, item 1). Each case's grandchild sleeps 600 s: before the fix, each
/// hung until the one-minute limit.
@Suite("Child process groups", .timeLimit(.minutes(5)))
struct ChildProcessGroupTests {
    /// `sh -c` that starts `job` in the background, prints its pid, and waits for it.
    private static func shellWithBackgroundJob(_ job: String = "sleep 600") -> [String] {
        ["-c", "\(job) & echo $!; wait"]
    }

    @Test("run's timeout ends the shell's background job too, and run returns")
    func runTimeoutEndsTheGroup() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let result = try await onLoop(loop) {
            try await ChildProcess.run("/bin/sh", arguments: Self.shellWithBackgroundJob(), timeout: .milliseconds(200), on: loop)
        }
        #expect(result.timedOut)
        #expect(result.termination == .signaled(SIGTERM))
        let grandchild = try #require(Self.pid(in: result.standardOutput))
        #expect(await Self.waitUntilGone(grandchild))
    }

    @Test("run returns after the exit although a background job still holds the pipes (no timeout)")
    func runReturnsWithinTheDrain() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let result = try await onLoop(loop) {
            try await ChildProcess.run("/bin/sh", arguments: ["-c", "sleep 600 & echo $!; exit 4"], on: loop)
        }
        #expect(result.termination == .exited(4))
        #expect(!result.timedOut)
        let grandchild = try #require(Self.pid(in: result.standardOutput))
        #expect(kill(grandchild, 0) == 0)  // nothing asked it to end: it runs on
        kill(grandchild, SIGKILL)
    }

    @Test("terminate ends the group: a grandchild that ignores SIGTERM is killed after the grace period, the pipes end")
    func terminateEndsTheGroup() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let (termination, grandchild, leads) = try await onLoop(loop) {
            let child = try ChildProcess.spawn(
                "/bin/sh", arguments: Self.shellWithBackgroundJob("(trap '' TERM; exec sleep 600)"), newProcessGroup: true,
                standardInput: .null, on: loop)
            let line = try await readBytes(2, from: child.standardOutput!)
            child.terminate(gracePeriod: .milliseconds(300))
            let termination = await child.termination
            let rest = try await readToEnd(from: child.standardOutput!)  // ends: the drain closes what the job holds
            _ = try await readToEnd(from: child.standardError!)
            return (termination, Self.pid(in: Bytes(line + rest)), child.leadsProcessGroup)
        }
        #expect(leads)
        #expect(termination == .signaled(SIGTERM))  // the shell itself took the TERM
        let job = try #require(grandchild)
        #expect(await Self.waitUntilGone(job))  // the kill timer's SIGKILL reached the group after the shell had ended
    }

    @Test("terminate of a child in this process's group signals the child alone, and its pipes still end")
    func terminateWithoutAGroup() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let (termination, grandchild, refused) = try await onLoop(loop) {
            let child = try ChildProcess.spawn("/bin/sh", arguments: Self.shellWithBackgroundJob(), standardInput: .null, on: loop)
            let line = try await readBytes(2, from: child.standardOutput!)
            var refused = false
            do throws(ProcessError) { try child.kill(SIGTERM, toProcessGroup: true) } catch .invalidArgument { refused = true } catch {}
            child.terminate(gracePeriod: .seconds(30))
            let termination = await child.termination
            let rest = try await readToEnd(from: child.standardOutput!)
            return (termination, Self.pid(in: Bytes(line + rest)), refused)
        }
        #expect(refused)
        #expect(termination == .signaled(SIGTERM))
        let job = try #require(grandchild)
        #expect(kill(job, 0) == 0)  // not in the child's group: not signalled
        kill(job, SIGKILL)
    }

    @Test("kill(_:toProcessGroup:) reaches the background job of a group leader")
    func killTheGroup() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let (termination, grandchild) = try await onLoop(loop) {
            let child = try ChildProcess.spawn("/bin/sh", arguments: Self.shellWithBackgroundJob(), newProcessGroup: true,
                                               standardInput: .null, on: loop)
            let line = try await readBytes(2, from: child.standardOutput!)
            try child.kill(SIGKILL, toProcessGroup: true)
            let termination = await child.termination
            let rest = try await readToEnd(from: child.standardOutput!)  // the job died too: the pipe ends at once
            return (termination, Self.pid(in: Bytes(line + rest)))
        }
        #expect(termination == .signaled(SIGKILL))
        let job = try #require(grandchild)
        #expect(await Self.waitUntilGone(job))
    }

    /// The first line of `output` as a pid.
    private static func pid(in output: Bytes) -> pid_t? {
        let text = String(decoding: output, as: UTF8.self)
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Whether `pid` is gone or a zombie within 10 s (a signalled process ends soon after the signal, not at once;
    /// init reaps an orphan).
    private static func waitUntilGone(_ pid: pid_t) async -> Bool {
        for _ in 0..<1000 {
            if kill(pid, 0) != 0 { return true }
            if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), stat.contains(") Z ") { return true }
            try? await Task.sleep(for: .milliseconds(10))  // a state to poll, not an order: no thread is held
        }
        return false
    }
}
