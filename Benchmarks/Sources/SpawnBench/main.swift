import Foundation
import LoopKit
import LoopKitNet

// Spawn and wait for /bin/true N times, one after another (`Benchmarks/spawn-bench.sh`): LoopKit's
// ChildProcess (posix_spawn, exit by pidfd on the loop) or Foundation's Process (waitUntilExit).
//   SpawnBench loopkit|foundation [N]
// Prints "spawns/s X (N in S s)".

let mode = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "loopkit"
let count = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 1000 : 1000
let start = ContinuousClock.now
switch mode {
case "loopkit":
    let loop = try EventLoop()
    var left = count
    func next() {
        do {
            let child = try ChildProcess.spawn("/bin/true", standardInput: .null, standardOutput: .null, standardError: .null, on: loop)
            child.onExit { _ in
                left -= 1
                if left == 0 { loop.stop() } else { next() }
            }
        } catch {
            fatalError("spawn failed: \(error)")
        }
    }
    next()
    try loop.run()
case "foundation":
    for _ in 0..<count {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
    }
default:
    fatalError("mode: loopkit or foundation")
}
let seconds = Double((ContinuousClock.now - start).components.attoseconds) / 1e18 + Double((ContinuousClock.now - start).components.seconds)
print("spawns/s \(Int(Double(count) / seconds)) (\(count) in \(String(format: "%.2f", seconds)) s)")
