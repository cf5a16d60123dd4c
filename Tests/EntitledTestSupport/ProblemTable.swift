import EntitledServer
import Foundation
import Testing

/// Checks answers against the one error table, ``ProblemCode``.
enum ProblemTable {
    /// Records an issue when `reply` is a problem whose code is not in the table or whose status
    /// is not the table's. Every API test that goes through ``APIHarness/send(_:_:auth:json:body:)``
    /// runs it, so a code invented anywhere on a tested path fails the suite.
    static func check(_ reply: Loopback.Reply, sourceLocation: SourceLocation = #_sourceLocation) {
        guard reply.headers.first(where: { $0.key.lowercased() == "content-type" })?.value == "application/problem+json"
        else { return }
        guard let text = reply.code, let code = ProblemCode(rawValue: text) else {
            Issue.record("problem code \(reply.code ?? "nil") is not in ProblemCode", sourceLocation: sourceLocation)
            return
        }
        #expect(reply.status == code.status, "\(text) answered \(reply.status)", sourceLocation: sourceLocation)
    }

    /// The `- `CODE` STATUS: …` lines of the Problem schema's `code` description in docs/openapi.yaml.
    static func documented(in text: String) -> [String: Int] {
        var result: [String: Int] = [:]
        let pattern = /^\s*- `([A-Z][A-Z0-9_]*)` ([0-9]{3}):/
        for line in text.split(separator: "\n") {
            if let match = line.firstMatch(of: pattern), let status = Int(match.2) { result[String(match.1)] = status }
        }
        return result
    }

    /// The Swift files under `Sources/<target>`.
    static func sources(of target: String) throws -> [(name: String, text: String)] {
        let folder = OpenAPISpec.url.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/\(target)")
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        return try files.map { ($0.lastPathComponent, try String(contentsOf: $0, encoding: .utf8)) }
    }
}
