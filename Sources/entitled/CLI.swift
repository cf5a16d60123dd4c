import EntitledServer
import Foundation

/// The fast paths' switch (`ENTITLED_FAST_PATHS`), read from the environment once, for every command.
let fastPaths = FastPaths(environment: ProcessInfo.processInfo.environment)

/// Exit statuses of every `entitled` command (documented in README and `entitled --help`).
enum ExitStatus {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}

/// Bad command-line input: printed as `entitled: <message>` and exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = message }
}

/// A runtime failure: printed as `entitled: <message>` and exit status 1.
struct RuntimeError: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = message }
}

/// One `entitled` subcommand.
protocol Command {
    /// The word after `entitled`.
    static var name: String { get }
    /// One line for `entitled --help`.
    static var summary: String { get }
    /// The full text of `entitled <name> --help`.
    static var help: String { get }
    /// Runs the command; `arguments` holds what followed the command's name.
    /// Returns the exit status; throws `UsageError` (2) or anything else (1).
    static func run(_ arguments: inout Arguments) async throws -> Int32
    /// The help text for these arguments (commands with targets pick the target's).
    static func help(for arguments: Arguments) -> String
}

extension Command {
    static func help(for arguments: Arguments) -> String { help }
}

/// A small command-line parser: `--flag value`, `--flag=value`, repeated flags, `--` and positionals.
///
/// Commands pull what they know; `finish()` then rejects anything left, naming it.
struct Arguments {
    private var tokens: [String]

    init(_ tokens: [String]) { self.tokens = tokens }

    /// True when `--help` or `-h` was given (before any `--`).
    var wantsHelp: Bool {
        for token in tokens {
            if token == "--" { return false }
            if token == "--help" || token == "-h" { return true }
        }
        return false
    }

    /// The first token, when it is not an option.
    var first: String? {
        guard let token = tokens.first, !token.hasPrefix("-") else { return nil }
        return token
    }

    /// Removes the first token.
    mutating func dropFirst() { if !tokens.isEmpty { tokens.removeFirst() } }

    /// Removes and returns a boolean flag.
    mutating func flag(_ name: String) -> Bool {
        guard let index = indexOfOption(name) else { return false }
        if tokens[index].contains("=") {
            // `--flag=value` on a boolean is still a flag; reject surprising values.
            let value = String(tokens[index].split(separator: "=", maxSplits: 1)[1])
            tokens.remove(at: index)
            return value == "true" || value == "1"
        }
        tokens.remove(at: index)
        return true
    }

    /// Removes and returns every value of a repeatable option.
    mutating func options(_ name: String) throws -> [String] {
        var values: [String] = []
        while let value = try option(name) { values.append(value) }
        return values
    }

    /// Removes and returns the value of `--name VALUE` or `--name=VALUE`; nil when absent.
    mutating func option(_ name: String) throws -> String? {
        guard let index = indexOfOption(name) else { return nil }
        let token = tokens[index]
        if let eq = token.firstIndex(of: "=") {
            tokens.remove(at: index)
            return String(token[token.index(after: eq)...])
        }
        guard index + 1 < tokens.count, tokens[index + 1] != "--" else {
            throw UsageError("option \(name) needs a value")
        }
        let value = tokens[index + 1]
        tokens.removeSubrange(index...(index + 1))
        return value
    }

    /// Parses an option's value with `parse`, naming the option when the value is bad.
    mutating func option<T>(_ name: String, as what: String, _ parse: (String) -> T?) throws -> T? {
        guard let raw = try option(name) else { return nil }
        guard let value = parse(raw) else {
            throw UsageError("option \(name): '\(raw)' is not \(what)")
        }
        return value
    }

    /// Removes and returns the remaining positional arguments (after options were taken).
    mutating func positionals() throws -> [String] {
        var result: [String] = []
        var rest: [String] = []
        var afterDashes = false
        for token in tokens {
            if afterDashes { result.append(token); continue }
            if token == "--" { afterDashes = true; continue }
            if token.hasPrefix("-") && token != "-" { rest.append(token); continue }
            result.append(token)
        }
        tokens = rest
        return result
    }

    /// Throws naming the first argument nobody consumed.
    func finish() throws {
        if let first = tokens.first {
            if first.hasPrefix("-") { throw UsageError("unknown option \(first.split(separator: "=").first ?? "")") }
            throw UsageError("unexpected argument '\(first)'")
        }
    }

    private func indexOfOption(_ name: String) -> Int? {
        for (index, token) in tokens.enumerated() {
            if token == "--" { return nil }
            if token == name || token.hasPrefix(name + "=") { return index }
        }
        return nil
    }
}

/// Writes to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
