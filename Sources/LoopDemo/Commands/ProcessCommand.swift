import ArgumentParser
import LoopDemoKit
import LoopKit

/// `LoopDemo process`: the responsiveness part with your numbers.
struct ProcessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process",
        abstract: "Process items through ArrayProcessor with a live bar and a spinner."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "How many items.")
    var items = 1_000_000

    @Option(help: "The time budget per loop iteration, in milliseconds.")
    var budget = 4.0

    @Flag(name: .customLong("per-item"), help: "One item per iteration (the fixed per-item order) instead of a time budget.")
    var perItem = false

    @Option(help: "Work per item, in microseconds (calibrated busy work).")
    var workMicroseconds = 2.0

    func validate() throws {
        guard items >= 1 else { throw ValidationError("--items must be at least 1") }
        guard budget > 0, budget <= 1_000 else { throw ValidationError("--budget must be in (0, 1000] ms") }
        guard workMicroseconds >= 0 else { throw ValidationError("--work-microseconds must not be negative") }
    }

    func run() throws {
        var settings = TourSettings.standard
        settings.items = items
        settings.budget = perItem ? .perItem : .time(.nanoseconds(Int64(budget * 1_000_000)))
        settings.perItemItems = nil
        settings.nanosecondsPerItem = UInt64(workMicroseconds * 1_000)
        try runTour([ResponsivenessPart(settings: settings)], settings: settings, options: global)
    }
}
