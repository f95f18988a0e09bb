import Foundation
import LoopKit
import LoopKitTesting
@testable import LoopKitNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Child processes on the loop, with real commands: exit codes, signals, stdio as connections, a child that
/// ignores SIGTERM, timeouts, output limits, the working directory and environment, a process group, and when the exit is
/// told (R15).
@Suite("Child processes")
struct ChildProcessTests {
    @Test("run collects standard output and error and the exit code of sh -c")
    func runCollectsOutputAndExitCode() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let result = try await onLoop(loop) {
            try await ChildProcess.run("/bin/sh", arguments: ["-c", "echo out; echo err >&2; exit 3"], on: loop)
        }
        #expect(result.termination == .exited(3))
        #expect(Array(result.standardOutput) == Array("out\n".utf8))
        #expect(Array(result.standardError) == Array("err\n".utf8))
        #expect(!result.isTruncated && !result.timedOut)
    }

    @Test("Input fed to cat comes back on its output; the working directory and environment are the child's")
    func inputDirectoryAndEnvironment() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let (echoed, location) = try await onLoop(loop) {
            let text = String(repeating: "loop ", count: 50_000)  // 250 kB: more than a pipe holds
            let echoed = try await ChildProcess.run("/bin/cat", input: Bytes(text), on: loop)
            #expect(echoed.standardOutput.count == text.utf8.count)
            let location = try await ChildProcess.run("/bin/sh", arguments: ["-c", "pwd; echo $GREETING"],
                                                      environment: ["GREETING=hello", "PATH=/usr/bin:/bin"],
                                                      workingDirectory: "/tmp", on: loop)
            return (echoed.termination, String(decoding: location.standardOutput, as: UTF8.self))
        }
        #expect(echoed == .exited(0))
        #expect(location == "/tmp\nhello\n")
    }

    @Test("Output beyond the limit is read and dropped, and reported")
    func outputLimit() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let result = try await onLoop(loop) {
            try await ChildProcess.run("/bin/sh", arguments: ["-c", "head -c 1000000 /dev/zero"], outputLimit: 1000, on: loop)
        }
        #expect(result.termination == .exited(0))
        #expect(result.standardOutput.count == 1000)
        #expect(result.isTruncated)
    }

    @Test("A signal ends a child: kill, terminate, and terminate-then-kill for a child that ignores SIGTERM")
    func signalsAndGracePeriod() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let (killed, terminated, stubborn) = try await onLoop(loop) {
            let sleeper = try ChildProcess.spawn("/bin/sleep", arguments: ["30"], standardInput: .null, on: loop)
            try sleeper.kill(SIGKILL)
            let killed = await sleeper.termination
            let polite = try ChildProcess.spawn("/bin/sleep", arguments: ["30"], standardOutput: .null, standardError: .null, on: loop)
            polite.terminate(gracePeriod: .seconds(10))
            let terminated = await polite.termination
            // The shell ignores SIGTERM (and so does the sleep it execs), says so, then waits.
            let stubborn = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "trap '' TERM; echo ready; exec sleep 30"], on: loop)
            _ = try await readBytes(6, from: stubborn.standardOutput!)
            stubborn.terminate(gracePeriod: .milliseconds(200))
            return (killed, terminated, await stubborn.termination)
        }
        #expect(killed == .signaled(SIGKILL))
        #expect(terminated == .signaled(SIGTERM))
        #expect(stubborn == .signaled(SIGKILL))
    }

    @Test("A timeout terminates the child and says so")
    func timeout() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let result = try await onLoop(loop) {
            try await ChildProcess.run("/bin/sleep", arguments: ["30"], timeout: .milliseconds(100), on: loop)
        }
        #expect(result.timedOut)
        #expect(result.termination == .signaled(SIGTERM))
    }

    @Test("A name without a slash is looked up in PATH (the child's, else this process's); a missing one is a typed error")
    func executableNamesAreLookedUpInPath() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-path-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Written through a close-on-exec descriptor: one that a child spawned meanwhile by another test inherited
        // would keep the script open for writing, and its exec would fail with ETXTBSY.
        func write(_ text: String, to path: String, mode: mode_t) -> Bool {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            return Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) == $0.count }
        }
        #expect(write("#!/bin/sh\n", to: directory + "/not-executable", mode: 0o644))
        #expect(write("#!/bin/sh\necho hello from $0\n", to: directory + "/greet", mode: 0o755))
        let (found, own, argv0) = try await onLoop(loop) { () async throws -> (ProcessTermination, String, String) in
            let found = try await ChildProcess.run("sh", arguments: ["-c", "exit 7"], on: loop)  // this process's PATH
            let own = try await ChildProcess.run("greet", environment: ["PATH=/no/such/directory:\(directory)"], on: loop)
            let argv0 = try await ChildProcess.run("sh", arguments: ["-c", "echo $0"], on: loop)
            return (found.termination, String(decoding: own.standardOutput, as: UTF8.self),
                    String(decoding: argv0.standardOutput, as: UTF8.self))
        }
        #expect(found == .exited(7))
        #expect(own == "hello from \(directory)/greet\n")  // the child's PATH, first match
        #expect(argv0 == "sh\n")  // argv[0] stays the name, as posix_spawnp keeps it
        try await onLoop(loop) {
            #expect(throws: ProcessError.notFoundInPath("greet", searchPath: "/no/such/directory")) {
                try ChildProcess.spawn("greet", environment: ["PATH=/no/such/directory"], on: loop)
            }
            #expect(throws: ProcessError.permissionDenied("not-executable (found in PATH, not executable)")) {
                try ChildProcess.spawn("not-executable", environment: ["PATH=\(directory)"], on: loop)
            }
        }
        #expect(ProcessError.notFoundInPath("greet", searchPath: "/a:/b").description == "no executable named 'greet' in PATH (/a:/b)")
    }

    @Test("A missing executable or working directory is a typed error; a new process group has the child's pid")
    func errorsAndProcessGroup() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        try await onLoop(loop) {
            #expect(throws: ProcessError.executableNotFound("/no/such/program")) {
                try ChildProcess.spawn("/no/such/program", on: loop)
            }
            // glibc's posix_spawn reports a chdir that fails in the child to the parent: nothing runs.
            #expect(throws: ProcessError.invalidArgument("cannot enter the working directory /no/such/directory: No such file or directory")) {
                try ChildProcess.spawn("/bin/true", workingDirectory: "/no/such/directory", on: loop)
            }
        }
        let pgid = try await onLoop(loop) { () async throws -> (Int32, String) in
            let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "cut -d' ' -f5 /proc/$$/stat"], newProcessGroup: true, on: loop)
            let output = try await readToEnd(from: child.standardOutput!)
            _ = await child.termination
            return (child.pid, String(decoding: output.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self))
        }
        #expect(String(pgid.0) == pgid.1)
    }

    @Test("R15: the exit is told in phase 2 (work onExit queues runs in the same drain); a waiting task goes on in that drain; each once")
    func exitIsToldInPhaseTwo() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        // cat runs until its input ends: the task is suspended on `termination` before the child can exit.
        let child = try ChildProcess.spawn("/bin/cat", standardOutput: .null, standardError: .null, on: loop)
        child.onExit { termination in
            trace.record("onExit \(termination)")
            try! loop.enqueue { trace.record("queued by onExit") }
        }
        Task(executorPreference: loop) {
            let termination = await child.termination
            trace.record("task \(termination)")
        }
        _ = try driver.step(2)  // the task starts and suspends
        child.standardInput!.close()  // end of input: cat exits
        var exitIteration: UInt64?
        while exitIteration == nil {
            _ = try driver.step()
            exitIteration = trace.iteration(of: "onExit exited(0)")
            if exitIteration == nil { usleep(1000) }
        }
        _ = try driver.step()
        let n = exitIteration!
        #expect(trace.description.hasSuffix("\(n):onExit exited(0) \(n):queued by onExit \(n):task exited(0)"))
        #expect(child.exitStatus == .exited(0))
        var late = 0
        child.onExit { _ in late += 1 }  // after the end: in the next iteration, once
        _ = try driver.step()
        #expect(late == 1)
    }

    @Test("The loop's shutdown kills and reaps a running child")
    func shutdownKillsTheChild() throws {
        let driver = try LoopDriver()
        let child = try ChildProcess.spawn("/bin/sleep", arguments: ["30"], on: driver.loop)
        var told: ProcessTermination?
        child.onExit { told = $0 }
        driver.loop.shutdown()
        _ = try driver.runUntilIdle()
        #expect(told == .signaled(SIGKILL))
        #expect(kill(child.pid, 0) != 0)  // reaped: no such process (not a zombie)
    }

    /// Found by the C API test in CI: the pipes ended first (`cat` then saw the end of its input and could
    /// exit 0 before the shutdown's SIGKILL reached it).
    @Test("The loop's shutdown kills a child before its pipes close: a child reading its input is killed, not ended by EOF")
    func shutdownKillsTheChildBeforeItsPipes() throws {
        let driver = try LoopDriver()
        let child = try ChildProcess.spawn("/bin/cat", standardInput: .pipe, standardOutput: .pipe,
                                           on: driver.loop)
        var pipesOpenAtExit: Bool?
        var told: ProcessTermination?
        child.onExit { termination in
            told = termination
            pipesOpenAtExit = child.standardInput?.isClosed == false && child.standardOutput?.isClosed == false
        }
        driver.loop.shutdown()
        _ = try driver.runUntilIdle()
        #expect(told == .signaled(SIGKILL))
        #expect(pipesOpenAtExit == true)
        #expect(child.standardInput?.closeReason == .shutDown)
        #expect(child.standardOutput?.isClosed == true)
    }

    /// Found by CABIFuzzer (lk_child_spawn after shutdown gave LK_ESYS for a missing executable, not LK_ECLOSED).
    @Test("A loop that has shut down refuses a spawn before anything is looked up or started")
    func aShutDownLoopRefusesASpawnFirst() throws {
        let driver = try LoopDriver()
        driver.loop.shutdown()
        #expect(throws: ProcessError.loopShutDown) { try ChildProcess.spawn("/no/such/program", on: driver.loop) }
        #expect(throws: ProcessError.loopShutDown) { try ChildProcess.spawn("no-such-program-in-path", on: driver.loop) }
        #expect(throws: ProcessError.loopShutDown) { try ChildProcess.spawn("/bin/true", on: driver.loop) }
    }
}
