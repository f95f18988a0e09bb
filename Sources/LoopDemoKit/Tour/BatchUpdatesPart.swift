import LoopKit

/// A list in the terminal that receives rounds of new data: a SectionedDataSource diffs each round on a
/// worker and commits it on this loop as batch updates to a ``TerminalList``.
public struct BatchUpdatesPart: TourPart {
    public let id = "batch-updates"
    public let title = "Batch updates"
    public let settings: TourSettings

    public init(settings: TourSettings) { self.settings = settings }

    public var blurb: String {
        "a SectionedDataSource diffs each round of data on a worker; the loop commits it as batch updates "
            + "to a list in the terminal (+ inserted, ↕ moved, ~ updated, - deleted)."
    }

    typealias Section = DiffSection<String, ListRow>

    static let rounds: [[Section]] = [
        [
            Section("To do", items: [ListRow(1, "write docs"), ListRow(2, "fix bug #12"), ListRow(3, "review PR #40"),
                                     ListRow(4, "release 1.0"), ListRow(5, "update README")]),
            Section("Done", items: [ListRow(6, "set up CI")]),
        ],
        [
            Section("To do", items: [ListRow(7, "triage issues"), ListRow(1, "write docs"), ListRow(2, "fix bug #12 (urgent)"),
                                     ListRow(4, "release 1.0"), ListRow(5, "update README")]),
            Section("Done", items: [ListRow(6, "set up CI")]),
        ],
        [
            Section("To do", items: [ListRow(4, "release 1.0"), ListRow(7, "triage issues"), ListRow(1, "write docs"),
                                     ListRow(5, "update README")]),
            Section("Done", items: [ListRow(2, "fix bug #12 (urgent)"), ListRow(6, "set up CI")]),
        ],
        [
            Section("To do", items: [ListRow(8, "write changelog"), ListRow(4, "release 1.0"), ListRow(1, "write docs")]),
            Section("Done", items: [ListRow(7, "triage issues"), ListRow(2, "fix bug #12 (urgent)"), ListRow(6, "set up CI")]),
        ],
    ]

    public func run(_ context: PartContext) throws -> PartOutcome {
        let loop = context.loop
        let out = context.output
        let id = self.id
        let rounds = Self.rounds
        let workers = try LoopGroup(threads: 1, name: "demo-diff")
        defer { workers.shutdown() }
        let source = try SectionedDataSource(rounds[0], on: loop, diffingOn: workers)
        let list = TerminalList(rounds[0])
        var committed = 0
        var allMatched = true

        func show(_ title: String) {
            let lines = list.render(out)
            if out.isLive {
                out.clearLive()
                out.setLive("title", "  " + title)
                for (index, line) in lines.enumerated() { out.setLive("row\(index)", line) }
            } else {
                out.line("  " + title, part: id, event: "list")
                for line in lines { out.line(line, part: id, event: "row") }
            }
        }
        show("round 0: the initial list")

        try source.onChanges { [weak source] changes in
            guard let source else { return }
            let round = Int(changes.generation)
            list.beginRound()
            do {
                try source.commit(changes, to: list)
            } catch {
                out.line("  round \(round): commit refused: \(error)", part: id, event: "error")
                return
            }
            committed += 1
            let matches = list.titles == source.sections.map { $0.items.map(\.title) }
            allMatched = allMatched && matches
            let c = list.counts
            let summary = "round \(round): \(c.inserted) inserted, \(c.moved) moved, \(c.updated) updated, \(c.deleted) deleted "
                + "in \(list.batches) batch\(list.batches == 1 ? "" : "es"); list \(matches ? "matches" : "DOES NOT match") the data source"
            if out.isLive {
                out.line("  " + summary, part: id, event: "round")
                show(out.bold("round \(round)"))
            } else {
                out.event(part: id, event: "round", fields: [
                    ("round", .number(round)), ("inserted", .number(c.inserted)), ("moved", .number(c.moved)),
                    ("updated", .number(c.updated)), ("deleted", .number(c.deleted)), ("batches", .number(list.batches)),
                    ("matches", .bool(matches)),
                ])
                show(summary)
            }
            if round == rounds.count - 1 { loop.stop() }
        }

        // The rounds arrive from a timer, as data from a server would.
        var timers: [ScheduledTimer] = []
        for round in 1..<rounds.count {
            let data = rounds[round]
            timers.append(try loop.schedule(after: settings.paced(450 * round)) {
                _ = try? source.submit(data)
            })
        }
        let all = timers
        context.onCancel {
            for timer in all { timer.cancel() }
            try? loop.enqueue { loop.stop() }
        }
        try loop.run()
        try source.onChanges(nil)
        if out.isLive {
            // Keep the final list on screen.
            out.clearLive()
            for line in list.render(out) { out.line(line, part: id, event: "row") }
        }
        out.line("  \(committed) of \(rounds.count - 1) rounds committed; the list matched the data source after "
                 + (allMatched ? "every one" : "NOT every one"), part: id, event: "result",
                 fields: [("rounds", .number(committed)), ("matched", .bool(allMatched))])
        return committed == rounds.count - 1 ? .completed : .cancelled
    }
}
