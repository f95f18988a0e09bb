import ArgumentParser
import LoopDemoKit

/// `LoopDemo steps`: the step sequence part.
struct StepsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "steps",
        abstract: "Step sequences: a retried step, a failed one, a cancelled sequence."
    )

    @OptionGroup var global: GlobalOptions

    func run() throws {
        try runTour([StepsPart(settings: .standard)], settings: .standard, options: global)
    }
}

/// `LoopDemo diff`: the batch updates part.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "A list that receives rounds of data, diffed and committed as batch updates."
    )

    @OptionGroup var global: GlobalOptions

    func run() throws {
        try runTour([BatchUpdatesPart(settings: .standard)], settings: .standard, options: global)
    }
}

/// `LoopDemo main-actor`: a @MainActor view model fed by background loops, on the main loop.
struct MainActorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "main-actor",
        abstract: "A @MainActor view model updated from work on background loops, inside the main loop."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "Items the background loops process.")
    var items = 1_000_000

    func validate() throws {
        guard items >= 1 else { throw ValidationError("--items must be at least 1") }
    }

    func run() throws {
        var settings = TourSettings.standard
        settings.items = items
        try runTour([MainActorPart(settings: settings)], settings: settings, options: global)
    }
}

/// `LoopDemo bench`: quick in-process figures.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Quick in-process figures: enqueue, iteration with poll, cross-thread enqueue and round trip."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "Operations per figure.")
    var operations = 1_000_000

    func validate() throws {
        guard operations >= 1_000 else { throw ValidationError("--operations must be at least 1,000") }
    }

    func run() throws {
        let output = global.makeOutput()
        _ = try QuickBench(operations: operations, roundTrips: max(1_000, operations / 50)).run(output: output)
        output.finish()
    }
}
