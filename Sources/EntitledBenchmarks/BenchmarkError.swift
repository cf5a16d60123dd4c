import Storage

/// A benchmark that could not run or measure (a missing tool, an unreadable report, a failed
/// self-check); `entitled bench` prints it and exits 1.
public struct BenchmarkError: Error, CustomStringConvertible {
    public var description: String
    public init(_ message: String) { description = message }
}

/// The benchmarks' ``Storage/StorageLog``: prints each storage event (the SQLite writer's and
/// syncer's counters at close) as one plain line, next to the figures it explains.
let printStorageEvent: StorageLog = { event, fields in
    print("\(event): " + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
}
