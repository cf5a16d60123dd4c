import Foundation

/// Percent-encoding for the values the API clients put into URLs and form bodies.
public enum PercentEncoding {
    /// RFC 3986's unreserved characters: ASCII letters and digits and `-._~`.
    static let unreserved: CharacterSet = {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        return allowed
    }()

    /// `value` with every byte outside the unreserved set percent-encoded: safe as one path segment,
    /// a query value or an `application/x-www-form-urlencoded` value. Nil only for a string
    /// Foundation cannot encode.
    public static func encodeUnreserved(_ value: String) -> String? {
        value.addingPercentEncoding(withAllowedCharacters: unreserved)
    }
}
