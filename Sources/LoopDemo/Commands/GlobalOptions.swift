import ArgumentParser
import LoopDemoKit
import LoopKit

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Flag(help: "Machine-readable output: one JSON object per line.")
    var json = false

    @Flag(name: .customLong("no-color"), help: "No colours (also when NO_COLOR is set).")
    var noColor = false

    /// The output for these options: live on a terminal, plain lines elsewhere, JSON on request.
    func makeOutput() -> DemoOutput {
        DemoOutput(options: OutputOptions.detect(json: json, noColor: noColor))
    }
}

/// Runs `parts` as a tour and exits with 130 when Ctrl-C cut it short.
func runTour(_ parts: [any TourPart], settings: TourSettings, options: GlobalOptions) throws {
    // The main loop: the tour's @MainActor view model is updated inside it (rule R12).
    let report = try Tour(parts: parts, settings: settings, output: options.makeOutput(), loop: EventLoop.main).run()
    if report.interrupted { throw ExitCode(130) }
}
