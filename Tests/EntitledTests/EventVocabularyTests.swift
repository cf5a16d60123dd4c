import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

/// `EventType` is the one list of event types: the spec's `Event.type` enum, the examples of
/// `GET /v1/events`, the headings of docs/events.md and the webhook filter say the same.
@Suite struct EventVocabularyTests {
    let vocabulary = EventType.allDocumented.map(\.rawValue)

    func document(_ name: String) throws -> String {
        try String(contentsOf: OpenAPISpec.url.deletingLastPathComponent().appendingPathComponent(name), encoding: .utf8)
    }

    @Test func openAPIEnumIsTheVocabulary() throws {
        let text = try document("openapi.yaml")
        let start = try #require(text.range(of: "          enum: [purchase.completed"))
        let end = try #require(text.range(of: "]", range: start.upperBound..<text.endIndex))
        let listed = text[start.upperBound..<end.lowerBound].split { $0 == "," || $0 == " " || $0 == "\n" }.map(String.init)
        #expect(["purchase.completed"] + listed.filter { !$0.isEmpty } == vocabulary)
        // One example per type.
        for type in vocabulary { #expect(text.contains("summary: \(type)\n"), "no example of \(type)") }
    }

    @Test func eventsDocumentDescribesEachType() throws {
        let text = try document("events.md")
        let headings = text.split(separator: "\n").filter { $0.hasPrefix("### ") }
            .flatMap { $0.dropFirst(4).split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["`"]) } }
        #expect(Set(headings) == Set(vocabulary))
        #expect(headings.count == vocabulary.count)
    }

    /// Every type of the vocabulary passes the webhook filter's validation; another type does not.
    @Test func webhookFilterTakesTheVocabulary() throws {
        let loader = ConfigurationLoader(environment: [:])
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        func parse(_ events: [String]) throws -> Configuration {
            let list = events.map { "\"\($0)\"" }.joined(separator: ",")
            return try loader.parse(Data(#"{"webhooks": [{"url": "https://x/h", "secret": "\#(secret)", "events": [\#(list)]}]}"#.utf8))
        }
        #expect(try parse(vocabulary).webhooks.first?.events == vocabulary)
        #expect(throws: ConfigurationError.self) { try parse(["subscription.cancelled"]) }
    }
}
