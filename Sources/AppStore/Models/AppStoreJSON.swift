import Foundation
import JSONCoding

/// The one JSON configuration every App Store wire model is read and written with.
///
/// Keys are spelled out per model (`CodingKeys`) rather than converted by a key strategy, because Apple mixes
/// camelCase (V2, API) with snake_case and kebab-case (V1, verifyReceipt).
public enum AppStoreJSON {
    /// A decoder for App Store payloads. Unknown keys are ignored; a value of the wrong JSON type is an error.
    public static func decoder() -> JSONDecoder {
        JSONDecoder()
    }

    /// An encoder for App Store payloads: sorted keys for stable output, nil fields omitted by the models.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// Decodes `type` from JSON bytes with `codec`, turning any failure into an ``AppStoreDecodingError``
    /// whose message names the offending field, so callers can report it (the verifier wraps it as a
    /// malformed payload).
    public static func decode<T: Decodable>(
        _ type: T.Type, from data: Data, codec: JSONCodec = JSONCodec()
    ) throws(AppStoreDecodingError) -> T {
        do {
            return try codec.decode(type, from: [UInt8](data))
        } catch let error as DecodingError {
            throw AppStoreDecodingError(typeName: String(describing: type), decodingError: error)
        } catch {
            throw AppStoreDecodingError(typeName: String(describing: type), message: String(describing: error))
        }
    }

    /// Encodes a model with ``encoder()``.
    public static func encode<T: Encodable>(_ value: T) throws -> Data {
        try sharedEncoder.encode(value)
    }

    // One configured instance avoids rebuilding it each time; never mutated after creation, so
    // sharing it across threads is safe.
    private static let sharedEncoder = encoder()
}

/// A payload that is not valid JSON or does not have the shape of the expected model.
public struct AppStoreDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The model that was being decoded, e.g. `JWSTransactionDecodedPayload`.
    public var typeName: String
    /// The dotted path of the offending field (`data.appAppleId`, `signedTransactions[1]`); empty for the root.
    public var fieldPath: String
    /// A one-line human-readable reason.
    public var message: String

    public init(typeName: String, fieldPath: String = "", message: String) {
        self.typeName = typeName
        self.fieldPath = fieldPath
        self.message = message
    }

    init(typeName: String, decodingError: DecodingError) {
        switch decodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            // Foundation's text already names the expected and the found type.
            self.init(
                typeName: typeName, fieldPath: Self.path(context.codingPath), message: context.debugDescription)
        case .keyNotFound(let key, let context):
            self.init(
                typeName: typeName, fieldPath: Self.path(context.codingPath + [key]),
                message: "required field is missing")
        case .dataCorrupted(let context):
            self.init(
                typeName: typeName, fieldPath: Self.path(context.codingPath),
                message: context.debugDescription)
        @unknown default:
            self.init(typeName: typeName, message: String(describing: decodingError))
        }
    }

    public var description: String {
        fieldPath.isEmpty ? "\(typeName): \(message)" : "\(typeName).\(fieldPath): \(message)"
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        var result = ""
        for key in codingPath {
            if let index = key.intValue {
                result += "[\(index)]"
            } else {
                result += result.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return result
    }
}
