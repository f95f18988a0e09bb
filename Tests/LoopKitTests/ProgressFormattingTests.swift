@testable import LoopKit
import Testing

@Suite struct ProgressFormattingTests {
    @Test(arguments: [
        (Int64(0), "0"), (999, "999"), (1_000, "1,000"), (12_345, "12,345"),
        (1_234_567, "1,234,567"), (-1_234, "-1,234"), (Int64.max, "9,223,372,036,854,775,807"),
    ])
    func countsHaveThousandsSeparators(value: Int64, text: String) {
        #expect(ProgressFormatting.grouped(value) == text)
    }

    @Test(arguments: [
        (Duration.milliseconds(200), "1 s"), (.seconds(3), "3 s"), (.milliseconds(59_400), "59 s"),
        (.seconds(60), "1 min"), (.seconds(90), "2 min"), (.seconds(3_540), "59 min"),
        (.seconds(3_600), "1 h"), (.seconds(3_900), "1 h 5 min"),
    ])
    func durationsUseSecondsThenMinutesThenHours(duration: Duration, text: String) {
        #expect(ProgressFormatting.duration(duration) == text)
    }

    @Test func percentRoundsDownAndShowsOneHundredOnlyWhenFinished() {
        #expect(ProgressFormatting.percent(0.29, finished: false) == 29)
        #expect(ProgressFormatting.percent(0.999, finished: false) == 99)
        #expect(ProgressFormatting.percent(1, finished: false) == 99)
        #expect(ProgressFormatting.percent(1, finished: true) == 100)
    }

    @Test func descriptionOfRunningProgress() {
        let snapshot = ProgressSnapshot(fractionCompleted: 0.42, completedUnitCount: 420, totalUnitCount: 1_000,
                                        estimatedTimeRemaining: .seconds(3))
        #expect(snapshot.description == "42% — 420 of 1,000 items, about 3 s left")
    }

    @Test func descriptionUsesTheConfiguredNounInSingularAndPlural() {
        let one = ProgressSnapshot(fractionCompleted: 0, completedUnitCount: 0, totalUnitCount: 1, unitName: .files)
        #expect(one.description == "0% — 0 of 1 file")
        let progress = TaskProgress.discrete(totalUnitCount: 2_048, unitName: .bytes)
        progress.increment(by: 1_024)
        #expect(progress.description == "50% — 1,024 of 2,048 bytes")
    }

    @Test func descriptionOfIndeterminateCancelledPausedAndFinishedProgress() {
        #expect(ProgressSnapshot(fractionCompleted: 0, completedUnitCount: 420, totalUnitCount: -1,
                                 isIndeterminate: true).description == "indeterminate — 420 items")
        #expect(ProgressSnapshot(fractionCompleted: 0.42, completedUnitCount: 420, totalUnitCount: 1_000,
                                 isCancelled: true).description == "cancelled — 420 of 1,000 items")
        #expect(ProgressSnapshot(fractionCompleted: 0.42, completedUnitCount: 420, totalUnitCount: 1_000,
                                 isPaused: true, estimatedTimeRemaining: .seconds(3)).description
                == "42% — 420 of 1,000 items, paused")
        #expect(ProgressSnapshot(fractionCompleted: 1, completedUnitCount: 1_000, totalUnitCount: 1_000,
                                 isFinished: true, estimatedTimeRemaining: .zero).description
                == "100% — 1,000 of 1,000 items")
    }

    @Test func descriptionOfMinutesAndHoursLeft() {
        let snapshot = ProgressSnapshot(fractionCompleted: 0.1, completedUnitCount: 1, totalUnitCount: 10,
                                        estimatedTimeRemaining: .seconds(150))
        #expect(snapshot.description == "10% — 1 of 10 items, about 3 min left")
    }
}
