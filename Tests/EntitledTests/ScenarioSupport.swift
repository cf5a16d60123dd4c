import AppStore
import AppStoreSimulator
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Storage
import Testing

// Scenario files (Scenarios/*.jsonl, format in docs/simulator.md, "Scenario files"): simulator
// actions interleaved with expectations of the customer's answer, run against a real server.

extension RawJSON {
    static func parse(_ bytes: some Sequence<UInt8>) throws -> RawJSON {
        try JSONDecoder().decode(RawJSON.self, from: Data(bytes))
    }

    var objectValue: [String: RawJSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// Compact JSON with sorted keys, for messages.
    var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }

    /// The object without `keys` (answers differ between runs in `serverTime` and the random `appAccountToken`).
    func removing(_ keys: Set<String>) -> RawJSON {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { !keys.contains($0.key) })
    }
}

/// One scenario file: its lines in order, each an action for the simulator or a directive for the harness.
struct Scenario: Sendable {
    enum Step: Sendable {
        /// A simulator action (`"action"`), as `POST /actions` takes it.
        case action(ActionRequest)
        /// What `GET /v1/customers/{customer}` must answer now (`"expect"`); a line with `"knownIssue"`
        /// fails because of that server bug (see ``KnownIssue``).
        case expect(customer: String, expectation: [String: RawJSON], knownIssue: KnownIssue?)
        /// The customer's app posts their latest transaction of `product` (`"client"`).
        case client(customer: String, product: String)
        /// The outage test takes the server down now for this long (`"outage"`); other runs ignore it.
        case outage(AppStoreSimulator.ISODuration)
    }

    struct Line: Sendable {
        var number: Int
        var at: AppStoreSimulator.ISODuration?
        var step: Step
    }

    var name: String
    /// `{"setup": {"notifications": "v1"}}`: the app is configured for V1 notifications.
    var v1: Bool
    var lines: [Line]

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scenarios")

    /// Every scenario file's name (without `.jsonl`), sorted.
    static var names: [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return files.filter { $0.hasSuffix(".jsonl") }.map { String($0.dropLast(6)) }.sorted()
    }

    static func load(_ name: String) throws -> Scenario {
        let text = try String(contentsOf: folder.appendingPathComponent(name + ".jsonl"), encoding: .utf8)
        return try parse(text, name: name)
    }

    struct FormatError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ text: String, name: String) throws -> Scenario {
        var scenario = Scenario(name: name, v1: false, lines: [])
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("//") { continue }
            func fail(_ message: String) -> FormatError {
                FormatError(description: "\(name).jsonl line \(number): \(message)")
            }
            guard let object = (try? RawJSON.parse(Array(line.utf8)))?.objectValue else { throw fail("not a JSON object") }
            var at: AppStoreSimulator.ISODuration?
            if let text = object["at"] {
                guard let value = text.stringValue.flatMap(AppStoreSimulator.ISODuration.init) else {
                    throw fail("'at' is not an ISO 8601 duration")
                }
                at = value
            }
            let kinds = ["action", "expect", "client", "outage", "setup"].filter { object[$0] != nil }
            guard kinds.count == 1 else { throw fail("needs exactly one of action, expect, client, outage, setup") }
            // A misspelt key would otherwise be ignored and the line would test less than it says.
            var allowed: Set<String> = ["at", kinds[0]]
            let step: Step
            switch kinds[0] {
            case "action":
                guard let request = try? JSONDecoder().decode(ActionRequest.self, from: Data(line.utf8)) else {
                    throw fail("not an action object")
                }
                // The encoder writes exactly the fields the decoder took.
                allowed = Set((try RawJSON.parse(JSONEncoder().encode(request)).objectValue ?? [:]).keys).union(["at"])
                step = .action(request)
            case "expect":
                guard var expectation = object["expect"]?.objectValue, let customer = expectation["customer"]?.stringValue
                else { throw fail("'expect' needs a 'customer'") }
                expectation["customer"] = nil
                var knownIssue: KnownIssue?
                if let id = object["knownIssue"] {
                    guard let issue = id.stringValue.flatMap(KnownIssue.init(rawValue:)) else {
                        throw fail("unknown knownIssue \(id.text)")
                    }
                    knownIssue = issue
                    allowed.insert("knownIssue")
                }
                step = .expect(customer: customer, expectation: expectation, knownIssue: knownIssue)
            case "client":
                guard let customer = object["client"]?["customer"]?.stringValue,
                    let product = object["client"]?["product"]?.stringValue
                else { throw fail("'client' needs 'customer' and 'product'") }
                step = .client(customer: customer, product: product)
            case "outage":
                guard let duration = object["outage"]?.stringValue.flatMap(AppStoreSimulator.ISODuration.init) else {
                    throw fail("'outage' is an ISO 8601 duration")
                }
                step = .outage(duration)
            default:
                guard scenario.lines.isEmpty, let setup = object["setup"]?.objectValue else {
                    throw fail("'setup' is an object on the first line")
                }
                for (key, value) in setup {
                    guard key == "notifications", value == .string("v1") || value == .string("v2") else {
                        throw fail("unknown setup '\(key)'")
                    }
                    scenario.v1 = value == .string("v1")
                }
                continue
            }
            let unknown = Set(object.keys).subtracting(allowed)
            guard unknown.isEmpty else { throw fail("unknown keys \(unknown.sorted())") }
            scenario.lines.append(Line(number: number, at: at, step: step))
        }
        return scenario
    }
}

/// Server bugs the scenarios found that are not fixed yet (the server's sources belong to another
/// change). Their failures are reported as known issues; in order, an annotated expectation that
/// passes fails the run, so that the annotation goes once the bug is fixed.
enum KnownIssue: Sendable, CaseIterable {
    // None at present: the two the scenarios found (paid-service days that moved with time, and
    // V1 billing failures dated at the period start) are fixed. The mechanism stays for the next.
    init?(rawValue: String) { nil }
    var rawValue: String { switch self {} }
}

/// Compares an expectation with a customer answer. Objects match when every expected key matches
/// (keys not mentioned are not checked); arrays match element by element and in length; `null`
/// matches a null or missing value; a string `+P1M10D+P1M` is a date: the scenario's start plus
/// those durations, one after the other. Three keys are special: `absent` lists entitlement ids that
/// must not be there; `subscriptions` and `nonSubscriptions` are objects keyed by the answer's
/// `subscriptionGroup` and `id` (`null`: no such entry).
enum ExpectationMatcher {
    static func mismatches(_ expectation: [String: RawJSON], answer: RawJSON, start: Int64) -> [String] {
        var out: [String] = []
        for (key, expected) in expectation.sorted(by: { $0.key < $1.key }) {
            switch key {
            case "absent":
                guard case .array(let ids) = expected else {
                    out.append("absent: expected a list of entitlement ids")
                    continue
                }
                for id in ids.compactMap(\.stringValue) where answer["entitlements"]?[id] != nil {
                    out.append("entitlements.\(id): expected absent, got \(answer["entitlements"]![id]!.text)")
                }
            case "subscriptions", "nonSubscriptions":
                let idKey = key == "subscriptions" ? "subscriptionGroup" : "id"
                var byId: [String: RawJSON] = [:]
                if case .array(let items)? = answer[key] {
                    for item in items { if let id = item[idKey]?.stringValue { byId[id] = item } }
                }
                match(expected, .object(byId), path: key, start: start, into: &out)
            default:
                match(expected, answer[key], path: key, start: start, into: &out)
            }
        }
        return out
    }

    static func match(_ expected: RawJSON, _ actual: RawJSON?, path: String, start: Int64, into out: inout [String]) {
        switch expected {
        case .null:
            if let actual, actual != .null { out.append("\(path): expected null, got \(actual.text)") }
        case .object(let members):
            guard case .object? = actual else {
                out.append("\(path): expected an object, got \(actual?.text ?? "nothing")")
                return
            }
            for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                match(value, actual?[key], path: "\(path).\(key)", start: start, into: &out)
            }
        case .array(let items):
            guard case .array(let got)? = actual, got.count == items.count else {
                out.append("\(path): expected \(expected.text), got \(actual?.text ?? "nothing")")
                return
            }
            for (index, item) in items.enumerated() {
                match(item, got[index], path: "\(path)[\(index)]", start: start, into: &out)
            }
        case .string(let text) where text.hasPrefix("+"):
            guard let date = relativeDate(text, start: start) else {
                out.append("\(path): '\(text)' is not a list of ISO 8601 durations")
                return
            }
            let want = ISO8601.format(milliseconds: date)
            if actual != .string(want) {
                out.append("\(path): expected \(want) (\(text)), got \(actual?.text ?? "nothing")")
            }
        default:
            if actual != expected { out.append("\(path): expected \(expected.text), got \(actual?.text ?? "nothing")") }
        }
    }

    /// `+P1M10D+P1M` → `start` plus one month and ten days, then plus a month (calendar months, UTC).
    static func relativeDate(_ text: String, start: Int64) -> Int64? {
        var date = start
        for part in text.split(separator: "+") {
            guard let duration = AppStoreSimulator.ISODuration(String(part)) else { return nil }
            date = duration.added(to: date)
        }
        return date
    }

    /// Where two answers differ, as `path: expected <left>, got <right>`; matched both ways so that
    /// keys missing on either side show, each path once.
    static func differences(_ left: RawJSON, _ right: RawJSON) -> [String] {
        var out: [String] = []
        var reverse: [String] = []
        match(left, right, path: "", start: 0, into: &out)
        match(right, left, path: "", start: 0, into: &reverse)
        let paths = Set(out.map { $0.prefix { $0 != ":" } })
        return out + reverse.filter { !paths.contains($0.prefix { $0 != ":" }) }
    }
}

/// How notifications reach the server in one run of a scenario.
enum DeliveryMode: Sendable, Hashable, CustomStringConvertible {
    /// Posted as they happen, over HTTP.
    case inOrder
    /// Held, then at each expectation posted shuffled (with re-deliveries of earlier ones), seeded.
    case shuffled(seed: UInt64)
    /// Posted as they happen; the file's `outage` line stops the server for a while (a real stop:
    /// connections are refused), then a new server on the same port and SQLite file takes over.
    case outage

    var description: String {
        switch self {
        case .inOrder: "in order"
        case .shuffled(let seed): "shuffled (seed \(seed))"
        case .outage: "outage"
        }
    }
}

/// What one run saw.
struct ScenarioOutcome: Sendable {
    /// Expectations that did not hold and broken invariants, each naming its line.
    var failures: [String] = []
    /// Failures explained by a ``KnownIssue``.
    var known: [String] = []
    /// Expectations checked, and skipped (outage: the server down or deliveries still pending).
    var checked = 0
    var skipped = 0
    /// Every customer's final answer, without `serverTime` and `appAccountToken`.
    var finalAnswers: [String: RawJSON] = [:]
    /// The simulator's delivery history.
    var records: [DeliveryRecord] = []
    /// The outage window (virtual epoch milliseconds), in outage mode.
    var outage: Range<Int64>?
}
