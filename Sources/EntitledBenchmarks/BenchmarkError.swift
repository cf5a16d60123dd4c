/// A benchmark that could not run or measure (a missing tool, an unreadable report, a failed
/// self-check); `entitled bench` prints it and exits 1.
public struct BenchmarkError: Error, CustomStringConvertible {
    public var description: String
    public init(_ message: String) { description = message }
}
