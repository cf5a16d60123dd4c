import AppStore
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import JSONCoding
import Storage
import Testing

@testable import EntitledServer

/// `GET /v1/customers/{appUserId}/offerings` from memory: the customer's audience rendered with
/// their answer, the answer's JSON written directly, and the poll-thread read. (The whole
/// endpoint against the evaluated answer: `FastPathsDifferentialTests`.)
@Suite struct OfferingReadTests {
    static let now = APIHarness.start

    static func offering(_ json: String, version: Int64) throws -> Paywall.Offering {
        Paywall.Offering(document: try JSONDecoder().decode(OfferingDocument.self, from: Data(json.utf8)), version: version, updatedAt: 0)
    }

    static let offerings = [
        #"{"id":"default","description":"Monthly / yearly","metadata":{"title":"Go Pro ✨","url":"https://x.example/a","n":[1,2.5,-3,true,null],"z":{"b":1,"a":"\n"}},"packages":[{"id":"$monthly","products":{"appStore":"pro.monthly","playStore":"pro_monthly"}},{"id":"$annual","products":{"appStore":"pro.yearly"}},{"id":"play-only","products":{"playStore":"p"}}]}"#,
        #"{"id":"bare","packages":[{"id":"$lifetime","products":{"appStore":"lifetime"}}]}"#,
    ]

    @Test(arguments: offerings, [nil, "rule-1"])
    func theWriterWritesWhatFoundationWrites(json: String, ruleId: String?) throws {
        let offering = try Self.offering(json, version: 3)
        let writer = EncodedOfferings()
        for (offers, states) in [
            (EligibleOffers(), Set<AudienceState>([.new])),
            (
                EligibleOffers(introductory: ["pro.yearly"], winBack: [OfferReference(productId: "pro.monthly", offerId: "comeback")]),
                Set<AudienceState>([.inactive, .trialUsed, .billingRetry])
            ),
        ] {
            // Without an experiment, and with the variant one chose (then no rule).
            for experiment in [nil, ExperimentAssignment(experimentId: "spring/é", variant: 1, offeringId: "default", enrols: true)] {
                let body = CustomerOfferingBody(
                    appUserId: "ana/é\"", paywallVersion: 12, offering: offering, ruleId: experiment == nil ? ruleId : nil, offers: offers,
                    states: states, experiment: experiment)
                let foundation = Array(try JSONEncoder.entitledDefault.encode(body))
                // Twice: the second with the metadata held from the first.
                #expect(writer.bytes(body) == foundation)
                #expect(writer.bytes(body) == foundation)
            }
        }
        // A new version of the offering is encoded again, not served from the held one.
        var changed = offering
        changed.version = 4
        changed.document.metadata = .object(["title": .string("Changed")])
        let body = CustomerOfferingBody(appUserId: "a", paywallVersion: 13, offering: changed, ruleId: nil, offers: EligibleOffers(), states: [.new])
        #expect(writer.bytes(body) == Array(try JSONEncoder.entitledDefault.encode(body)))
    }

    /// The stored answer carries what the offerings read needs of the same state, and reads back
    /// with it; a rendering without one has none.
    @Test func aRenderedAnswerCarriesItsCustomersAudience() throws {
        let customer = CustomerRecord(id: 1, appUserId: "u/1", appAccountToken: "tok", createdAt: 1)
        let state = evaluate(facts: [], policy: OfferingAPITests.configuration().policy, now: Self.now)
        let document = try CustomerDocument(customer: customer, environments: [.production, .sandbox], state: state).encoded()
        let rendered = try #require(ProjectionCache().answer(rendering: document))
        let audience = try #require(rendered.audience())
        #expect(audience == CustomerAudience(state))
        #expect(audience.states == [.new])
        #expect(!audience.introductory.isEmpty)
        #expect(RenderedCustomer(document: rendered.document)?.audience() == audience)
        #expect(rendered.body(serverTime: Self.now) == Array(try JSONEncoder.entitledDefault.encode(CustomerBody(customer: customer, state: state, now: Self.now))))
        let bare = try #require(RenderedCustomer(body: CustomerBody(customer: customer, state: state, now: 0), scope: "Production+Sandbox"))
        #expect(bare.audience() == nil)
        #expect(RenderedCustomer(document: bare.document) == bare)
    }

    /// The offerings read's head of a stored answer (``RenderedCustomer/Head``) holds exactly when
    /// the whole answer does, for the merged answer, with the same audience line: no customer,
    /// none rendered yet, rendered, a clock gone back, a changed state, and an answer that time
    /// changes.
    @Test func theStoredAnswersHeadHoldsExactlyWhenTheWholeAnswerDoes() async throws {
        let store = try await StoredBackend.sqlite.open()
        do {
            let (ledger, _) = Self.offerings(store, clock: VirtualClock(Self.now))
            /// Whether the head holds at `now`, checked against the whole answer's read.
            func holds(_ user: String, at now: Int64) throws -> Bool {
                let whole = try ledger.renderedCustomerNow(appUserId: user, context: ledger.answerContext(now: now))
                let head = try ledger.renderedHeadNow(appUserId: user, now: now)
                #expect(head?.audienceLine == whole?.audienceLine)
                #expect(head?.audience(codec: ledger.cache.codec) == whole?.audience(codec: ledger.cache.codec))
                #expect((head == nil) == (whole == nil), "\(user) at \(now)")
                return head != nil
            }
            #expect(try !holds("u1", at: Self.now))
            _ = try await ledger.customer(appUserId: "u1", context: ledger.answerContext(now: Self.now))
            #expect(try !holds("u1", at: Self.now))
            _ = try await ledger.renderedCustomer(appUserId: "u1", context: ledger.answerContext(now: Self.now))
            #expect(try holds("u1", at: Self.now))
            #expect(try !holds("u1", at: Self.now - 1))

            // A subscription that expires in a day: the answer (and its audience) holds until then.
            let day: Int64 = 86_400_000
            let expiring = Fact.transaction(
                TransactionFact(
                    transactionId: "t1", originalTransactionId: "o1", productId: "pro.monthly", purchaseDate: Self.now - 29 * day,
                    expiresDate: Self.now + day, productType: .autoRenewable, signedDate: Self.now - 29 * day))
            _ = try await ledger.ingest(
                ReceivedMessage(notificationUUID: nil, source: .client, body: [], receivedAt: Self.now), facts: [(expiring, nil)],
                claim: Claim(appUserId: "u1"))
            #expect(try !holds("u1", at: Self.now))
            let renewed = try #require(try await ledger.renderedCustomer(appUserId: "u1", context: ledger.answerContext(now: Self.now)))
            let next = try #require(renewed.nextChangeAt)
            #expect(next <= Self.now + day)
            #expect(try holds("u1", at: next - 1))
            #expect(try !holds("u1", at: next))

            // A head is read from a document of this format only.
            let stored = try #require(try await store.projection(appUserId: "u1")?.answer)
            #expect(RenderedCustomer.Head(document: stored)?.audienceLine == RenderedCustomer(document: stored)?.audienceLine)
            let version = RenderedCustomer.formatVersion
            let damaged = [
                Array(stored.prefix(20)), Array(stored.drop { $0 != UInt8(ascii: "\n") }), Array("entitled-answer/1 P - 5\n{}\n{}".utf8),
                Array("entitled-answer/\(version) P -\n{}\n{}".utf8), Array("entitled-answer/\(version) P - 5\n{}".utf8),
                Array("entitled-answer/\(version) P soon 5\n{}\n{}".utf8),
            ]
            #expect(RenderedCustomer.Head(document: Array("entitled-answer/\(version) P - 5\n{}\n{}".utf8))?.audienceLine == Array("{}".utf8))
            for damaged in damaged {
                #expect(RenderedCustomer.Head(document: damaged) == nil)
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    @Test(arguments: [
        (#"{"states": ["new"]}"#, CustomerOfferings.Asked(), false),
        (#"{"platforms": ["ios"]}"#, CustomerOfferings.Asked(), false),
        (#"{"attributes": {"plan": "team"}}"#, CustomerOfferings.Asked(storefront: "FRA", appVersion: "1", locale: "fr"), true),
        (#"{"storefronts": ["FRA"]}"#, CustomerOfferings.Asked(), true),
        (#"{"storefronts": ["FRA"]}"#, CustomerOfferings.Asked(storefront: "USA"), false),
        (#"{"maxAppVersion": "2"}"#, CustomerOfferings.Asked(), true),
        (#"{"minAppVersion": "2"}"#, CustomerOfferings.Asked(appVersion: "3"), false),
        (#"{"locales": ["fr"]}"#, CustomerOfferings.Asked(), true),
        (#"{"locales": ["fr"]}"#, CustomerOfferings.Asked(locale: "de"), false),
    ])
    func attributesAreReadOnlyWhenARuleNeedsThem(when: String, asked: CustomerOfferings.Asked, reads: Bool) throws {
        let body = #"{"rules": [{"id": "r", "offeringId": "o", "when": "# + when + "}]}"
        var paywall = Paywall(PaywallSnapshot(version: 1))
        paywall.rules = try JSONDecoder().decode(TargetingBody.self, from: Data(body.utf8)).rules
        #expect(paywall.readsAttributes(asked) == reads)
    }

    /// The offerings read over `store` with the fast paths on.
    static func offerings(_ store: any LedgerStore, clock: VirtualClock) -> (FactLedger, CustomerOfferings) {
        let configuration = OfferingAPITests.configuration()
        let ledger = FactLedger(store: store, configuration: configuration, cache: FastPaths(enabled: true).projectionCache())
        let offerings = CustomerOfferings(
            ledger: ledger, cache: PaywallCache(ledger: ledger, clock: clock),
            answers: CustomerAnswers(configuration: configuration, ledger: ledger, cache: ledger.cache), clock: clock,
            experiments: ExperimentExposure(ledger: ledger))
        return (ledger, offerings)
    }

    /// On a store that reads at once, once the customer's answer is rendered, the offering is
    /// answered on the calling thread, the same bytes as the asynchronous read; attributes are read
    /// at once when a rule needs them.
    @Test func thePollThreadAnswersFromTheRenderedAnswer() async throws {
        let store = try await StoredBackend.sqlite.open()
        do {
            let clock = VirtualClock(Self.now)
            let (ledger, offerings) = Self.offerings(store, clock: clock)
            let standard = #"{"id":"default","packages":[{"id":"$monthly","products":{"appStore":"pro.monthly"}}]}"#
            let team = #"{"id":"team","packages":[{"id":"$lifetime","products":{"appStore":"lifetime"}}]}"#
            let rules = #"{"rules":[{"id":"teams","when":{"attributes":{"plan_hint":"team"}},"offeringId":"team"}]}"#
            _ = try await store.changePaywall(actor: "test", now: Self.now) { _ in
                [.putOffering(id: "default", document: standard), .putOffering(id: "team", document: team), .setCurrent(offeringId: "default"),
                 .setTargeting(document: rules)]
            }
            let asked = CustomerOfferings.Asked()
            // Nothing held in memory yet, and no customer: the asynchronous read (which creates them).
            #expect(try offerings.answerNow(appUserId: "u1", asked: asked) == nil)
            let evaluated = try await offerings.answer(appUserId: "u1", asked: asked)
            #expect(try offerings.answerNow(appUserId: "u1", asked: asked) == nil)
            _ = try await ledger.renderedCustomer(appUserId: "u1", context: ledger.answerContext(now: Self.now))
            let now = try #require(try offerings.answerNow(appUserId: "u1", asked: asked))
            #expect(now == evaluated)
            #expect(try await offerings.answer(appUserId: "u1", asked: asked) == evaluated)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(now)) as? [String: Any])
            #expect(json["offeringId"] as? String == "default")

            // The attribute the rule reads is read at once, as set.
            _ = try await ledger.setAttributes(appUserId: "u1", changes: ["plan_hint": "team"], maxCount: 50, now: Self.now)
            let teamNow = try #require(try offerings.answerNow(appUserId: "u1", asked: asked))
            #expect(teamNow == (try await offerings.answer(appUserId: "u1", asked: asked)))
            #expect((try JSONSerialization.jsonObject(with: Data(teamNow)) as? [String: Any])?["ruleId"] as? String == "teams")

            // The paywall's version is due for a check: the asynchronous read does it.
            clock.advance(by: PaywallCache.recheckMilliseconds)
            #expect(try offerings.answerNow(appUserId: "u1", asked: asked) == nil)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    /// The held answers' seam alone: one entry per key, shared by every customer (each answer with
    /// its reader's own id, escaped as the writer escapes it), any field of the key a new entry,
    /// never more than its limit.
    @Test func aHeldAnswerIsSharedByItsKeyAndWrittenWithEachReadersId() throws {
        let held = OfferingAnswerCache(limit: 3)
        var renders = 0
        func answer(_ appUserId: String, _ key: OfferingAnswerCache.Key, offering: String = "default") -> [UInt8]? {
            held.bytes(appUserId: appUserId, key: key) {
                renders += 1
                var bytes = Array(#"{"appUserId":"#.utf8)
                JSONWriter.appendQuoted(appUserId, to: &bytes)
                return bytes + Array(#","offeringId":"\#(offering)","version":\#(key.paywallVersion)}"#.utf8)
            }
        }
        let key = OfferingAnswerCache.Key(paywallVersion: 3, audience: Array(#"{"states":["new"]}"#.utf8), asked: .init(), attributes: [])
        #expect(answer("u1", key) == Array(#"{"appUserId":"u1","offeringId":"default","version":3}"#.utf8))
        #expect(answer(#"ana/é"\"#, key, offering: "unused") == Array(#"{"appUserId":"ana/é\"\\","offeringId":"default","version":3}"#.utf8))
        #expect(renders == 1)
        // The same inputs read again (the line a copy of its own) find the entry.
        var again = key
        again.audience = Array(#"{"states":["new"]}"#.utf8)
        #expect(answer("u2", again, offering: "unused") == Array(#"{"appUserId":"u2","offeringId":"default","version":3}"#.utf8))
        #expect(renders == 1)
        #expect(held.count == 1)
        var others: [OfferingAnswerCache.Key] = [key, key, key, key]
        others[0].paywallVersion = 4
        // An audience line of the same length, one byte apart, is another key.
        others[1].audience = Array(#"{"states":["nex"]}"#.utf8)
        others[2].asked.storefront = "FRA"
        others[3].attributes = [CustomerAttribute(name: "plan_hint", value: "team", updatedAt: 1)]
        for other in others {
            #expect(answer("u1", other, offering: "other")?.contains(Array("other".utf8)) == true)
        }
        #expect(renders == 5)
        #expect(held.count == 3)
        // Nothing to answer, or an answer of another shape, is not held.
        var fresh = key
        fresh.paywallVersion = 9
        #expect(held.bytes(appUserId: "u1", key: fresh) { nil } == nil)
        #expect(held.bytes(appUserId: "u1", key: fresh) { Array("[]".utf8) } == Array("[]".utf8))
        #expect(held.bytes(appUserId: "u1", key: fresh) { nil } == nil)
    }

    /// An offering's document with a title in its metadata.
    static func document(_ id: String, title: String) -> String {
        #"{"id":"\#(id)","metadata":{"title":"\#(title)"},"packages":[{"id":"$monthly","products":{"appStore":"pro.monthly"}}]}"#
    }

    /// On the poll thread, customers of one audience share one held answer; after an offering, a
    /// targeting, an attribute or a customer change, and another server's change once the version
    /// check sees it, the next read answers it: always the bytes the asynchronous read writes
    /// (which holds nothing).
    @Test func heldAnswersFollowEveryChangeAndAreTheAsynchronousReadsBytes() async throws {
        let store = try await StoredBackend.sqlite.open()
        do {
            let clock = VirtualClock(Self.now)
            let (ledger, offerings) = Self.offerings(store, clock: clock)
            let paywall = offerings.cache
            let changes = OfferingChanges(ledger: ledger, cache: paywall)
            _ = try await changes.change(actor: "test", now: Self.now) { _ in
                [.putOffering(id: "default", document: Self.document("default", title: "A")), .putOffering(id: "winback", document: Self.document("winback", title: "W")),
                 .putOffering(id: "team", document: Self.document("team", title: "T")), .setCurrent(offeringId: "default"),
                 .setTargeting(document: #"{"rules":[{"id":"lapsed","when":{"states":["inactive"]},"offeringId":"winback"}]}"#)]
            }
            let users = ["u/1", #"ana "é""#, "u3"]
            for user in users {
                _ = try await offerings.answer(appUserId: user, asked: .init())
                _ = try await ledger.renderedCustomer(appUserId: user, context: ledger.answerContext(now: Self.now))
            }
            /// The poll thread's answer, twice (the second from what the first held), checked
            /// against the asynchronous read's.
            func read(_ user: String, _ asked: CustomerOfferings.Asked = .init()) async throws -> [String: Any] {
                let now = try #require(try offerings.answerNow(appUserId: user, asked: asked))
                #expect(try offerings.answerNow(appUserId: user, asked: asked) == now)
                #expect(now == (try await offerings.answer(appUserId: user, asked: asked)), "\(user)")
                return try #require(try JSONSerialization.jsonObject(with: Data(now)) as? [String: Any])
            }
            func title(_ json: [String: Any]) -> String? { (json["metadata"] as? [String: Any])?["title"] as? String }
            for user in users {
                let json = try await read(user)
                #expect(json["appUserId"] as? String == user)
                #expect(title(json) == "A")
            }
            #expect(offerings.held.count == 1)

            // An offering's change.
            _ = try await changes.change(actor: "test", now: Self.now) { _ in [.putOffering(id: "default", document: Self.document("default", title: "B"))] }
            #expect(title(try await read("u3")) == "B")
            // A targeting change, then an attribute it reads.
            _ = try await changes.change(actor: "test", now: Self.now) { _ in
                [.setTargeting(document: #"{"rules":[{"id":"teams","when":{"attributes":{"plan_hint":"team"}},"offeringId":"team"}]}"#)]
            }
            #expect(try await read("u3")["offeringId"] as? String == "default")
            _ = try await ledger.setAttributes(appUserId: "u3", changes: ["plan_hint": "team"], maxCount: 50, now: Self.now)
            #expect(try await read("u3")["ruleId"] as? String == "teams")
            #expect(try await read("u/1")["offeringId"] as? String == "default")

            // The customer's own change: a subscription that lapsed, which the lapsed rule shows.
            _ = try await changes.change(actor: "test", now: Self.now) { _ in
                [.setTargeting(document: #"{"rules":[{"id":"lapsed","when":{"states":["inactive"]},"offeringId":"winback"}]}"#)]
            }
            #expect(try await read("u/1")["offeringId"] as? String == "default")
            let day: Int64 = 86_400_000
            let lapsed = Fact.transaction(
                TransactionFact(
                    transactionId: "t1", originalTransactionId: "o1", productId: "pro.monthly", purchaseDate: Self.now - 40 * day,
                    expiresDate: Self.now - 10 * day, productType: .autoRenewable, signedDate: Self.now - 40 * day))
            _ = try await ledger.ingest(
                ReceivedMessage(notificationUUID: nil, source: .client, body: [], receivedAt: Self.now), facts: [(lapsed, nil)],
                claim: Claim(appUserId: "u/1"))
            _ = try await ledger.renderedCustomer(appUserId: "u/1", context: ledger.answerContext(now: Self.now))
            let now = try await read("u/1")
            #expect(now["offeringId"] as? String == "winback")
            #expect((now["states"] as? [String])?.contains("inactive") == true)
            #expect(try await read(#"ana "é""#)["offeringId"] as? String == "default")

            // Another server's change, seen once the version check reads it.
            _ = try await store.changePaywall(actor: "elsewhere", now: Self.now) { _ in [.setCurrent(offeringId: "team")] }
            clock.advance(by: PaywallCache.recheckMilliseconds)
            #expect(try offerings.answerNow(appUserId: "u3", asked: .init()) == nil)
            _ = try await paywall.current()
            #expect(try await read(#"ana "é""#)["offeringId"] as? String == "team")
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
