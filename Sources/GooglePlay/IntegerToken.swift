/// An integer-coded value whose set is open: the constants name what Google documents, and any
/// other number passes through unchanged, so a new notification type never fails a decode.
public protocol IntegerToken: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible where RawValue == Int {
    init(rawValue: Int)
    /// Google's name for the documented values, nil for the others.
    var name: String? { get }
}

extension IntegerToken {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(Int.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { name.map { "\($0) (\(rawValue))" } ?? String(rawValue) }
}
