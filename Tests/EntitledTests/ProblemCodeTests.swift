import AppStore
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import GooglePlay
import HTTPServer
import Testing

@Suite struct ProblemCodeTests {
    @Test func openAPIListsEveryCodeWithItsStatusAndNoOther() throws {
        let documented = ProblemTable.documented(in: try String(contentsOf: OpenAPISpec.url, encoding: .utf8))
        let table = Dictionary(uniqueKeysWithValues: ProblemCode.allCases.map { ($0.rawValue, $0.status) })
        #expect(documented.count >= 30)
        for (code, status) in table.sorted(by: { $0.key < $1.key }) {
            #expect(documented[code] == status, "\(code): table \(status), docs/openapi.yaml \(documented[code].map(String.init) ?? "missing")")
        }
        #expect(Set(documented.keys).subtracting(table.keys).isEmpty, "documented but not in the table")
    }

    @Test func listParserReadsCodeLines() {
        let yaml = """
              description: |
                - `NOT_FOUND` 404: no route
                - `Not_A_Code` 400: ignored
                  - `INVALID_JSON` 400: indented alike
                text `UNAUTHORIZED` 401 in prose is not a row
            """
        #expect(ProblemTable.documented(in: yaml) == ["NOT_FOUND": 404, "INVALID_JSON": 400])
    }

    /// HTTPServer raises its own problems with string codes (it knows nothing of this API): each must
    /// be a row of the table with the same status.
    @Test func transportProblemsAreRowsOfTheTable() throws {
        var raised: [HTTPError] = [
            .notFound(), .methodNotAllowed(allow: [.get]), .payloadTooLarge(limit: 1), .bodyNotAllowed,
            .uriTooLong(limit: 1), .headerFieldsTooLarge(limit: 1), .internalError, .shuttingDown,
        ]
        let request = Request(method: .get, path: "/x", body: Array("{".utf8), pathParameters: ["bad": "%FF"])
        for attempt: () throws -> Void in [
            { _ = try request.parameter("absent") }, { _ = try request.parameter("bad") },
            { _ = try request.decodeJSON([String: Int].self) },
        ] {
            do {
                try attempt()
                Issue.record("expected a problem")
            } catch let error as HTTPError {
                raised.append(error)
            }
        }
        #expect(raised.count == 11)
        for error in raised {
            #expect(ProblemCode(rawValue: error.code)?.status == error.status, "\(error)")
        }
    }

    /// A code HTTPServer gains later (a new limit, say) must get its row too: every code literal in
    /// that module is one, but `BAD_REQUEST`, the default of `badRequest(_:code:)`, which only the
    /// simulator and the dev dashboard use (the API never calls it: see the test below).
    @Test func everyCodeHTTPServerSpellsIsARow() throws {
        var spelled = Set<String>()
        for file in try ProblemTable.sources(of: "HTTPServer") {
            for match in file.text.matches(of: /code: (?:String = )?"([A-Z][A-Z0-9_]*)"/) { spelled.insert(String(match.1)) }
        }
        #expect(spelled.isSuperset(of: ["NOT_FOUND", "INTERNAL_ERROR", "INVALID_JSON"]))
        let rows = Set(ProblemCode.allCases.map(\.rawValue))
        #expect(spelled.subtracting(rows) == ["BAD_REQUEST"])
    }

    @Test func everyVerifierCodeHasItsOwnRow() {
        for code in VerificationError.Code.all {
            let row = ProblemCode(rawValue: code.rawValue)
            #expect(row != nil, "\(code)")
            #expect(ProblemCode(code) == row)
            #expect(row?.status == (code == .retryableVerificationFailure ? 503 : 400), "\(code)")
        }
        #expect(ProblemCode(VerificationError.Code(rawValue: "SOMETHING_NEW")) == .malformedPayload)
    }

    /// Every Google Play failure has its own row: 401 for a push's authentication, 503 when Google
    /// cannot be reached or cannot be signed in to, 502 for its other failures, 400 for bad input.
    @Test func everyGooglePlayCodeHasItsOwnRow() {
        let unavailable: Set<GooglePlayError.Code> = [.keysUnavailable, .network, .tokenExchangeFailed, .invalidServiceAccount]
        let badInput: Set<GooglePlayError.Code> = [.malformedNotification, .invalidRequest]
        for code in GooglePlayError.Code.all {
            let row = ProblemCode(GooglePlayError(code, "x"))
            #expect(row.rawValue == code.rawValue, "\(code)")
            let expected =
                unavailable.contains(code) ? 503 : badInput.contains(code) ? 400
                : [.apiError, .malformedResponse].contains(code) ? 502 : 401
            #expect(row.status == expected, "\(code)")
        }
        #expect(ProblemCode(GooglePlayError(.apiError, "gone", status: 410)) == .googlePurchaseNotFound)
        #expect(ProblemCode(GooglePlayError(.apiError, "busy", status: 500)) == .googleAPIError)
        #expect(ProblemCode(GooglePlayError(GooglePlayError.Code(rawValue: "GOOGLE_SOMETHING_NEW"), "x")) == .googleAPIError)
    }

    @Test(arguments: ProblemCode.allCases) func codesAreScreamingSnake(_ code: ProblemCode) {
        #expect(code.rawValue.wholeMatch(of: /[A-Z][A-Z0-9]*(_[A-Z0-9]+)*/) != nil)
    }

    /// The API builds problems only from the table: no string code, no hand-picked status, no code
    /// made up as a verifier code, outside ProblemCode.swift.
    @Test func serverSourcesBuildNoProblemOutsideTheTable() throws {
        let forbidden: [(what: String, pattern: Regex<Substring>)] = [
            ("a string code", /code:\s*"/),
            ("a hand-picked status", /HTTPError\(\s*status:/),
            ("badRequest with a string code", /\.badRequest\(/),
            ("an invented verifier code", /Code\(rawValue:|\.init\(rawValue:\s*"[A-Z]/),
            ("a status chosen by comparing codes", /code\.rawValue\s*==/),
        ]
        let files = try ProblemTable.sources(of: "EntitledServer")
        #expect(files.contains { $0.name == "API.swift" })
        for file in files where file.name != "ProblemCode.swift" {
            for (what, pattern) in forbidden {
                for line in file.text.split(separator: "\n") where line.contains(pattern) {
                    Issue.record("\(file.name) builds \(what): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }

    @Test func authErrorsTakeTheirStatusFromTheTable() {
        #expect(AuthError.unauthorized("x").status == 401)
        #expect(AuthError.unauthorized("x").code == "UNAUTHORIZED")
        #expect(AuthError.unauthorized("x").headers["WWW-Authenticate"] != nil)
        #expect(AuthError.forbidden("x").status == 403)
        #expect(AuthError.forbidden("x").headers["WWW-Authenticate"] == nil)
    }
}
