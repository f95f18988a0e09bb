@testable import LoopKit
import PropertyBased
import Testing

@Suite struct TaskProgressTests {
    @Test func fractionIsCompletedOverTotal() {
        let progress = TaskProgress.discrete(totalUnitCount: 1_000)
        progress.increment(by: 420)
        #expect(progress.completedUnitCount == 420)
        #expect(progress.fractionCompleted == 0.42)
        #expect(!progress.isFinished)
        progress.completedUnitCount = 1_000
        #expect(progress.fractionCompleted == 1)
        #expect(progress.isFinished)
    }

    @Test func fractionIsClampedToOne() {
        let progress = TaskProgress.discrete(totalUnitCount: 2)
        progress.increment(by: 5)
        #expect(progress.fractionCompleted == 1)
        #expect(progress.isFinished)
    }

    @Test func zeroTotalIsNeitherFinishedNorIndeterminate() {
        let progress = TaskProgress.discrete(totalUnitCount: 0)
        #expect(progress.fractionCompleted == 0)
        #expect(!progress.isFinished)
        #expect(!progress.isIndeterminate)
    }

    @Test func childProgressCountsWeightedByPendingUnits() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        let child = TaskProgress.discrete(totalUnitCount: 4)
        parent.addChild(child, withPendingUnitCount: 5)
        child.increment(by: 2)
        #expect(parent.fractionCompleted == 0.25)
        #expect(parent.completedUnitCount == 0)
    }

    @Test func finishedChildPendingUnitsBecomeCompletedInParent() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        let child = TaskProgress.discrete(totalUnitCount: 4)
        parent.addChild(child, withPendingUnitCount: 5)
        child.increment(by: 4)
        #expect(parent.completedUnitCount == 5)
        #expect(parent.fractionCompleted == 0.5)
        // The finished child has left the tree: later changes do not reach the parent.
        child.totalUnitCount = 8
        #expect(parent.completedUnitCount == 5)
        #expect(parent.fractionCompleted == 0.5)
    }

    @Test func childWithProgressBeforeJoiningCountsAtOnce() {
        let parent = TaskProgress.discrete(totalUnitCount: 2)
        let child = TaskProgress.discrete(totalUnitCount: 4)
        child.increment(by: 2)
        parent.addChild(child, withPendingUnitCount: 2)
        #expect(parent.fractionCompleted == 0.5)
    }

    @Test func grandchildrenPropagateThroughEveryLevel() {
        let root = TaskProgress.discrete(totalUnitCount: 2)
        let middle = TaskProgress.discrete(totalUnitCount: 2)
        let leaf = TaskProgress.discrete(totalUnitCount: 4)
        root.addChild(middle, withPendingUnitCount: 2)
        middle.addChild(leaf, withPendingUnitCount: 2)
        _ = root.fractionCompleted  // everything clean
        leaf.increment()
        #expect(root.fractionCompleted == 0.25)
        leaf.increment()
        _ = middle.fractionCompleted  // a read in the middle must not hide the change from the root
        leaf.increment()
        #expect(root.fractionCompleted == 0.75)
        leaf.increment()
        #expect(root.fractionCompleted == 1)
        #expect(root.isFinished)
        #expect(root.completedUnitCount == 2)
    }

    // MARK: Indeterminate

    @Test func negativeTotalIsIndeterminate() {
        let progress = TaskProgress.discrete(totalUnitCount: -1)
        progress.increment(by: 3)
        #expect(progress.isIndeterminate)
        #expect(progress.fractionCompleted == 0)
        #expect(!progress.isFinished)
    }

    @Test func indeterminateChildMakesEveryAncestorIndeterminate() {
        let root = TaskProgress.discrete(totalUnitCount: 1)
        let middle = TaskProgress.discrete(totalUnitCount: 1)
        let leaf = TaskProgress.discrete(totalUnitCount: -1)
        root.addChild(middle, withPendingUnitCount: 1)
        middle.addChild(leaf, withPendingUnitCount: 1)
        #expect(middle.isIndeterminate)
        #expect(root.isIndeterminate)
        leaf.totalUnitCount = 10
        #expect(!root.isIndeterminate)
        leaf.totalUnitCount = -1
        #expect(root.isIndeterminate)
        leaf.totalUnitCount = 2
        leaf.increment(by: 2)
        #expect(!root.isIndeterminate)
        #expect(root.isFinished)
    }

    @Test func indeterminateChildWithoutPendingUnitsDoesNotPropagate() {
        let parent = TaskProgress.discrete(totalUnitCount: 1)
        parent.addChild(TaskProgress.discrete(totalUnitCount: -1), withPendingUnitCount: 0)
        #expect(!parent.isIndeterminate)
    }

    // MARK: Random trees

    /// A random well-formed tree: each node's total is its own units plus its children's pending units.
    struct TreeModel {
        var parents: [Int?] = []
        var pending: [Int64] = []
        var ownUnits: [Int64] = []
        var done: [Int64] = []

        init(_ genes: [Int]) {
            for (index, gene) in genes.enumerated() {
                parents.append(index == 0 ? nil : gene % index)
                pending.append(Int64(gene / 7 % 5))  // 0…4
                ownUnits.append(Int64(gene / 37 % 6))  // 0…5
                done.append(0)
            }
        }

        func children(of node: Int) -> [Int] { parents.indices.filter { parents[$0] == node } }
        func total(_ node: Int) -> Int64 { ownUnits[node] + children(of: node).map { pending[$0] }.reduce(0, +) }

        /// (fraction, completed units including finished children's pending units, finished).
        func expected(_ node: Int) -> (Double, Int64, Bool) {
            var completed = done[node]
            var childUnits = 0.0
            for child in children(of: node) {
                let (fraction, _, finished) = expected(child)
                if finished { completed += pending[child] } else { childUnits += Double(pending[child]) * fraction }
            }
            let total = total(node)
            let fraction = total > 0 ? min(1, (Double(completed) + childUnits) / Double(total)) : 0
            return (fraction, completed, total > 0 && completed >= total)
        }
    }

    @Test func fractionEqualsRecomputedWeightedSumOverRandomTrees() async {
        await propertyCheck(
            count: 200,
            input: Gen.int(in: 0...100_000).array(of: 1...40), Gen.int(in: 0...1_000_000).array(of: 0...200)
        ) { genes, steps in
            var model = TreeModel(genes)
            let nodes = genes.indices.map { TaskProgress.discrete(totalUnitCount: model.total($0)) }
            for index in nodes.indices {
                if let parent = model.parents[index] {
                    nodes[parent].addChild(nodes[index], withPendingUnitCount: model.pending[index])
                }
            }
            // Random increments of own units, with reads of random nodes in between.
            for step in steps {
                let node = step % nodes.count
                if step / nodes.count % 3 == 0 {
                    _ = nodes[step / 7 % nodes.count].fractionCompleted
                } else if model.done[node] < model.ownUnits[node] {
                    model.done[node] += 1
                    nodes[node].increment()
                }
            }
            for index in nodes.indices {
                let (fraction, completed, finished) = model.expected(index)
                #expect(abs(nodes[index].fractionCompleted - fraction) < 1e-9, "node \(index)")
                #expect(nodes[index].completedUnitCount == completed, "node \(index)")
                #expect(nodes[index].isFinished == finished, "node \(index)")
            }
            // Finish every node's own work: every node with work is finished and reads exactly 1.
            for index in nodes.indices.reversed() {
                nodes[index].increment(by: model.ownUnits[index] - model.done[index])
                model.done[index] = model.ownUnits[index]
            }
            for index in nodes.indices {
                let (fraction, completed, finished) = model.expected(index)
                #expect(abs(nodes[index].fractionCompleted - fraction) < 1e-9, "node \(index)")
                #expect(nodes[index].completedUnitCount == completed, "node \(index)")
                #expect(nodes[index].isFinished == finished, "node \(index)")
                if finished { #expect(nodes[index].fractionCompleted == 1, "node \(index)") }
            }
        }
    }
}
