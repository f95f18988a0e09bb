#if canImport(Glibc)
import Glibc
#endif
import LoopKit

// LoopDemo: the tour a new user runs first (`make demo`).
//   LoopDemo [--links N]

var links = 300_000
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--links":
        guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
            print("error: --links needs a positive number")
            exit(2)
        }
        links = value
    case "-h", "--help":
        print("usage: LoopDemo [--links N]")
        exit(0)
    default:
        print("error: unknown argument \(argument); try --help")
        exit(2)
    }
}

do {
    try ChainTour(terminal: Terminal(), links: links).run()
} catch {
    print("error: \(error)")
    exit(1)
}
