/// The App Store environment a payload was signed for.
///
/// A struct rather than an enum so that a value Apple adds later still decodes and keeps its raw text.
public struct AppStoreEnvironment: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production = AppStoreEnvironment(rawValue: "Production")
    public static let sandbox = AppStoreEnvironment(rawValue: "Sandbox")
    public static let xcode = AppStoreEnvironment(rawValue: "Xcode")
    public static let localTesting = AppStoreEnvironment(rawValue: "LocalTesting")

    /// The four environments Apple documents.
    public static let known: [AppStoreEnvironment] = [.production, .sandbox, .xcode, .localTesting]

    /// Xcode and LocalTesting payloads are signed by a local key, not by Apple's chain.
    public var isLocal: Bool { self == .xcode || self == .localTesting }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// What the signed-data verifier reads from any decoded payload to check it against the configured app.
///
/// Every signed model (notification, transaction, renewal info, app transaction) conforms.
public protocol VerifiablePayload: Decodable, Sendable {
    /// `signedDate` in epoch milliseconds; certificates must be valid then (offline mode).
    var verificationSignedDate: Int64? { get }
    /// The environment the payload claims.
    var verificationEnvironment: AppStoreEnvironment? { get }
    /// The bundle identifier the payload claims; nil where the payload has none (renewal info).
    var verificationBundleId: String? { get }
    /// The app's Apple ID the payload claims, where it has one.
    var verificationAppAppleId: Int64? { get }
}
