/// A value from one of Apple's closed-looking lists (notification types, offer types, statuses …).
///
/// Modelled as a struct instead of an enum because Apple adds values without notice: an unknown value must
/// still decode, keep its raw text or number, and encode back unchanged. Codable comes from the standard
/// library's `RawRepresentable` support, which decodes the raw value and calls the non-failing `init(rawValue:)`.
public protocol AppStoreEnumeration: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible
where RawValue: Hashable & Sendable & Codable & CustomStringConvertible {
    init(rawValue: RawValue)
    /// The values Apple documents (as of this code), in documentation order.
    static var known: [Self] { get }
}

extension AppStoreEnumeration {
    /// Whether this value is one Apple documented when this code was written.
    public var isKnown: Bool { Self.known.contains(self) }
    public var description: String { rawValue.description }
}

extension AppStoreEnvironment: AppStoreEnumeration {}
