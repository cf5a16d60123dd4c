/// Sorted-keys JSON written as it goes, for a writer that knows its type's members and names them
/// in sorted order itself: no tree of values and no sorting, so a value costs its own bytes.
/// Strings and numbers are written as ``JSONWriter`` writes them (its escaper, its integers and
/// doubles), so the output is `JSONEncoder`'s with `.sortedKeys` whenever the members come
/// sorted; the writer using it is held to that by a differential test. Commas are placed by the
/// stream.
public struct JSONStream {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    /// False once a value `JSONEncoder` refuses (a non-finite number) was asked for: the output
    /// is then not `JSONEncoder`'s, and the caller takes the plain path, which throws as it does.
    public private(set) var isValid = true
    private let escapingSlashes: Bool
    /// Whether the next value or key follows a sibling (and so a comma).
    private var followsSibling = false

    /// An empty stream; `escapingSlashes` as ``JSONWriter/appendQuoted(_:to:escapingSlashes:)``.
    public init(capacity: Int, escapingSlashes: Bool = true) {
        bytes = []
        bytes.reserveCapacity(capacity)
        self.escapingSlashes = escapingSlashes
    }

    private mutating func separate() {
        if followsSibling { bytes.append(UInt8(ascii: ",")) }
        followsSibling = true
    }

    /// `{`; its members follow as ``key(_:)`` and a value each, in sorted order.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        followsSibling = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        followsSibling = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        followsSibling = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        followsSibling = true
    }

    /// A member's name: a literal of the caller's that needs no escaping (a Swift property name).
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        followsSibling = false
    }

    public mutating func string(_ value: String) {
        separate()
        JSONWriter.appendQuoted(value, to: &bytes, escapingSlashes: escapingSlashes)
    }

    public mutating func int(_ value: Int64) {
        separate()
        JSONWriter.appendInt(value, to: &bytes)
    }

    public mutating func int(_ value: Int) { int(Int64(value)) }

    public mutating func double(_ value: Double) {
        separate()
        guard value.isFinite else {
            isValid = false
            return
        }
        JSONWriter.appendNumber(value, to: &bytes)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes += (value ? "true" : "false").utf8
    }

    /// An array of strings.
    public mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }
}
