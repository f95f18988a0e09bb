import ArgumentParser
import LoopDemoKit

/// LoopDemo: the tour a new user runs first (`make demo`), and its parts one by one.
@main
struct LoopDemo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "LoopDemo",
        abstract: "A tour of LoopKit: a responsive loop, progress, step sequences, batch updates, cross-thread work, the main actor.",
        discussion: """
            On a terminal, bars and lists redraw in place (at most once per loop iteration, 60 times a second); \
            through a pipe the same information prints as plain lines. Ctrl-C cancels the running part, prints \
            what completed, and ends the tour (exit status 130).
            """,
        subcommands: [TourCommand.self, ProcessCommand.self, StepsCommand.self, DiffCommand.self, MainActorCommand.self, BenchCommand.self, EchoCommand.self, UDPEchoCommand.self, ServeCommand.self, FetchCommand.self],
        defaultSubcommand: TourCommand.self
    )
}
