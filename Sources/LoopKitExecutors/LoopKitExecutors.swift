@_spi(ExperimentalCustomExecutors) import _Concurrency
import LoopKit
import Synchronization

/// Puts Swift concurrency's own executors on LoopKit's loops: the main actor on ``LoopKit/EventLoop/main``,
/// and, on request, every `Task { }` on the loops of a ``LoopKit/LoopGroup``.
///
/// One line at the top of an `async` main, before its first `await`:
///
/// ```swift
/// @main struct Server {
///     static func main() async throws {
///         LoopKitExecutors.install()                        // @MainActor runs on EventLoop.main
///         // LoopKitExecutors.install(defaultExecutor: group) // …and Task { } on the group's loops
///         …
///     }
/// }
/// ```
///
/// After the install, the program's `async` main runs on the main loop: when it first suspends, Swift
/// runs the main executor, which is `EventLoop.main.run()`. `@MainActor` jobs are the main loop's queued work
/// (rules R1–R3, in FIFO order with everything else queued on it), `DispatchQueue.main` blocks still run as
/// rule R12 says. A `@MainActor` task's `Task.sleep(for:)` is timed by the default executor (Swift runs the
/// nonisolated sleep off the main actor) and comes back to the main loop; sleep on `EventLoop.main.clock`
/// for a timer of the main loop.
///
/// **What is SPI.** Swift 6.3 offers these hooks as experimental SPI (SE "Custom main and global
/// executors"): `ExecutorFactory`, `MainExecutor`, `RunLoopExecutor` and `_createExecutors(factory:)`
/// (`@_spi(ExperimentalCustomExecutors)`), and `SchedulingExecutor` (`@_spi(ExperimentalScheduling)`). Only
/// this module imports the first four; `LoopKit` imports `SchedulingExecutor` alone, in one file, to make its
/// loops take sleeping tasks. A toolchain that changes or drops them fails to build this module: programs
/// then run `EventLoop.main` from a synchronous main, where it already runs `DispatchQueue.main` and
/// `@MainActor` work (rule R12), and tasks sleep on `loop.clock`.
public enum LoopKitExecutors {
    /// Makes the main loop Swift's main executor and, when `group` is given, the group Swift's default
    /// executor. Call once, first thing in `main`, before any `await` and before any task starts.
    ///
    /// - Parameter group: Loops to run every task that has no other executor on (`Task { }`, task groups,
    ///   nonisolated async functions), in place of Swift's cooperative pool; nil keeps that pool.
    ///
    /// Call on the main thread. Stops the process with a message when called twice or off the main thread.
    public static func install(defaultExecutor group: LoopGroup? = nil) {
        let main = EventLoop.main
        precondition(main.isCurrent, "LoopKitExecutors.install() must be called on the main thread, at the top of main")
        let first = Installation.group.withLock { installed in
            guard !installed.done else { return false }
            installed = (true, group)
            return true
        }
        precondition(first, "LoopKitExecutors.install() was called twice")
        _createExecutors(factory: LoopKitExecutorFactory.self)
    }

    /// Whether ``install(defaultExecutor:)`` has run. Safe from any thread.
    public static var isInstalled: Bool { Installation.group.withLock { $0.done } }
}

/// What ``LoopKitExecutors/install(defaultExecutor:)`` chose, read by the factory right after.
enum Installation {
    static let group = Mutex<(done: Bool, group: LoopGroup?)>((false, nil))
    static let mainExecutor = MainLoopExecutor(EventLoop.main)
}

/// The factory Swift asks for its executors (`_createExecutors(factory:)`).
struct LoopKitExecutorFactory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { Installation.mainExecutor }

    static var defaultExecutor: any TaskExecutor {
        if let group = Installation.group.withLock({ $0.group }) { return LoopGroupExecutor(group) }
        return PlatformExecutorFactory.defaultExecutor
    }
}
