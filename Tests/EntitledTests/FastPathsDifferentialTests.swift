import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import struct Entitlements.WinBackOfferRule
import Foundation
import HTTPServer
import Storage
import Testing

/// The fast paths against their reference: two servers built by the composition root on the same
/// kind of store, one with the fast paths (tape decoder, sorted and answer writers, stored
/// answers, encoded-body reuse) and one with Foundation alone, are given the same generated
/// history of really signed notifications — shuffled, repeated, some with members this build does
/// not know — and must answer every request with the same status and the same bytes.
@Suite struct FastPathsDifferentialTests {
    static let ca = try! TestCertificateAuthority()
    static let day: Int64 = 86_400_000
    static let t0 = APIHarness.start

    /// One server of the pair and what differs between the two by nature: each customer's
    /// random appAccountToken.
    struct Side {
        let port: Int
        let server: HTTPServer
        let store: any LedgerStore
        let ledger: FactLedger
        var tokens: [String: String] = [:]

        func send(_ method: String, _ path: String, auth: String = APIHarness.admin, json: String? = nil) async throws -> Loopback.Reply {
            var headers = ["Authorization": auth]
            if json != nil { headers["Content-Type"] = "application/json" }
            return try await Loopback.send(port: port, method, path, headers: headers, body: Array((json ?? "").utf8))
        }

        /// The reply's status and body, each customer's token named instead of spelled out and a
        /// problem's random requestId dropped.
        func comparable(_ reply: Loopback.Reply) -> String {
            var text = reply.text
            for (customer, token) in tokens { text = text.replacingOccurrences(of: token, with: "token-of-\(customer)") }
            if let id = reply.json["requestId"] as? String { text = text.replacingOccurrences(of: id, with: "request") }
            return "\(reply.status) \(text)"
        }
    }

    /// A generated history: each customer's subscriptions and purchases as the notifications Apple
    /// would send, each signed with the customer's token in its transaction.
    struct History {
        var rng: SplitMix64
        let customers: [String]

        init(seed: UInt64) {
            rng = SplitMix64(seed: seed)
            customers = (0..<3).map { "c\($0)" } + ["c/é"]
        }

        mutating func pick<T>(_ values: [T]) -> T { values[Int(rng.next() % UInt64(values.count))] }
        mutating func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }

        /// The steps of `customer`'s story, in Apple's order: (notification type, subtype, transaction, renewal).
        mutating func story(_ customer: Int, token: String) -> [Step] {
            let environment: AppStoreEnvironment = chance(30) ? .sandbox : .production
            var steps: [Step] = []
            let otid = "o\(customer)-\(rng.next() % 1000)"
            if chance(25) {
                let purchase = t0 - Int64(rng.next() % 30) * day
                let transaction = payload(
                    otid: otid, tid: otid, product: "lifetime", purchase: purchase, expires: nil, token: token, environment: environment)
                steps.append(Step(type: .oneTimeCharge, subtype: nil, transaction: transaction, renewal: nil, environment: environment))
                if chance(30) {
                    var refunded = transaction
                    refunded.revocationDate = purchase + day
                    refunded.revocationReason = .other
                    refunded.signedDate = purchase + day
                    steps.append(Step(type: .refund, subtype: nil, transaction: refunded, renewal: nil, environment: environment))
                }
                return steps
            }
            let product = pick(["pro.monthly", "pro.yearly"])
            let period = product == "pro.monthly" ? 30 * day : 365 * day
            var purchase = t0 - Int64(rng.next() % 60) * day - Int64(rng.next() % 86_400) * 1000
            var autoRenew = true
            let intro = chance(30)
            for index in 0..<(1 + Int(rng.next() % 4)) {
                let tid = "\(otid)-\(index)"
                var transaction = payload(
                    otid: otid, tid: tid, product: product, purchase: purchase, expires: purchase + period, token: token,
                    environment: environment)
                if index == 0 && intro {
                    transaction.offerType = .introductoryOffer
                    transaction.offerDiscountType = .freeTrial
                    transaction.offerPeriod = "P1W"
                }
                let renewal = JWSRenewalInfoDecodedPayload(
                    originalTransactionId: otid, autoRenewProductId: product, productId: product,
                    autoRenewStatus: autoRenew ? .on : .off, signedDate: purchase, environment: environment)
                steps.append(
                    Step(
                        type: index == 0 ? .subscribed : .didRenew, subtype: index == 0 ? .initialBuy : nil, transaction: transaction,
                        renewal: renewal, environment: environment))
                if chance(30) {
                    autoRenew.toggle()
                    var changed = renewal
                    changed.autoRenewStatus = autoRenew ? .on : .off
                    changed.signedDate = purchase + day
                    steps.append(
                        Step(
                            type: .didChangeRenewalStatus, subtype: autoRenew ? .autoRenewEnabled : .autoRenewDisabled,
                            transaction: transaction, renewal: changed, environment: environment))
                }
                if !autoRenew { break }
                purchase += period
            }
            if chance(30), let last = steps.last?.transaction {
                var retry = JWSRenewalInfoDecodedPayload(
                    originalTransactionId: otid, autoRenewProductId: product, productId: product, autoRenewStatus: .on,
                    isInBillingRetryPeriod: true, gracePeriodExpiresDate: (last.expiresDate ?? t0) + 6 * day,
                    signedDate: last.expiresDate, environment: environment)
                retry.expirationIntent = .billingError
                steps.append(Step(type: .didFailToRenew, subtype: .gracePeriod, transaction: last, renewal: retry, environment: environment))
            }
            return steps
        }

        func payload(
            otid: String, tid: String, product: String, purchase: Int64, expires: Int64?, token: String, environment: AppStoreEnvironment
        ) -> JWSTransactionDecodedPayload {
            JWSTransactionDecodedPayload(
                originalTransactionId: otid, transactionId: tid, bundleId: APIHarness.bundleId, productId: product,
                purchaseDate: purchase, originalPurchaseDate: purchase, expiresDate: expires, quantity: 1,
                type: expires == nil ? .nonConsumable : .autoRenewableSubscription, appAccountToken: token,
                inAppOwnershipType: .purchased, signedDate: purchase, environment: environment, storefront: "USA",
                transactionReason: .purchase, currency: "USD", price: 9990)
        }
    }

    struct Step {
        let type: NotificationType
        let subtype: Entitlements.NotificationSubtype?
        var transaction: JWSTransactionDecodedPayload
        let renewal: JWSRenewalInfoDecodedPayload?
        let environment: AppStoreEnvironment

        /// The signed notification; with `unknown`, each signed part carries a member this build does not know.
        func signed(uuid: String, unknown: Bool) throws -> String {
            let signer = FastPathsDifferentialTests.ca.signer
            func sign(_ value: some Encodable) throws -> String {
                var json = Array(try AppStoreJSON.encode(value))
                if unknown {
                    json.removeLast()  // the closing brace
                    json += Array(#","futureMember":{"list":[1,2.5,-0,"é\u2028",null,true],"n":1e3}}"#.utf8)
                }
                return try signer.sign(payloadJSON: json)
            }
            let payload = ResponseBodyV2DecodedPayload(
                notificationType: type, subtype: subtype, notificationUUID: uuid,
                data: NotificationData(
                    environment: environment, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                    signedTransactionInfo: try sign(transaction), signedRenewalInfo: try renewal.map(sign)),
                version: "2.0", signedDate: renewal?.signedDate ?? transaction.signedDate)
            return try sign(payload)
        }
    }

    static func start(_ backend: StoredBackend, fastPaths: Bool, configuration: Configuration, clock: VirtualClock) async throws -> Side {
        let store = try await backend.open()
        let (server, ledger) = try await startServer(
            configuration: configuration, store: store, clock: clock, fastPaths: FastPaths(enabled: fastPaths))
        return Side(port: server.port, server: server, store: store, ledger: ledger)
    }

    /// Every read a client makes of `customer`, on both sides.
    static func expectSameReads(_ fast: Side, _ reference: Side, customer: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let id = Self.path(customer)
        for path in [
            "/v1/customers/\(id)", "/v1/customers/\(id)?environment=Sandbox", "/v1/customers/\(id)/history?limit=3",
            "/v1/customers/\(id)/history", "/v1/customers/\(id)/offerings",
            "/v1/customers/\(id)/offerings?storefront=FRA&platform=ios&appVersion=2.1&locale=fr_FR",
        ] {
            // Twice: the second read is served from what the first stored or encoded.
            for _ in 0..<2 {
                let (a, b) = (try await fast.send("GET", path, auth: APIHarness.reader), try await reference.send("GET", path, auth: APIHarness.reader))
                #expect(fast.comparable(a) == reference.comparable(b), "GET \(path)", sourceLocation: sourceLocation)
            }
        }
    }

    /// Offerings and rules reading every kind of input (the customer's state, attributes, the
    /// query), the same on both sides.
    static func setUpPaywall(_ side: Side) async throws {
        let offerings = [
            ("default", #"{"description": "Pro", "metadata": {"title": "Go Pro", "links": ["https://a.example/x"]}, "packages": [{"id": "$monthly", "products": {"appStore": "pro.monthly", "playStore": "pro_monthly"}}, {"id": "$annual", "products": {"appStore": "pro.yearly"}}]}"#),
            ("winback", #"{"packages": [{"id": "$monthly", "products": {"appStore": "pro.monthly"}}, {"id": "$lifetime", "products": {"appStore": "lifetime"}}]}"#),
            ("team", #"{"packages": [{"id": "$lifetime", "products": {"appStore": "lifetime"}}]}"#),
        ]
        for (id, body) in offerings {
            #expect(try await side.send("PUT", "/v1/offerings/\(id)", json: body).status == 201)
        }
        #expect(try await side.send("PUT", "/v1/offerings/current", json: #"{"offeringId": "default"}"#).status == 200)
        let rules = #"""
            {"rules": [
              {"id": "retry", "when": {"states": ["billingRetry"]}, "offeringId": "team"},
              {"id": "lapsed", "when": {"states": ["inactive"]}, "offeringId": "winback"},
              {"id": "teams", "when": {"attributes": {"plan_hint": "team"}}, "offeringId": "team"},
              {"id": "french", "when": {"storefronts": ["FRA"], "minAppVersion": "2.0", "locales": ["fr"]}, "offeringId": "winback"}
            ]}
            """#
        #expect(try await side.send("PUT", "/v1/targeting", json: rules).status == 200)
    }

    @Test(arguments: StoredBackend.all, [UInt64(1), 2, 3])
    func theFastPathsAnswerAsFoundationDoes(backend: StoredBackend, seed: UInt64) async throws {
        var configuration = try SignedAPITests.configuration(trusting: Self.ca)
        configuration.apps[0].products[0].winBackOffers = [WinBackOfferRule(offerId: "comeback", minimumLapsedDays: 1)]
        let clock = VirtualClock(Self.t0)
        var fast = try await Self.start(backend, fastPaths: true, configuration: configuration, clock: clock)
        var reference = try await Self.start(backend, fastPaths: false, configuration: configuration, clock: clock)
        var history = History(seed: seed)
        do {
            try await Self.setUpPaywall(fast)
            try await Self.setUpPaywall(reference)
            var deliveries: [(uuid: String, step: Step, unknown: Bool, customer: String)] = []
            for (index, customer) in history.customers.enumerated() {
                let id = Self.path(customer)
                let a = try await fast.send("GET", "/v1/customers/\(id)", auth: APIHarness.reader)
                let b = try await reference.send("GET", "/v1/customers/\(id)", auth: APIHarness.reader)
                fast.tokens[customer] = try #require(a.json["appAccountToken"] as? String)
                reference.tokens[customer] = try #require(b.json["appAccountToken"] as? String)
                #expect(fast.comparable(a) == reference.comparable(b))
                // Attributes a rule reads (one customer in a team, one in France), on both sides.
                let attributes = [#"{"attributes": {"plan_hint": "team"}}"#, #"{"attributes": {"$storefront": "FRA", "$appVersion": "2.3"}}"#]
                if index < attributes.count {
                    for side in [fast, reference] {
                        #expect(try await side.send("PUT", "/v1/customers/\(id)/attributes", auth: APIHarness.writer, json: attributes[index]).status == 200)
                    }
                }
                // The same story for both, each side's notifications carrying its own token.
                let story = history.story(index, token: "")
                for step in story {
                    deliveries.append((UUID().uuidString, step, history.chance(20), customer))
                }
            }
            // Apple's retries: out of order, some twice.
            deliveries.shuffle(using: &history.rng)
            deliveries += deliveries.filter { _ in history.chance(15) }
            for delivery in deliveries {
                var replies: [String] = []
                for side in [fast, reference] {
                    var step = delivery.step
                    step.transaction.appAccountToken = side.tokens[delivery.customer]
                    let body = #"{"signedPayload":"\#(try step.signed(uuid: delivery.uuid, unknown: delivery.unknown))"}"#
                    replies.append(side.comparable(try await side.send("POST", "/v1/apple/notifications", json: body)))
                }
                #expect(replies[0] == replies[1], "\(delivery.step.type) of \(delivery.customer)")
                #expect(replies[0].hasPrefix("200 "), "\(replies[0])")
                try await Self.expectSameReads(fast, reference, customer: delivery.customer)
            }
            // Time alone changes answers (renewals lapse, grace periods end): read on.
            for _ in 0..<4 {
                clock.advance(by: Int64(history.rng.next() % 40) * Self.day + 1)
                for customer in history.customers {
                    try await Self.expectSameReads(fast, reference, customer: customer)
                }
            }
        } catch {
            await Self.stop(fast)
            await Self.stop(reference)
            throw error
        }
        await Self.stop(fast)
        await Self.stop(reference)
    }

    /// `customer` as a path segment.
    static func path(_ customer: String) -> String {
        customer.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789")) ?? customer
    }

    static func stop(_ side: Side) async {
        await side.server.shutdown()
        await side.store.close()
    }
}
