import AppStore
import AppStoreTesting
@testable import EntitledTestSupport
import Entitlements
import Foundation
import JSONCoding
import Testing

@testable import EntitledServer

/// Members of Apple's payloads this build does not know: never rejected, recorded raw (bounded)
/// on the fact, counted by `entitled_unknown_apple_values_total{kind, field}`, the answer unchanged.
@Suite struct UnknownFieldsTests {
    static let t0 = APIHarness.start

    /// A fake JWS of `model`'s JSON with `extra` members added.
    static func jws(_ model: some Encodable, extra: [String: Any] = [:]) throws -> String {
        var object = try #require(try JSONSerialization.jsonObject(with: AppStoreJSON.encode(model)) as? [String: Any])
        object.merge(extra) { _, new in new }
        let body = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Base64URL.encode(Array(#"{"alg":"ES256","x5c":[]}"#.utf8)) + "." + Base64URL.encode(Array(body)) + ".valid"
    }

    /// A SUBSCRIBED notification for u1, with unknown members (when `extras`) at every level.
    static func notification(token: String, extras: Bool) throws -> String {
        let transaction = try jws(
            Apple.transaction(purchase: t0 - 1000, expires: t0 + 86_400_000, token: token),
            extra: extras ? ["futureTransactionField": ["a": [1, 2]]] : [:])
        let renewal = try jws(Apple.renewal(signed: t0 - 1000), extra: extras ? ["futureRenewalField": true] : [:])
        var data: [String: Any] = [
            "environment": "Production", "appAppleId": 1234, "bundleId": APIHarness.bundleId, "bundleVersion": "1",
            "signedTransactionInfo": transaction, "signedRenewalInfo": renewal,
        ]
        if extras { data["futureDataField"] = "x" }
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: UUID().uuidString, version: "2.0", signedDate: t0)
        var extra: [String: Any] = ["data": data]
        if extras { extra["futureTopLevel"] = String(repeating: "é", count: 2000) }
        return try jws(payload, extra: extra)
    }

    /// u1's answer after the notification, without the members that differ between runs.
    static func answer(extras: Bool, metrics: ServerMetrics) async throws -> NSDictionary {
        var result: [String: Any] = [:]
        try await APIHarness.run(metrics: metrics) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let reply = try await api.postV2(try notification(token: token, extras: extras))
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "accepted")
            // Facts of `kind` whose JSON names `field` among its unknown members.
            let count = { (kind: String, field: String) in
                try await api.ledger.factJSON(kind: kind).filter { json in
                    json.range(of: #""unknownFields""#).map { json[$0.upperBound...].contains(field) } ?? false
                }.count
            }
            #expect(try await count("transaction", "futureTransactionField") == (extras ? 1 : 0))
            #expect(try await count("renewal", "futureRenewalField") == (extras ? 1 : 0))
            #expect(try await count("notification", "data.futureDataField") == (extras ? 1 : 0))
            #expect(try await count("notification", "futureTopLevel") == (extras ? 1 : 0))
            result = try await api.customer("u1").json
        }
        result["appAccountToken"] = nil
        result["serverTime"] = nil
        return result as NSDictionary
    }

    @Test func unknownMembersAreAcceptedRecordedAndCountedAndChangeNoAnswer() async throws {
        let metrics = ServerMetrics()
        let with = try await Self.answer(extras: true, metrics: metrics)
        let without = try await Self.answer(extras: false, metrics: ServerMetrics())
        #expect(with == without)
        #expect((with["entitlements"] as? [String: Any])?["pro"] != nil)
        let text = metrics.registry.render()
        for (kind, field) in [
            ("transaction", "futureTransactionField"), ("renewalInfo", "futureRenewalField"),
            ("notification", "data.futureDataField"), ("notification", "futureTopLevel"),
        ] {
            #expect(
                MetricsEndpointTests.value(text, #"entitled_unknown_apple_values_total{kind="\#(kind)",field="\#(field)"}"#) == 1,
                "\(kind) \(field)")
        }
    }

    @Test func aPostedTransactionsUnknownMemberIsRecordedAndCounted() async throws {
        let metrics = ServerMetrics()
        try await APIHarness.run(metrics: metrics) { api in
            let jws = try Self.jws(
                Apple.transaction(purchase: Self.t0 - 1000, expires: Self.t0 + 86_400_000), extra: ["futureField": 7])
            let reply = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            #expect(reply.status == 200)
            #expect(reply.entitlement("pro")?["active"] as? Bool == true)
            #expect(
                try await api.ledger.factJSON(kind: "transaction").filter { $0.contains(#""unknownFields":{"futureField":"7"}"#) }.count
                    == 1)
            let text = metrics.registry.render()
            #expect(MetricsEndpointTests.value(text, #"entitled_unknown_apple_values_total{kind="transaction",field="futureField"}"#) == 1)
        }
    }

    @Test(
        "raw values are kept whole up to the bound, then cut at a character boundary",
        arguments: [
            (RawJSON.string("short"), #""short""#),
            (RawJSON.object(["b": .integer(1), "a": .array([.bool(true), .null])]), #"{"a":[true,null],"b":1}"#),
        ] as [(RawJSON, String)])
    func rawValues(value: RawJSON, expected: String) {
        #expect(UnknownFields.raw(value) == expected)
    }

    @Test func longRawValuesAreBounded() {
        let cut = UnknownFields.raw(.string(String(repeating: "é", count: 5000)))
        #expect(cut.hasSuffix("…"))
        #expect(cut.utf8.count <= UnknownFields.maxValueBytes + "…".utf8.count)
        #expect(cut.dropLast().allSatisfy { $0 == "é" || $0 == "\"" })
    }

    @Test func atMostSixteenMembersAreRecordedButEveryOneIsCounted() throws {
        let members = (0..<40).map { UnknownMember(name: "f\($0)", value: .integer(Int64($0))) }
        let fact = RenewalInfoFact(originalTransactionId: "1", productId: "pro.monthly", autoRenewStatus: true, signedDate: Self.t0)
        let (facts, seen) = UnknownFields.annotate([(.renewalInfo(fact), nil, members)])
        guard case .renewalInfo(let recorded)? = facts.first?.fact else { Issue.record("not a renewal"); return }
        #expect(recorded.unknownFields?.count == UnknownFields.maxFields)
        #expect(seen.count == 40)
    }

    /// The one decode reports the members its model does not read — from the fast reader's parse
    /// and, with the fast paths off, from Foundation's — the same either way: the top level and
    /// a notification's nested objects, each by name, raw.
    @Test(arguments: [true, false])
    func theDecodeReportsWhatItsModelDoesNotRead(fastPaths: Bool) throws {
        let json = #"{"zeta":{"b":1,"a":[true,null]},"notificationType":"SUBSCRIBED","data":{"bundleId":"b","new":"x"},"alpha":-3}"#
        let (payload, unknown) = try JSONCodec(fastPaths: fastPaths).decodeReportingUnknown(
            ResponseBodyV2DecodedPayload.self, from: Array(json.utf8), known: ResponseBodyV2DecodedPayload.knownMembers)
        #expect(payload.notificationType == .subscribed)
        #expect(payload.data?.bundleId == "b")
        #expect(
            unknown == [
                UnknownMember(name: "alpha", value: .integer(-3)),
                UnknownMember(name: "zeta", value: .object(["a": .array([.bool(true), .null]), "b": .integer(1)])),
                UnknownMember(name: "data.new", value: .string("x")),
            ])
    }

    /// Apple's own payload fixtures use no member our models do not know: the known-key lists,
    /// read from the models themselves, cover every field Apple sends today.
    @Test(.enabled(if: AppleTestData.suitesRun), 
        arguments: [
            "signedNotification.json", "signedSummaryNotification.json", "signedExternalPurchaseTokenNotification.json",
            "signedRescindConsentNotification.json", "signedConsumptionRequestNotification.json",
        ])
    func appleNotificationFixturesHaveNoUnknownMembers(name: String) throws {
        let bytes = try AppleFixtures.bytes(name)
        for codec in [JSONCodec(fastPaths: true), JSONCodec(fastPaths: false)] {
            let known = ResponseBodyV2DecodedPayload.knownMembers
            #expect(try codec.decodeReportingUnknown(ResponseBodyV2DecodedPayload.self, from: bytes, known: known).unknown == [])
        }
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [("signedTransaction.json", true), ("signedTransactionWithRevocation.json", true), ("signedRenewalInfo.json", false)])
    func appleTransactionFixturesHaveNoUnknownMembers(name: String, isTransaction: Bool) throws {
        let bytes = try AppleFixtures.bytes(name)
        for codec in [JSONCodec(fastPaths: true), JSONCodec(fastPaths: false)] {
            let unknown =
                isTransaction
                ? try codec.decodeReportingUnknown(JWSTransactionDecodedPayload.self, from: bytes, known: JWSTransactionDecodedPayload.knownMembers).unknown
                : try codec.decodeReportingUnknown(JWSRenewalInfoDecodedPayload.self, from: bytes, known: JWSRenewalInfoDecodedPayload.knownMembers).unknown
            #expect(unknown == [])
        }
    }

    @Test func knownKeysComeFromTheModels() {
        let transaction = JWSTransactionDecodedPayload.knownMembers.keys
        for field in ["offerPeriod", "appTransactionId", "billingPlanType", "commitmentInfo", "advancedCommerceInfo", "storefrontId"] {
            #expect(transaction.contains(field), "\(field)")
        }
        #expect(
            JWSRenewalInfoDecodedPayload.knownMembers.keys.isSuperset(of: [
                "renewalBillingPlanType", "commitmentInfo", "offerPeriod", "appTransactionId",
            ]))
        let parts = ResponseBodyV2DecodedPayload.knownMembers.nested
        #expect(parts.map(\.name) == ["data", "summary", "externalPurchaseToken", "appData"])
        let externalToken = parts.first { $0.name == "externalPurchaseToken" }?.keys ?? []
        #expect(externalToken.isSuperset(of: ["externalPurchaseId", "tokenType", "tokenExpirationDate"]))
        // Set by the verifier, never read from JSON: a payload carrying it is carrying something unknown.
        #expect(!parts[0].keys.contains("transactionInfo"))
        #expect(ResponseBodyV2DecodedPayload.knownMembers.keys.isSuperset(of: ["notificationType", "subtype", "data", "signedDate", "appData"]))
    }
}
