import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Entitlements
import HTTPServer
import Storage
import Testing

/// A verifier that is never called: only the routes matter here.
struct Unused: NotificationVerifying {
    func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification {
        throw VerificationError(.init(rawValue: "UNUSED"))
    }
    func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError)
        -> (payload: JWSTransactionDecodedPayload, unknownMembers: [UnknownMember])
    {
        throw VerificationError(.init(rawValue: "UNUSED"))
    }
    func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError) -> AppTransaction {
        throw VerificationError(.init(rawValue: "UNUSED"))
    }
    func verifyRealtimeRequest(signedPayload: String, app: App) async throws(VerificationError) -> DecodedRealtimeRequestBody {
        throw VerificationError(.init(rawValue: "UNUSED"))
    }
}

@Suite struct OpenAPITests {
    @Test func routerAndSpecListTheSameOperations() async throws {
        let text = try String(contentsOf: OpenAPISpec.url, encoding: .utf8)
        #expect(text.hasPrefix("openapi: 3.1"))
        let spec = OpenAPISpec.operations(in: text)
        let store = try await openStore(url: "sqlite::memory:")
        defer { Task { await store.close() } }
        let application = Application(
            configuration: Configuration(), verifier: Unused(), ledger: FactLedger(store: store, policy: Policy()))
        let routes = Set(application.router.registeredRoutes.map { "\($0.method.rawValue) \($0.pattern)" })
        #expect(routes.count == application.router.registeredRoutes.count)
        #expect(spec == routes, "only in spec: \(spec.subtracting(routes).sorted()); only in router: \(routes.subtracting(spec).sorted())")
        #expect(routes.count == 65)
    }

    /// Every `$ref: "#/components/<section>/<Name>"` names an entry that exists in that section.
    @Test func everyReferenceResolves() throws {
        let text = try String(contentsOf: OpenAPISpec.url, encoding: .utf8)
        var defined = Set<String>()
        var section: String?
        var inComponents = false
        for line in text.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            let content = line.trimmingCharacters(in: .whitespaces)
            if indent == 0 { inComponents = content == "components:" }
            guard inComponents, content.hasSuffix(":") else { continue }
            if indent == 2 { section = String(content.dropLast()) }
            if indent == 4, let section { defined.insert("#/components/\(section)/\(content.dropLast())") }
        }
        var references = Set<String>()
        for line in text.split(separator: "\n") where line.contains("$ref:") {
            let value = line.split(separator: "$ref:", maxSplits: 1)[1].trimmingCharacters(in: CharacterSet(charactersIn: " \"'"))
            references.insert(value)
        }
        #expect(!references.isEmpty)
        #expect(references.subtracting(defined).isEmpty, "unresolved: \(references.subtracting(defined).sorted())")
    }

    @Test func parserReadsPathsAndMethodsByIndentation() {
        let yaml = """
            openapi: 3.1.0
            paths:
              /a:
                get:
                  summary: x
                  parameters:
                    - name: post
                post:
                  responses:
                    "200":
                      description: ok
              "/b/{id}":
                delete:
                  summary: y
            components:
              schemas:
                get:
                  type: object
            """
        #expect(OpenAPISpec.operations(in: yaml) == ["GET /a", "POST /a", "DELETE /b/{id}"])
    }
}
