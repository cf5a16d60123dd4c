import Foundation
import HTTPServer

/// The one definition of a valid appUserId, for every place one enters: the URL path, a customer
/// token's `sub`.
///
/// Valid: 1…``maxScalars`` Unicode scalars, none invisible (``Unicode/Scalar/isInvisibleInID``:
/// control characters, NUL included, format characters such as the bidi override U+202E or a
/// zero-width space, and line or paragraph separators), in Unicode Normalization Form C. Ids that are not
/// NFC are refused rather than normalized: a client's id is then stored and answered byte for byte
/// as sent, one customer has exactly one spelling, and equality is plain byte equality everywhere
/// (Swift's `==` on `String` treats canonically equivalent spellings as equal, which is how an NFC
/// token once reached an NFD customer).
public enum AppUserID {
    /// Longest id, in Unicode scalars (JSON Schema's `maxLength` counts the same); at most 512
    /// UTF-8 bytes, storage's bound.
    public static let maxScalars = 128

    /// Whether `id` is a valid appUserId (see ``AppUserID``).
    public static func isValid(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty else { return false }
        // Printable ASCII, the usual case, is NFC and control-free by construction.
        if utf8.count <= maxScalars && utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return true }
        let scalars = id.unicodeScalars
        guard scalars.count <= maxScalars, !scalars.contains(where: \.isInvisibleInID) else {
            return false
        }
        return id.precomposedStringWithCanonicalMapping.utf8.elementsEqual(utf8)
    }

    /// Byte equality: the one comparison of two ids (valid ids have one spelling each).
    public static func same(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

    /// The 400 for a path id that is not valid percent-encoded UTF-8 or not a valid id.
    public static let invalid = HTTPError(
        .invalidAppUserId,
        "appUserId must be 1–\(maxScalars) Unicode characters in NFC, percent-encoded UTF-8, without control or format characters")

    /// The request's `{appUserId}` path segment, percent-decoded and checked.
    public static func parameter(_ request: Request) throws(HTTPError) -> String {
        guard let raw = request.pathParameters["appUserId"], let id = PercentDecoding.decode(raw), isValid(id) else {
            throw invalid
        }
        return id
    }
}

extension Unicode.Scalar {
    /// Whether an identifier must not contain this scalar: a control character (Cc), a format
    /// character (Cf: bidi overrides and isolates, zero-width spaces and joiners, U+2063…) or a
    /// line or paragraph separator. They are invisible or reorder what is shown, so an id holding
    /// one reads as another in logs, the console and exports.
    public var isInvisibleInID: Bool {
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}
