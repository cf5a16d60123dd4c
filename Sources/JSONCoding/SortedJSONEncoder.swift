import Foundation

/// `JSONEncoder` with `.sortedKeys`, byte for byte, for the ledger's facts — several times faster.
///
/// Every verified fact is stored as this JSON, written once and read by every later binary, so
/// the bytes must stay exactly Foundation's. The values' own `encode(to:)` build an ``JSONWriter/Value``
/// tree, which ``JSONWriter/write(_:to:escapingSlashes:)`` writes as Foundation does (a finite
/// `Double` too: ``JSONWriter/appendNumber(_:to:)``). Whatever Foundation formats by its own rules
/// (other floating point, NaN and the infinities it refuses, dates, data, URLs, decimals) or a
/// repeated key throws ``Unsupported``; callers then use `JSONEncoder`, which writes or refuses it.
enum SortedJSONEncoder {
    struct Unsupported: Error {}

    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let root = Node()
        let state = State()
        try TreeEncoder(node: root, state: state).encodeValue(value)
        // Set where a container cannot throw (a nested container under a repeated key, a super encoder).
        if state.unsupported { throw Unsupported() }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        JSONWriter.write(root.value(), to: &bytes, escapingSlashes: true)
        return bytes
    }

    final class State {
        var unsupported = false

        /// An encoder whose output goes nowhere, for what cannot be written as Foundation would.
        func detached() -> TreeEncoder {
            unsupported = true
            return TreeEncoder(node: Node(), state: self)
        }
    }

    /// A value under construction: containers are filled after they are handed out.
    final class Node {
        enum Content {
            case empty
            case leaf(JSONWriter.Value)
            case object([(String, Node)])
            case array([Node])
        }

        var content = Content.empty

        func value() -> JSONWriter.Value {
            switch content {
            // An `encode(to:)` that wrote nothing is an empty object in Foundation's output.
            case .empty: .object([])
            case .leaf(let value): value
            case .object(let members): .object(members.map { ($0.0, $0.1.value()) })
            case .array(let elements): .array(elements.map { $0.value() })
            }
        }
    }

    struct TreeEncoder: Encoder {
        let node: Node
        let state: State
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if case .object = node.content {} else { node.content = .object([]) }
            return KeyedEncodingContainer(Keyed<Key>(node: node, state: state))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if case .array = node.content {} else { node.content = .array([]) }
            return Unkeyed(node: node, state: state)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node, state: state) }

        /// Scalars directly; anything else through its own `encode(to:)`.
        func encodeValue<T: Encodable>(_ value: T) throws {
            if let leaf = try Self.leaf(value) {
                node.content = .leaf(leaf)
            } else {
                try value.encode(to: self)
            }
        }

        /// The JSON scalar for `value`, nil when it encodes itself. Every integer type is a leaf:
        /// their `encode(to:)` would come straight back here.
        static func leaf<T: Encodable>(_ value: T) throws -> JSONWriter.Value? {
            switch value {
            case let text as String: return .string(text)
            case let number as Int64: return .int(number)
            case let number as Int: return .int(Int64(number))
            case let flag as Bool: return .bool(flag)
            // Foundation refuses NaN and the infinities with its own error: left to it.
            case let number as Double:
                guard number.isFinite else { throw Unsupported() }
                return .double(number)
            case let integer as any BinaryInteger:
                guard let number = Int64(exactly: integer) else { throw Unsupported() }
                return .int(number)
            case is any BinaryFloatingPoint, is Date, is Data, is URL, is Decimal: throw Unsupported()
            default: return nil
            }
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let state: State
        var codingPath: [any CodingKey] { [] }

        func add(_ key: Key) throws -> Node {
            guard case .object(var members) = node.content else { throw Unsupported() }
            let name = key.stringValue
            if members.contains(where: { $0.0 == name }) { throw Unsupported() }
            let child = Node()
            // Released before appending, so the array is uniquely referenced and grows in place.
            node.content = .empty
            members.append((name, child))
            node.content = .object(members)
            return child
        }

        /// The child for `key`, or a detached one with the encoding marked unsupported.
        func child(_ key: Key) -> TreeEncoder {
            guard let child = try? add(key) else { return state.detached() }
            return TreeEncoder(node: child, state: state)
        }

        mutating func encodeNil(forKey key: Key) throws { try add(key).content = .leaf(.null) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try TreeEncoder(node: add(key), state: state).encodeValue(value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            child(key).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { child(key).unkeyedContainer() }

        // The facts never use super encoders; where something does, Foundation decides.
        mutating func superEncoder() -> any Encoder { state.detached() }
        mutating func superEncoder(forKey key: Key) -> any Encoder { state.detached() }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        let state: State
        var codingPath: [any CodingKey] { [] }
        var count: Int {
            if case .array(let elements) = node.content { return elements.count }
            return 0
        }

        func add() -> Node {
            guard case .array(var elements) = node.content else {
                state.unsupported = true
                return Node()
            }
            let child = Node()
            node.content = .empty
            elements.append(child)
            node.content = .array(elements)
            return child
        }

        mutating func encodeNil() throws { add().content = .leaf(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try TreeEncoder(node: add(), state: state).encodeValue(value) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            TreeEncoder(node: add(), state: state).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            TreeEncoder(node: add(), state: state).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { state.detached() }
    }

    struct Single: SingleValueEncodingContainer {
        let node: Node
        let state: State
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() throws { node.content = .leaf(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try TreeEncoder(node: node, state: state).encodeValue(value) }
    }
}
