extension Bytes {
    /// The bytes of `parts`, one after the other: the one part itself when there is only one (no copy),
    /// else one copy of them all into storage of the exact size. For a body collected chunk by chunk.
    ///
    /// - Parameter parts: The runs of bytes, in order.
    package init(joining parts: [Bytes]) {
        let nonEmpty = parts.lazy.filter { !$0.isEmpty }
        var iterator = nonEmpty.makeIterator()
        guard let first = iterator.next() else { self.init(); return }
        guard iterator.next() != nil else { self = first; return }
        let total = parts.reduce(0) { $0 + $1.count }
        self.init(unsafeUninitializedCapacity: total) { target in
            var offset = 0
            for part in parts where !part.isEmpty {
                part.withUnsafeBytes { source in
                    (target.baseAddress! + offset).copyMemory(from: source.baseAddress!, byteCount: source.count)
                }
                offset += part.count
            }
            return offset
        }
    }
}
