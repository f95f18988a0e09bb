import Foundation
import Testing
import TestSupport

/// Runs `MainLoopProbe <scenario>` (a program whose main thread runs `EventLoop.main`; the test process's
/// own main thread belongs to the test runner) and returns its lines, after checking it exited 0.
func mainLoopProbe(_ scenario: String) throws -> [String] {
    try probe("MainLoopProbe", scenario)
}

/// Runs `program <scenario>`, a probe built beside the tests, and returns its lines, after checking it
/// exited 0 (within 30 s).
func probe(_ program: String, _ scenario: String) throws -> [String] {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(program).path
    let process = try ChildProcess(executable, [scenario], output: .pipe)
    let pid = process.pid
    let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }  // cancelled once the probe has ended
    DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
    let output = process.output?.readDataToEndOfFile() ?? Data()
    watchdog.cancel()
    let status = process.waitUntilExit()
    let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
    #expect(status == 0, "\(program) \(scenario) exited with \(status); it printed \(lines)")
    return lines
}
