#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The open descriptors of this test process, read from `/proc/self/fd`, and the TCP sockets among them.
///
/// Each directory entry's name is read in place, up to its terminating zero. Copying `d_name` as a value
/// (`entry.pointee.d_name`, a 256-byte tuple) reads the whole array, and the last entry in `readdir`'s
/// buffer can be shorter than that: with a thousand or more descriptors open (the suites run in parallel)
/// the copy ran off the mapped memory and crashed the test process (signal 11 in `memcpy`), the same fault
/// Foundation's `Process.run()` has (see ``ChildProcess``).
public enum OpenDescriptors {
    /// How many descriptors this process holds (`.`, `..` and the directory's own descriptor left out).
    public static var count: Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while readdir(directory) != nil { count += 1 }
        return count - 3
    }

    /// How many descriptors of this process are TCP sockets (IPv4 or IPv6) whose ports satisfy `matches`,
    /// called with the local and the remote port of each socket in `/proc/net/tcp` and `/proc/net/tcp6`.
    /// Exact while other tests open sockets of their own: sockets are told apart by inode.
    public static func tcpSockets(where matches: (_ local: Int, _ remote: Int) -> Bool) -> Int {
        let inodes = tcpSocketInodes(where: matches)
        return targets().count { target in
            target.hasPrefix("socket:[") && inodes.contains(String(target.dropFirst(8).dropLast()))
        }
    }

    /// What each open descriptor refers to (`readlink` of its `/proc/self/fd` entry: a path, `socket:[N]`,
    /// `pipe:[N]`, …).
    public static func targets() -> [String] {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var targets: [String] = []
        var target = [CChar](repeating: 0, count: 256)
        while let entry = readdir(directory) {
            let name = String(cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
            let length = readlink("/proc/self/fd/" + name, &target, target.count - 1)
            guard length > 0 else { continue }
            targets.append(String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return targets
    }

    /// The inodes (decimal, as `/proc` writes them) of the TCP sockets whose ports satisfy `matches`.
    private static func tcpSocketInodes(where matches: (_ local: Int, _ remote: Int) -> Bool) -> Set<String> {
        var inodes: Set<String> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let file = fopen(table, "r") else { continue }
            defer { fclose(file) }
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, file) > 0 {
                // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …"
                let fields = String(cString: line!).split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 9, let local = port(of: fields[1]), let remote = port(of: fields[2]),
                      fields[9] != "0", matches(local, remote) else { continue }
                inodes.insert(String(fields[9]))
            }
        }
        return inodes
    }

    /// The port of an `ADDRESS:PORT` field (both hexadecimal).
    private static func port(of field: Substring) -> Int? {
        guard let colon = field.lastIndex(of: ":") else { return nil }
        return Int(field[field.index(after: colon)...], radix: 16)
    }
}
