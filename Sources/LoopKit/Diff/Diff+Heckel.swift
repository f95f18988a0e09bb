// The O(n) core shared by flat and sectioned diffs: Heckel's symbol table (pair elements by identity)
// and a longest increasing subsequence (tell the elements that stayed from the ones that moved).
//
// Everything here is `@inlinable` (and the pairing `@inline(__always)`, so the identity closures
// inline too) so that a diff over a client's element type is specialised in the client: unspecialised
// generic code, calling `hashValue` and `==` through witness tables, is several times slower.

/// Old and new elements paired by identity.
///
/// The k-th occurrence of an identifier in the old data pairs with its k-th occurrence in the new data;
/// extra occurrences stay unpaired (deletions or insertions). O(n) time and memory.
///
/// The symbol table is an open-addressing hash table of old indices (the first occurrence of each
/// identifier), probed linearly from the identifier's `hashValue`. The hash only picks where to look
/// and rejects most mismatches early: a slot matches only when the identifier it points to is `==` to
/// the one looked up, so colliding hashes never pair different identifiers. Three things keep a large
/// diff out of main memory, where most of its time would go:
///
/// - a slot is one word, the old index plus the high bits of the hash as a tag, so a probe rarely reads
///   the element it points to (a `Dictionary<ID, Int>` keeps keys and values apart: two cache misses);
/// - a large table is filled one cache-sized partition at a time (old indices are grouped by the high
///   bits of their bucket with a stable counting sort, so each identifier's occurrences stay in order);
/// - a new element is first tried against the old element after the last one paired: in data that
///   mostly kept its order this pairs most elements without hashing.
@usableFromInline
struct _DiffPairing<ID: Hashable> {
    /// For each old index, the new index of its partner, or -1 when it has none.
    @usableFromInline var newIndexOfOld: [Int]
    /// For each new index, the old index of its partner, or -1 when it has none.
    @usableFromInline var oldIndexOfNew: [Int]
    /// Identifiers that occur more than once: first those repeated in the old data, in order of their
    /// first occurrence there, then those repeated only in the new data, in order of their second
    /// occurrence there. Each listed once.
    @usableFromInline var duplicates: [ID]

    /// Flag on a first occurrence: the identifier is listed in `duplicates`.
    @usableFromInline static var listed: UInt8 { 1 }
    /// Flag on a first occurrence: the identifier was seen in the new data.
    @usableFromInline static var seen: UInt8 { 2 }
    /// Flag on a first occurrence: the identifier occurs again later in the old data.
    @usableFromInline static var repeats: UInt8 { 4 }
    /// Flag on a later occurrence: the identifier occurred earlier in the old data.
    @usableFromInline static var repeated: UInt8 { 8 }

    @inlinable @inline(__always)
    init(oldCount: Int, newCount: Int, oldID: (Int) -> ID, newID: (Int) -> ID) {
        // The table is at most half full, so probes stay short. A slot holds an entry, 0 when empty:
        // `tagged | (index + 1)`, where `tagged` is the hash with its low `indexBits` bits cleared. The
        // bucket and the partition are the top bits of `tagged`, so an entry alone says where it goes.
        var capacityBits = 4
        while 1 &<< capacityBits < 2 &* oldCount { capacityBits &+= 1 }
        let bucketShift = UInt(Int.bitWidth &- capacityBits)
        let capacityMask = (1 &<< capacityBits) &- 1
        let indexBits = Int.bitWidth &- oldCount.leadingZeroBitCount
        let indexMask = (1 &<< indexBits) &- 1
        @inline(__always) func bucket(of tagged: Int) -> Int {
            Int(bitPattern: UInt(bitPattern: tagged) &>> bucketShift)
        }
        var slots = [Int](repeating: 0, count: 1 &<< capacityBits)

        // Hash every old element once, in order; then, for a table larger than a cache, group the
        // entries by partition (2^15 slots, 256 KiB) with a stable counting sort and fill the table
        // one partition at a time.
        var entries: [Int] = []
        entries.reserveCapacity(oldCount)
        for i in 0..<oldCount { entries.append((oldID(i).hashValue & ~indexMask) | (i &+ 1)) }
        let partitionBits = Swift.max(0, capacityBits &- 15)
        if partitionBits > 0 {
            let partitionShift = UInt(Int.bitWidth &- partitionBits)
            var starts = [Int](repeating: 0, count: (1 &<< partitionBits) &+ 1)
            for entry in entries {
                starts[Int(bitPattern: UInt(bitPattern: entry) &>> partitionShift) &+ 1] &+= 1
            }
            for p in 1..<starts.count { starts[p] &+= starts[p &- 1] }
            var grouped = [Int](repeating: 0, count: oldCount)
            for entry in entries {
                let p = Int(bitPattern: UInt(bitPattern: entry) &>> partitionShift)
                grouped[starts[p]] = entry
                starts[p] &+= 1
            }
            entries = grouped
        }

        // Per identifier, keyed by the old index of its first occurrence: its flags and, for an
        // identifier that repeats, the queue of its unpaired old indices (`repeatedHead`, then a linked
        // list through `nextOld`, ascending). A unique identifier's queue is just its first occurrence,
        // unpaired while `newIndexOfOld` says so.
        var flags = [UInt8](repeating: 0, count: oldCount)
        var nextOld: [Int] = []
        var repeatedHead: [Int: Int] = [:]
        var repeatedTail: [Int: Int] = [:]
        var repeatedFirsts: [Int] = []
        for entry in entries {
            let i = (entry & indexMask) &- 1
            let tag = entry & ~indexMask
            var b = bucket(of: tag)
            while true {
                let slot = slots[b]
                if slot == 0 {
                    slots[b] = entry
                    break
                }
                let first = (slot & indexMask) &- 1
                if slot & ~indexMask == tag, oldID(first) == oldID(i) {
                    // A repeat. Indices of one identifier arrive in ascending order (the grouping is
                    // stable), so appending keeps its queue in order.
                    if nextOld.isEmpty { nextOld = [Int](repeating: -1, count: oldCount) }
                    if let last = repeatedTail[first] {
                        nextOld[last] = i
                    } else {
                        nextOld[first] = i
                        repeatedHead[first] = first
                        flags[first] |= Self.repeats | Self.listed
                        repeatedFirsts.append(first)
                    }
                    repeatedTail[first] = i
                    flags[i] = Self.repeated
                    break
                }
                b = (b &+ 1) & capacityMask
            }
        }
        entries = []
        repeatedFirsts.sort()
        var duplicates = repeatedFirsts.map(oldID)

        var newIndexOfOld = [Int](repeating: -1, count: oldCount)
        var oldIndexOfNew = [Int](repeating: -1, count: newCount)
        var newOnly: [ID: Bool] = [:]  // identifiers absent from the old data -> listed as duplicate
        var lastPaired = -1
        for j in 0..<newCount {
            let id = newID(j)
            // Most elements follow the one before them in both arrays: try the old elements just after
            // the last one paired. One is the right partner when its identifier occurs once in the old
            // data, no new element had it yet (flags 0) and it is unpaired.
            var guess = lastPaired &+ 1
            let guessEnd = Swift.min(oldCount, guess &+ 3)
            while guess < guessEnd {
                if flags[guess] == 0, newIndexOfOld[guess] < 0, oldID(guess) == id { break }
                guess &+= 1
            }
            if guess < guessEnd {
                flags[guess] = Self.seen
                oldIndexOfNew[j] = guess
                newIndexOfOld[guess] = j
                lastPaired = guess
                continue
            }

            let tag = id.hashValue & ~indexMask
            var b = bucket(of: tag)
            var first = -1
            while true {
                let slot = slots[b]
                if slot == 0 { break }
                let candidate = (slot & indexMask) &- 1
                if slot & ~indexMask == tag, oldID(candidate) == id {
                    first = candidate
                    break
                }
                b = (b &+ 1) & capacityMask
            }
            if first >= 0 {
                let firstFlags = flags[first]
                if firstFlags & Self.seen == 0 {
                    flags[first] = firstFlags | Self.seen
                } else if firstFlags & Self.listed == 0 {
                    flags[first] = firstFlags | Self.listed
                    duplicates.append(id)
                }
                var i = -1
                if firstFlags & Self.repeats != 0 {
                    i = repeatedHead[first] ?? -1
                    if i >= 0 { repeatedHead[first] = nextOld[i] }
                } else if newIndexOfOld[first] < 0 {
                    i = first
                }
                if i >= 0 {
                    oldIndexOfNew[j] = i
                    newIndexOfOld[i] = j
                    lastPaired = i
                }
            } else if let listed = newOnly[id] {
                if !listed {
                    newOnly[id] = true
                    duplicates.append(id)
                }
            } else {
                newOnly[id] = false
            }
        }
        self.newIndexOfOld = newIndexOfOld
        self.oldIndexOfNew = oldIndexOfNew
        self.duplicates = duplicates
    }
}

/// Marks the positions of a longest strictly increasing subsequence of the non-negative `values`
/// (negative values are skipped and never marked).
///
/// Applied to the old indices of paired elements in new order, the marked elements kept their relative
/// order: they merely shifted. Every other paired element is a move, and no smaller set of moves
/// exists. Patience sorting, O(n log n); O(n) when the values are already mostly increasing.
@inlinable
func _longestIncreasingRun(_ values: [Int]) -> [Bool] {
    let count = values.count
    var previous = [Int](repeating: -1, count: count)
    var tails: [Int] = []  // tails[l]: position of the smallest last value of a run of length l + 1
    for k in 0..<count {
        let value = values[k]
        if value < 0 { continue }
        if let last = tails.last, values[last] >= value {
            var low = 0
            var high = tails.count - 1
            while low < high {
                let mid = (low &+ high) >> 1
                if values[tails[mid]] < value { low = mid &+ 1 } else { high = mid }
            }
            tails[low] = k
            previous[k] = low > 0 ? tails[low &- 1] : -1
        } else {
            previous[k] = tails.last ?? -1
            tails.append(k)
        }
    }
    var inRun = [Bool](repeating: false, count: count)
    var k = tails.last ?? -1
    while k >= 0 {
        inRun[k] = true
        k = previous[k]
    }
    return inRun
}
