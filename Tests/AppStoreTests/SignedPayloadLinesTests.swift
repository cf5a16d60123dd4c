import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

@Suite struct SignedPayloadLinesTests {
    struct Payload: Encodable {
        var transactionId = "1"
        var bundleId = "com.example"
        var environment = "Sandbox"
        var signedDate: Int64 = testNowMilliseconds
        var note = "a \"quoted\" back\\slash, a/slash, tab\t, bell\u{07}, é"
        var nested = ["z": 1, "a": 2]
    }

    func lines(_ kind: SignedPayloadLines.Kind = .auto) throws -> SignedPayloadLines {
        SignedPayloadLines(verifier: try makeTestVerifier(ca: sharedCA), kind: kind)
    }

    /// Keys sorted at every level, strings escaped as JSON requires (slashes left alone), numbers as signed.
    @Test func rendersSortedEscapedJSON() throws {
        let token = try sharedCA.signer.sign(Payload())
        let rendered = try #require(try lines().render(line: token))
        #expect(rendered.verified)
        let text = String(decoding: rendered.json, as: UTF8.self)
        #expect(text.hasPrefix(#"{"bundleId":"com.example","environment":"Sandbox","nested":{"a":2,"z":1},"note":"#))
        #expect(text.contains(#""a \"quoted\" back\\slash, a/slash, tab\t, bell\u0007, é""#))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(rendered.json)) as? [String: Any])
        #expect(parsed["note"] as? String == Payload().note)
        #expect(parsed["signedDate"] as? Int64 == testNowMilliseconds)
    }

    /// `…Date` numbers are floored as the verifier floors them; other numbers keep their text.
    @Test(arguments: [
        ("1697679936049.7297", "1697679936049"), ("-1.5", "-2"), ("12", "12"), ("1.5e3", "1500"),
    ])
    func datesAreWholeMilliseconds(number: String, expected: String) throws {
        #expect(EpochMilliseconds.floored(number).map(String.init) == expected)
    }

    /// Errors are lines too, in place; blank lines are skipped; order holds on many workers.
    @Test(arguments: [1, 4])
    func manyLinesInOrder(workers: Int) throws {
        var input = ""
        for index in 0..<700 {
            input += index % 5 == 0 ? " \t\r\n" : ""
            input += index % 9 == 4 ? "not-a-jws\n" : try sharedCA.signer.sign(Payload(transactionId: "\(index)")) + "\r\n"
        }
        var output: [UInt8] = []
        let verified = try lines().verifyLines(Array(input.utf8), workers: workers) { output += $0 }
        #expect(!verified)
        let rows = output.split(separator: UInt8(ascii: "\n")).map {
            (try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]) ?? [:]
        }
        try #require(rows.count == 700)
        for (index, row) in rows.enumerated() {
            if index % 9 == 4 {
                #expect(row["error"] as? String == "INVALID_JWT_FORMAT")
            } else {
                #expect(row["transactionId"] as? String == "\(index)")
            }
        }
    }

    @Test func blankLineRendersNothingAndBadBodyIsAnError() throws {
        #expect(try lines().render(line: "  \t ") == nil)
        let body = try #require(try lines().render(line: #"{"signedPayload": 7}"#))
        #expect(!body.verified)
        #expect(String(decoding: body.json, as: UTF8.self).hasPrefix(#"{"error":"INVALID_JWT_FORMAT","message":"#))
    }
}
