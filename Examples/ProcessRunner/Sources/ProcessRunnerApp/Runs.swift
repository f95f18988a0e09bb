import LoopKit
import LoopKitHTTP
import LoopKitNet
import Synchronization

/// A command a client may start by name: the service runs only these, never a command line from a request.
public struct Command: Sendable {
    public var executable: String
    public var arguments: [String]
    public init(_ executable: String, _ arguments: String...) { self.executable = executable; self.arguments = arguments }
}

/// What a run reports, in order: its output's lines, a line it could not take, and last how it ended.
public enum RunEvent: Sendable, Equatable {
    case line(String)
    case failed(String)
    case exited(ProcessTermination)
}

/// A run as `GET /runs/:id` shows it.
public struct RunStatus: Codable, Sendable, Equatable {
    public var id: Int
    public var command: String
    public var running = true
    public var lines = 0
    public var exitStatus: Int32?
    public var signal: Int32?
    public var error: String?
}

/// One child process and its log: every event goes to a `Broadcast` whose replay buffer lets a client
/// that comes late (or after the end) see the log from its start, or its last `replay` lines. Safe from any thread.
public final class Run: Sendable {
    public let log: Broadcast<RunEvent>
    private let state: Mutex<RunStatus>
    public var status: RunStatus { state.withLock { $0 } }

    init(id: Int, command: String, replay: Int) {
        log = Broadcast(replay: replay, bufferLimit: replay + 1_000, overflow: .dropSubscriber)  // whole, or ended
        state = Mutex(RunStatus(id: id, command: command))
    }

    /// Starts `command` on `loop` and streams its standard output's lines into the log. Loop thread.
    func start(_ command: Command, maxLineLength: Int, on loop: EventLoop) throws {
        let child = try ChildProcess.spawn(command.executable, arguments: command.arguments, newProcessGroup: true,
                                           standardInput: .null, standardError: .null, on: loop)
        Task(executorPreference: loop) { [self] in
            do {
                for try await line in child.standardOutput!.inbound.lines(maxLength: maxLineLength) { record(.line(line)) }
            } catch {
                record(.failed("\(error)"))  // a line over the limit: the run is stopped, not its memory grown
                child.terminate(gracePeriod: .seconds(1))
            }
            record(.exited(await child.termination))
        }
    }

    private func record(_ event: RunEvent) {
        state.withLock { status in
            switch event {
            case .line: status.lines += 1
            case .failed(let error): status.error = error
            case .exited(let termination):
                status.running = false
                if case .exited(let code) = termination { status.exitStatus = code }
                if case .signaled(let signal) = termination { status.signal = signal }
            }
        }
        log.send(event)
        if case .exited = event { log.finish() }
    }
}

/// The runs by id, and the commands they may be. Safe from any thread.
public final class Runs: Sendable {
    private let commands: [String: Command]
    private let runs = Mutex<[Int: Run]>([:])
    private let lastID = Atomic<Int>(0)
    private let replay: Int
    private let maxLineLength: Int

    /// - Parameters: `commands` by name (the allow-list), `replay` lines a late client sees, the longest line taken.
    public init(commands: [String: Command], replay: Int = 1_000, maxLineLength: Int = 4096) {
        self.commands = commands
        self.replay = replay
        self.maxLineLength = maxLineLength
    }

    /// Starts the command named `name` on `loop`. Loop thread.
    func start(_ name: String, on loop: EventLoop) throws -> Run {
        guard let command = commands[name] else {
            throw HTTPError(.unprocessableContent, "no command \(name); there are \(commands.keys.sorted().joined(separator: ", "))")
        }
        let id = lastID.add(1, ordering: .relaxed).newValue
        let run = Run(id: id, command: name, replay: replay)
        try run.start(command, maxLineLength: maxLineLength, on: loop)
        runs.withLock { $0[id] = run }
        return run
    }

    subscript(id: Int) -> Run? { runs.withLock { $0[id] } }
}
