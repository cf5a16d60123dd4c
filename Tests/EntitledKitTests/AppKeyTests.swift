import EntitledKit
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// App-key mode on an in-memory server: the anonymous customer, its token, logging in and out,
/// offers, the answer stream and the refresh's cache policy.
@Suite struct AppKeyTests {
    let wall = FakeWall(Date(timeIntervalSince1970: 1_800_000_000))

    @Test func configureCreatesTheAnonymousCustomerOnceAndReusesItFromTheStore() async throws {
        let server = ScriptedServer(clock: wall)
        let identities = InMemoryIdentityStore()
        let entitled = server.entitled(identities)
        async let first = entitled.customer()
        async let second = entitled.refresh()
        let answers = try await [first, second]
        #expect(answers.map(\.appUserId) == ["$anon:1", "$anon:1"])
        let created = server.sent("POST", "/anonymous")
        #expect(created.count == 1)
        #expect(created.first?.authorization == "Bearer app_0123456789abcdef01234567")
        // Only that request carries the app key; the customer's calls carry its token.
        #expect(server.sent("GET", "/$anon:1").allSatisfy { $0.authorization == "Bearer token-1" })
        #expect(identities.load()?.appUserId == "$anon:1")

        // A relaunch reads the stored identity: no second anonymous customer.
        let relaunched = server.entitled(identities)
        #expect(try await relaunched.refresh().appUserId == "$anon:1")
        #expect(try await relaunched.appUserId == "$anon:1")
        #expect(server.sent("POST", "/anonymous").count == 1)
    }

    @Test func aFileStoreKeepsTheIdentityAcrossInstances() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kit-\(UUID().uuidString)/identity.json")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let identity = StoredIdentity(appUserId: "$anon:ab", token: "t", expiresAt: Date(timeIntervalSince1970: 1_800_003_600), anonymous: true)
        #expect(FileIdentityStore(url: url).load() == nil)
        FileIdentityStore(url: url).save(identity)
        #expect(FileIdentityStore(url: url).load() == identity)
        FileIdentityStore(url: url).save(nil)
        #expect(FileIdentityStore(url: url).load() == nil)
    }

    @Test func aTokenNearItsExpiryIsRefreshedAndAnExpiredAnonymousOneIsReplaced() async throws {
        let server = ScriptedServer(clock: wall)
        let identities = InMemoryIdentityStore()
        let entitled = server.entitled(identities)
        _ = try await entitled.refresh()
        // 58 minutes later the hour-long token is inside the refresh margin: refreshed with itself.
        wall.advance(seconds: 58 * 60)
        _ = try await entitled.refresh()
        let refreshes = server.sent("POST", "/$anon:1/token")
        #expect(refreshes.map(\.authorization) == ["Bearer token-1"])
        #expect(server.sent("GET", "/$anon:1").last?.authorization == "Bearer token-2")
        #expect(identities.load()?.token == "token-2")
        // Past its expiry a token cannot be refreshed: a new anonymous customer is created.
        wall.advance(seconds: 2 * 3600)
        #expect(try await entitled.refresh().appUserId == "$anon:2")
        #expect(server.sent("POST", "/token").count == 1)
        #expect(server.sent("POST", "/anonymous").count == 2)
    }

    @Test func anAppOpenedNowAndThenRenewsItsTokenAndKeepsItsAnonymousCustomer() async throws {
        let server = ScriptedServer(clock: wall)
        let identities = InMemoryIdentityStore()
        let entitled = server.entitled(identities)
        _ = try await entitled.refresh()
        // Opened every 40 minutes with hour-long tokens: each use past half a token's life renews
        // it, so the token never expires between two uses and the customer stays the same.
        for _ in 0..<6 {
            wall.advance(seconds: 40 * 60)
            #expect(try await entitled.refresh().appUserId == "$anon:1")
        }
        #expect(server.sent("POST", "/anonymous").count == 1)
        #expect(server.sent("POST", "/$anon:1/token").count == 6)
        #expect(identities.load()?.receivedAt == wall.now())
        // A token within its first half is used as is.
        wall.advance(seconds: 20 * 60)
        _ = try await entitled.refresh()
        #expect(server.sent("POST", "/$anon:1/token").count == 6)
    }

    @Test func logInMergesIntoTheKnownIdAndLogOutStartsAnew() async throws {
        let server = ScriptedServer(clock: wall)
        let identities = InMemoryIdentityStore()
        let entitled = server.entitled(identities)
        let updates = entitled.customerUpdates
        _ = try await entitled.customer()
        let merged = try await entitled.logIn("user-42", token: "minted-for-user-42")
        #expect(merged.appUserId == "user-42")
        let login = try #require(server.sent("POST", "/$anon:1/login").first)
        #expect(login.authorization == "Bearer token-1")
        #expect(login.body == ["appUserId": "user-42", "token": "minted-for-user-42"])
        #expect(identities.load() == StoredIdentity(
            appUserId: "user-42", token: "token-2", expiresAt: wall.now().addingTimeInterval(3600), anonymous: false,
            receivedAt: wall.now()))
        #expect(try await entitled.refresh().appUserId == "user-42")
        #expect(server.sent("GET", "/user-42").last?.authorization == "Bearer token-2")
        var seen: [String] = []
        for await answer in updates {
            seen.append(answer.appUserId)
            if seen.count == 3 { break }
        }
        #expect(seen == ["$anon:1", "user-42", "user-42"])

        // A refused login changes nothing.
        await #expect(throws: EntitledError.server(status: 403, code: "INVALID_LOGIN_TOKEN", detail: nil)) {
            try await entitled.logIn("user-7", token: "forged")
        }
        #expect(try await entitled.appUserId == "user-42")

        await entitled.logOut()
        #expect(identities.load() == nil)
        #expect(try await entitled.refresh().appUserId == "$anon:2")
    }

    @Test func theAnswersOffersAreTypedValues() throws {
        let offers = CustomerAnswer.Offers(
            introductory: ["pro.monthly"], winBack: [.init(productId: "pro.monthly", offerId: "back")],
            promotional: [.init(productId: "pro.monthly", offerId: "half"), .init(productId: "pro.yearly", offerId: "y")])
        #expect(offers.available(for: "pro.monthly") == [.introductory, .promotional("half"), .winBack("back")])
        #expect(offers.available(for: "pro.yearly") == [.promotional("y")])
        #expect(offers.available(for: "other").isEmpty)
    }

    @Test(arguments: [
        (PurchaseOffer.promotional("half"), "promotional", "half", "v1"), (.winBack("back"), "winBack", "back", "v1"),
        (.introductory, "introductoryEligibility", nil, "jws"),
    ] as [(PurchaseOffer, String, String?, String)])
    func aPurchaseWithAnOfferCarriesTheServersSignature(offer: PurchaseOffer, kind: String, offerId: String?, format: String)
        async throws
    {
        let server = ScriptedServer(clock: wall)
        let store = FakeStore(log: EventLog()) { _, _ in ("t1", "jws-t1") }
        let entitled = server.entitled(InMemoryIdentityStore(), store: store)
        let updates = entitled.customerUpdates
        guard case .purchased(let answer) = try await entitled.purchase(productID: "pro.monthly", offer: offer) else {
            Issue.record("not purchased")
            return
        }
        #expect(answer.appUserId == "$anon:1")
        let sign = try #require(server.sent("POST", "/$anon:1/offers/sign").first)
        var expected = ["productId": "pro.monthly", "kind": kind, "format": format]
        expected["offerId"] = offerId
        #expect(sign.body == expected)
        let passed = try #require(store.state.withLock { $0.offers.first } ?? nil)
        #expect(passed.offer == offer)
        #expect(passed.signed.keyId == "KEY1")
        #expect(passed.signed.timestamp == 1_800_000_000_000)
        #expect(store.finishCount("t1") == 1)
        // The stream saw the fetched answer, then the one after the posted transaction.
        var count = 0
        for await _ in updates {
            count += 1
            if count == 2 { break }
        }
        #expect(server.sent("POST", "/$anon:1/transactions").count == 1)
    }

    @Test func anIntroductoryOfferTheServerDoesNotListIsRefusedBeforeTheSheet() async throws {
        let server = ScriptedServer(clock: wall)
        server.state.withLock { $0.offers = #"{"introductory":[],"winBack":[],"promotional":[]}"# }
        let store = FakeStore(log: EventLog()) { _, _ in ("t1", "jws-t1") }
        let entitled = server.entitled(InMemoryIdentityStore(), store: store)
        await #expect(throws: OfferNotEligible(productID: "pro.monthly", offer: .introductory)) {
            try await entitled.purchase(productID: "pro.monthly", offer: .introductory)
        }
        #expect(server.sent("POST", "/offers/sign").isEmpty)
        #expect(store.state.withLock { $0.purchases.isEmpty })
    }

    @Test func customerUpdatesYieldAfterARestoreAndATransactionUpdate() async throws {
        let server = ScriptedServer(clock: wall)
        let store = FakeStore(log: EventLog()) { _, _ in ("t1", "jws-t1") }
        let entitled = server.entitled(InMemoryIdentityStore(), store: store)
        let updates = entitled.customerUpdates
        store.state.withLock { $0.unfinished = [store.transaction(id: "t0", product: "pro.monthly", jws: "jws-t0")] }
        let restored = try await entitled.launch()
        #expect(restored.posted == 1)
        // A renewal arrives through Transaction.updates: delivered, finished, and streamed.
        store.continuation.yield(store.transaction(id: "t2", product: "pro.monthly", jws: "jws-t2"))
        var seen = 0
        for await answer in updates {
            #expect(answer.appUserId == "$anon:1")
            seen += 1
            if seen == 2 { break }
        }
        while store.finishCount("t2") == 0 { await Task.yield() }
        #expect(store.finishCount("t0") == 1)
        #expect(server.sent("POST", "/$anon:1/transactions").map(\.body["signedTransaction"]) == ["jws-t0", "jws-t2"])
    }

    @Test func refreshIgnoresTheHTTPCache() async throws {
        let server = ScriptedServer(clock: wall)
        let entitled = server.entitled(InMemoryIdentityStore())
        _ = try await entitled.refresh()
        _ = try await entitled.refresh()
        let fetches = server.sent("GET", "/$anon:1")
        #expect(fetches.count == 2)
        #expect(fetches.allSatisfy { $0.cachePolicy == .reloadIgnoringLocalCacheData })
    }
}
