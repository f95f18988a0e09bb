import ArgumentParser
import LoopDemoKit

/// `LoopDemo tour` (the default): every part, in order.
struct TourCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour",
        abstract: "Run the whole tour (the default): six parts, about ten seconds."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "A smaller tour (about two seconds), for CI and tests.")
    var quick = false

    @Option(help: "Items in the responsiveness part.")
    var items: Int?

    func validate() throws {
        if let items, items < 1 { throw ValidationError("--items must be at least 1") }
    }

    func run() throws {
        var settings = quick ? TourSettings.quick : TourSettings.standard
        if let items { settings.items = items }
        try runTour(Tour.standardParts(settings), settings: settings, options: global)
    }
}
