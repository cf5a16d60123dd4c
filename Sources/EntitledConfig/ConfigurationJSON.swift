import Foundation

// Reading the configuration's JSON: its values with their paths, and every problem found in one pass.

/// A configuration problem, naming the key (e.g. `apps[0].products[1].type`) it is about — and,
/// when one file has several, every other one found in the same pass (``others``): the loader goes
/// on past a bad key so that one run reports them all.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The JSON path of the offending key, or the file / variable name for problems outside the JSON.
    public var path: String
    public var message: String
    /// The other problems found in the same file, in the order found.
    public var others: [ConfigurationError] = []

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// Every problem: this one, then ``others``.
    public var all: [ConfigurationError] {
        var first = self
        first.others = []
        return [first] + others.flatMap(\.all)
    }

    /// One line per problem (`path: message`).
    public var description: String { all.map { "\($0.path): \($0.message)" }.joined(separator: "\n") }

    /// A secret that was deliberately not read (``ConfigurationLoader/resolvesSecrets``): never reported.
    var isUnresolvedSecret = false

    static func unresolvedSecret(path: String) -> ConfigurationError {
        var error = ConfigurationError(path: path, message: "not read (this command needs no secrets)")
        error.isUnresolvedSecret = true
        return error
    }
}

/// The problems found so far in one pass over a file.
final class Problems {
    private(set) var found: [ConfigurationError] = []

    func record(_ error: ConfigurationError) { found += error.all.filter { !$0.isUnresolvedSecret } }

    /// Runs `body`; a problem it throws is recorded and nil returned, so parsing goes on.
    @discardableResult
    func check<T>(_ body: () throws(ConfigurationError) -> T) -> T? {
        do {
            return try body()
        } catch {
            record(error)
            return nil
        }
    }

    /// Throws everything recorded as one error.
    func finish() throws(ConfigurationError) {
        guard var first = found.first else { return }
        first.others = Array(found.dropFirst())
        throw first
    }
}

/// A JSON value with its path, for precise error messages.
struct Node {
    let value: Any
    let path: String

    init(_ value: Any, path: String) {
        self.value = value
        self.path = path
    }

    func object() throws(ConfigurationError) -> ObjectReader {
        guard let dictionary = value as? [String: Any] else { throw mismatch("an object") }
        return ObjectReader(values: dictionary, path: path)
    }

    func array() throws(ConfigurationError) -> [Node] {
        guard let array = value as? [Any] else { throw mismatch("an array") }
        return array.enumerated().map { Node($1, path: "\(path)[\($0)]") }
    }

    func string() throws(ConfigurationError) -> String {
        guard let string = value as? String else { throw mismatch("a string") }
        return string
    }

    func bool() throws(ConfigurationError) -> Bool {
        guard let number = value as? NSNumber, Self.isBool(number) else { throw mismatch("true or false") }
        return number.boolValue
    }

    func int() throws(ConfigurationError) -> Int {
        let wide = try int64()
        guard let narrow = Int(exactly: wide) else { throw mismatch("a whole number") }
        return narrow
    }

    /// Any JSON number (not a boolean).
    func number() throws(ConfigurationError) -> Double {
        guard let number = value as? NSNumber, !Self.isBool(number) else { throw mismatch("a number") }
        return number.doubleValue
    }

    func int64() throws(ConfigurationError) -> Int64 {
        guard let number = value as? NSNumber, !Self.isBool(number) else { throw mismatch("a whole number") }
        let double = number.doubleValue
        guard double == double.rounded(), let exact = Int64(exactly: double) else {
            throw mismatch("a whole number")
        }
        return exact
    }

    private static func isBool(_ number: NSNumber) -> Bool {
        // Foundation reports JSON booleans with the Objective-C type code of `char`.
        String(cString: number.objCType) == "c"
    }

    private func mismatch(_ expected: String) -> ConfigurationError {
        ConfigurationError(path: path, message: "expected \(expected)")
    }
}

/// Takes keys out of a JSON object; whatever is left at `finish(_:)` is an unknown key. A key
/// named `//` is documentation (a string or a list of strings) and never read.
struct ObjectReader {
    private var values: [String: Any]
    private var taken: Set<String> = []
    let path: String

    /// The documentation key.
    static let comment = "//"

    init(values: [String: Any], path: String) {
        self.values = values
        self.path = path
    }

    mutating func take(_ key: String) -> Node? {
        guard let value = values.removeValue(forKey: key) else { return nil }
        taken.insert(key)
        if value is NSNull { return nil }
        return Node(value, path: childPath(key))
    }

    /// Whether `key` was present (taken already), valid or not: a bad value is reported once, as
    /// itself, not again as missing.
    func had(_ key: String) -> Bool { taken.contains(key) }

    /// Reads `key` with `body` when present; a problem is recorded and parsing goes on.
    mutating func read(_ key: String, _ problems: Problems, _ body: (Node) throws(ConfigurationError) -> Void) {
        guard let node = take(key) else { return }
        problems.check { () throws(ConfigurationError) in try body(node) }
    }

    mutating func require(_ key: String) throws(ConfigurationError) -> Node {
        guard let node = take(key) else { throw ConfigurationError(path: childPath(key), message: "required") }
        return node
    }

    /// Records every key left (unknown) except the documentation key, and a documentation key
    /// that is not text.
    func finish(_ problems: Problems) {
        for unknown in values.keys.sorted() {
            if unknown == Self.comment {
                let value = values[unknown]
                if !(value is String) && !((value as? [Any])?.allSatisfy { $0 is String } ?? false) {
                    problems.record(ConfigurationError(path: childPath(unknown), message: "expected a string or a list of strings"))
                }
                continue
            }
            problems.record(ConfigurationError(path: childPath(unknown), message: "unknown key"))
        }
    }

    private func childPath(_ key: String) -> String { path == "$" ? key : "\(path).\(key)" }
}

/// ISO 8601 durations of whole calendar units: `PnYnMnWnD` (at least one part).
public enum ISODuration {
    public static func isValid(_ text: String) -> Bool {
        var rest = Substring(text)
        guard rest.first == "P" else { return false }
        rest = rest.dropFirst()
        var sawPart = false
        var lastUnitIndex = -1
        let units: [Character] = ["Y", "M", "W", "D"]
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 5 else { return false }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.first, let index = units.firstIndex(of: unit), index > lastUnitIndex else {
                return false
            }
            lastUnitIndex = index
            rest = rest.dropFirst()
            sawPart = true
        }
        return sawPart
    }
}
