/// Any JSON value, kept as received.
///
/// Used for parts of a payload this server only stores and forwards (Advanced Commerce details), so a change in
/// their shape never makes an otherwise valid transaction undecodable.
import JSONCoding

public enum RawJSON: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([RawJSON])
    case object([String: RawJSON])

    public init(from decoder: any Decoder) throws {
        if let tape = decoder as? TapeDecoder {
            self = try tape.rawJSON(at: tape.current)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([RawJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: RawJSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member named `key` of an object; nil for other values or a missing member.
    public subscript(key: String) -> RawJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array; nil for other values or an index out of range.
    public subscript(index: Int) -> RawJSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var int64Value: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [RawJSON]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

extension TapeDecoder {
    /// ``RawJSON`` straight from the tape, as its `init(from:)` reads it from Foundation (whose
    /// `try?` chain would otherwise always end here in a bail-out). Fractions and integers beyond
    /// `Int64` are left to Foundation's number parsing.
    func rawJSON(at index: Int) throws -> RawJSON {
        switch node(index).kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .number:
            guard let value = tape.int64(at: index) else { throw bail() }
            return .integer(value)
        case .string: return .string(try string(at: index))
        case .array:
            var elements: [RawJSON] = []
            let end = Int(node(index).end)
            var element = index + 1
            while element < end {
                elements.append(try rawJSON(at: element))
                element = tape.after(element)
            }
            return .array(elements)
        case .object:
            var members: [String: RawJSON] = [:]
            let end = Int(node(index).end)
            var key = index + 1
            while key < end {
                members[try string(at: key)] = try rawJSON(at: key + 1)
                key = tape.after(key + 1)
            }
            return .object(members)
        }
    }
}
