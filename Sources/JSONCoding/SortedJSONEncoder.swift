import Foundation

/// `JSONEncoder` with `.sortedKeys`, byte for byte, for the ledger's facts, stored documents and
/// events' fields — faster (docs/operations.md, "The ledger's writer").
///
/// Every verified fact is stored as this JSON, written once and read by every later binary, so
/// the bytes must stay exactly Foundation's. Scalars are written as they come into one scratch
/// buffer (strings by ``JSONWriter/appendQuoted(_:to:escapingSlashes:)``, a finite `Double` by
/// ``JSONWriter/appendNumber(_:to:)``); each container keeps where its members' bytes lie, and
/// the output is assembled from those pieces at the end, every object's members sorted by key as
/// `.sortedKeys` sorts them. So a container may be filled after it was handed out, as `Encodable`
/// allows, and a scalar costs no allocation of its own (a value that encodes itself, one). Whatever
/// Foundation formats by its own rules (other floating point, NaN and the infinities it refuses,
/// dates, data, URLs, decimals), a super encoder or a repeated key throws ``Unsupported``; callers
/// then use `JSONEncoder`, which writes or refuses it.
enum SortedJSONEncoder {
    struct Unsupported: Error {}

    /// `value`'s bytes; `escapingSlashes` false writes as `.withoutEscapingSlashes` does.
    static func encode(_ value: some Encodable, escapingSlashes: Bool = true) throws -> [UInt8] {
        let sink = Sink(escapingSlashes: escapingSlashes)
        let root = try sink.piece(of: value)
        // Set where a container cannot throw (a nested container under a repeated key, a super encoder).
        if sink.unsupported { throw Unsupported() }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sink.scratch.count + 64)
        try sink.write(root, to: &bytes)
        return bytes
    }

    /// A written value: bytes in the scratch buffer, or a container (filled by the time the
    /// output is assembled).
    enum Piece {
        case bytes(Range<Int>)
        case container(Container)
    }

    /// One value's container, or nothing yet (an `encode(to:)` that wrote nothing is an empty
    /// object in Foundation's output).
    final class Container {
        enum Kind { case empty, object, array, single }
        var kind = Kind.empty
        var members: [(key: String, piece: Piece)] = []
        var elements: [Piece] = []
        var single: Piece?
    }

    /// The scratch buffer every scalar is written into, and whether anything was met that only
    /// Foundation may write.
    final class Sink {
        var scratch: [UInt8] = []
        var unsupported = false
        let escapingSlashes: Bool

        init(escapingSlashes: Bool) {
            self.escapingSlashes = escapingSlashes
            scratch.reserveCapacity(1024)
        }

        /// Appends what `write` writes and returns where it lies.
        @inline(__always)
        func bytes(_ write: (inout [UInt8]) -> Void) -> Piece {
            let start = scratch.count
            write(&scratch)
            return .bytes(start..<scratch.count)
        }

        func string(_ text: String) -> Piece {
            let escapingSlashes = escapingSlashes
            return bytes { JSONWriter.appendQuoted(text, to: &$0, escapingSlashes: escapingSlashes) }
        }
        func int(_ number: Int64) -> Piece { bytes { JSONWriter.appendInt(number, to: &$0) } }
        func bool(_ flag: Bool) -> Piece { bytes { $0 += (flag ? "true" : "false").utf8 } }
        func null() -> Piece { bytes { $0 += "null".utf8 } }
        /// Foundation refuses NaN and the infinities with its own error: left to it.
        func double(_ number: Double) throws -> Piece {
            guard number.isFinite else { throw Unsupported() }
            return bytes { JSONWriter.appendNumber(number, to: &$0) }
        }
        func integer(_ integer: some BinaryInteger) throws -> Piece {
            guard let number = Int64(exactly: integer) else { throw Unsupported() }
            return int(number)
        }

        /// `value` written: a scalar directly (told by its type's identity, no cast), anything
        /// else through its own `encode(to:)`, which ends in the concrete overloads below for the
        /// other integer and floating-point types.
        func piece<T: Encodable>(of value: T) throws -> Piece {
            if T.self == String.self { return string(Self.cast(value)) }
            if T.self == Int.self { return int(Int64(Self.cast(value) as Int)) }
            if T.self == Int64.self { return int(Self.cast(value)) }
            if T.self == Bool.self { return bool(Self.cast(value)) }
            if T.self == Double.self { return try double(Self.cast(value)) }
            if T.self == Date.self || T.self == Data.self || T.self == URL.self || T.self == Decimal.self { throw Unsupported() }
            let container = Container()
            try value.encode(to: TreeEncoder(container: container, sink: self))
            // A value that wrote one scalar through a single-value container (a raw-value enum)
            // needs no container of its own.
            if container.kind == .single, let single = container.single, case .bytes = single { return single }
            return .container(container)
        }

        /// `value` as `U`, which the caller checked is its type.
        @inline(__always)
        static func cast<T, U>(_ value: T) -> U { withUnsafePointer(to: value) { $0.withMemoryRebound(to: U.self, capacity: 1) { $0.pointee } } }

        /// Writes `piece` as Foundation does, each object's members sorted by their keys' bytes
        /// (as swift-foundation sorts them); a repeated key throws ``Unsupported``.
        func write(_ piece: Piece, to bytes: inout [UInt8]) throws {
            switch piece {
            case .bytes(let range):
                scratch.withUnsafeBufferPointer { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0[range])) }
            case .container(let container):
                switch container.kind {
                case .empty: bytes += "{}".utf8
                case .single:
                    if let single = container.single { try write(single, to: &bytes) } else { bytes += "{}".utf8 }
                case .array:
                    bytes.append(UInt8(ascii: "["))
                    for (index, element) in container.elements.enumerated() {
                        if index > 0 { bytes.append(UInt8(ascii: ",")) }
                        try write(element, to: &bytes)
                    }
                    bytes.append(UInt8(ascii: "]"))
                case .object:
                    var members = container.members
                    if !Self.isSorted(members) { members.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } }
                    bytes.append(UInt8(ascii: "{"))
                    for index in members.indices {
                        if index > 0 {
                            if members[index - 1].key == members[index].key { throw Unsupported() }
                            bytes.append(UInt8(ascii: ","))
                        }
                        JSONWriter.appendQuoted(members[index].key, to: &bytes, escapingSlashes: escapingSlashes)
                        bytes.append(UInt8(ascii: ":"))
                        try write(members[index].piece, to: &bytes)
                    }
                    bytes.append(UInt8(ascii: "}"))
                }
            }
        }

        /// Whether the keys are in order already, repeats allowed (the caller finds those).
        static func isSorted(_ members: [(key: String, piece: Piece)]) -> Bool {
            for index in members.indices.dropFirst() where members[index].key.utf8.lexicographicallyPrecedes(members[index - 1].key.utf8) {
                return false
            }
            return true
        }
    }

    struct TreeEncoder: Encoder {
        let container: Container
        let sink: Sink
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            container.kind = .object
            return KeyedEncodingContainer(Keyed<Key>(container: container, sink: sink))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            container.kind = .array
            return Unkeyed(container: container, sink: sink)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            container.kind = .single
            return Single(container: container, sink: sink)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let container: Container
        let sink: Sink
        var codingPath: [any CodingKey] { [] }

        private func add(_ key: Key, _ piece: Piece) { container.members.append((key.stringValue, piece)) }

        /// A container of its own for `key` (filled later, perhaps after other members).
        private func child(_ key: Key) -> TreeEncoder {
            let child = Container()
            add(key, .container(child))
            return TreeEncoder(container: child, sink: sink)
        }

        mutating func encodeNil(forKey key: Key) throws { add(key, sink.null()) }
        mutating func encode(_ value: String, forKey key: Key) throws { add(key, sink.string(value)) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { add(key, sink.bool(value)) }
        mutating func encode(_ value: Int, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { add(key, sink.int(value)) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { add(key, try sink.integer(value)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { add(key, try sink.integer(value)) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { add(key, sink.int(Int64(value))) }
        mutating func encode(_ value: Double, forKey key: Key) throws { add(key, try sink.double(value)) }
        mutating func encode(_ value: Float, forKey key: Key) throws { throw Unsupported() }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { add(key, try sink.piece(of: value)) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            child(key).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { child(key).unkeyedContainer() }

        // The facts never use super encoders; where something does, Foundation decides.
        mutating func superEncoder() -> any Encoder { detached() }
        mutating func superEncoder(forKey key: Key) -> any Encoder { detached() }

        private func detached() -> any Encoder {
            sink.unsupported = true
            return TreeEncoder(container: Container(), sink: sink)
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let container: Container
        let sink: Sink
        var codingPath: [any CodingKey] { [] }
        var count: Int { container.elements.count }

        private func add(_ piece: Piece) { container.elements.append(piece) }

        private func child() -> TreeEncoder {
            let child = Container()
            add(.container(child))
            return TreeEncoder(container: child, sink: sink)
        }

        mutating func encodeNil() throws { add(sink.null()) }
        mutating func encode(_ value: String) throws { add(sink.string(value)) }
        mutating func encode(_ value: Bool) throws { add(sink.bool(value)) }
        mutating func encode(_ value: Int) throws { add(sink.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { add(sink.int(value)) }
        mutating func encode(_ value: Double) throws { add(try sink.double(value)) }
        mutating func encode(_ value: Float) throws { throw Unsupported() }
        mutating func encode<T: Encodable>(_ value: T) throws { add(try sink.piece(of: value)) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            child().container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { child().unkeyedContainer() }

        mutating func superEncoder() -> any Encoder {
            sink.unsupported = true
            return TreeEncoder(container: Container(), sink: sink)
        }
    }

    /// A value's one scalar (a raw-value enum's, an integer's own `encode(to:)`), or a value that
    /// encodes itself into the same container.
    struct Single: SingleValueEncodingContainer {
        let container: Container
        let sink: Sink
        var codingPath: [any CodingKey] { [] }

        private func set(_ piece: Piece) {
            container.kind = .single
            container.single = piece
        }

        mutating func encodeNil() throws { set(sink.null()) }
        mutating func encode(_ value: String) throws { set(sink.string(value)) }
        mutating func encode(_ value: Bool) throws { set(sink.bool(value)) }
        mutating func encode(_ value: Int) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { set(sink.int(value)) }
        mutating func encode(_ value: Int32) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: UInt) throws { set(try sink.integer(value)) }
        mutating func encode(_ value: UInt64) throws { set(try sink.integer(value)) }
        mutating func encode(_ value: UInt32) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: UInt8) throws { set(sink.int(Int64(value))) }
        mutating func encode(_ value: Double) throws { set(try sink.double(value)) }
        mutating func encode(_ value: Float) throws { throw Unsupported() }
        mutating func encode<T: Encodable>(_ value: T) throws { set(try sink.piece(of: value)) }
    }
}
