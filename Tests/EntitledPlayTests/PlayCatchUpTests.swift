import AppStore
import EntitledConfig
@testable import EntitledServer
@testable import EntitledTestSupport
import Foundation
import GooglePlay
import GooglePlaySimulator
import Storage
import Testing

/// The Play catch-ups against the fake Google, on SQLite and PostgreSQL: `entitled reconcile`'s
/// pass over stored tokens stores what the lost notifications would have, once; `entitled
/// import` takes Play purchase tokens.
@Suite(.serialized) struct PlayCatchUpTests {
    typealias Served = PlayAcknowledgementTests.Served

    static func report(tokens: Int, final: Int = 0, changed: Int = 0, unchanged: Int = 0, failed: Int = 0) -> (Int, Int, Int, Int, Int) {
        (tokens, final, changed, unchanged, failed)
    }

    static func counts(_ report: PlayCatchUpReport) -> (Int, Int, Int, Int, Int) {
        (report.tokens, report.final, report.changed, report.unchanged, report.failed)
    }

    @Test(arguments: StoredBackend.all)
    func catchUpStoresWhatLostNotificationsWouldHave(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let catchUp = try #require(served.assembled.playCatchUp(packageName: PlayWorld.packageName))
        let premium = try await served.postNewSubscription(world)
        let plus = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium.plus")
        #expect(try await served.post("premium.plus", plus).status == 200)
        // Nothing changed at Google yet: nothing to store.
        #expect(Self.counts(try await catchUp.run()) == Self.report(tokens: 2, unchanged: 2))

        world.clock.advance(by: 86_400_000)
        try world.google.cancel(premium)
        try world.google.expire(plus)
        _ = world.google.takeNotifications()
        var answer = try await PlayVoidedPollTests.answer(served)
        #expect(GooglePlayAPITests.entitlement(answer, "plus")?["active"] as? Bool == true)
        #expect(Self.counts(try await catchUp.run()) == Self.report(tokens: 2, changed: 2))
        answer = try await PlayVoidedPollTests.answer(served)
        #expect(GooglePlayAPITests.entitlement(answer, "plus")?["active"] as? Bool == false, "\(answer.text)")
        #expect(GooglePlayAPITests.entitlement(answer, "pro")?["willRenew"] as? Bool == false, "\(answer.text)")

        // Again: the expired token is not asked about, the other is unchanged; nothing is stored.
        let facts = try await PlayVoidedPollTests.factCount(served.store)
        #expect(Self.counts(try await catchUp.run()) == Self.report(tokens: 2, final: 1, unchanged: 1))
        #expect(try await PlayVoidedPollTests.factCount(served.store) == facts)

        // Google failing past the client's retries fails that token, not the pass.
        world.google.failNextCalls(status: 503, count: 5)
        let failing = try await catchUp.run()
        #expect(Self.counts(failing) == Self.report(tokens: 2, final: 1, failed: 1))
        #expect(failing.failures.count == 1 && failing.failures[0].contains("GOOGLE_"), "\(failing.failures)")
    }

    @Test(arguments: StoredBackend.all)
    func importTakesPlayPurchaseTokens(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let importer = try #require(served.assembled.customerImport(bundleId: PlayWorld.packageName))
        let subscription = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        let product = try world.google.buyProduct(packageName: PlayWorld.packageName, productId: "lifetime")
        let input = """
            carol,premium,\(subscription)
            {"appUserId": "dave", "productId": "lifetime", "purchaseToken": "\(product)"}
            erin,premium,no-such-token
            frank,2000000000000001
            """
        let (lines, unreadable) = CustomerImport.parse(Array(input.utf8))
        #expect(unreadable.isEmpty)
        let report = await importer.run(lines)
        #expect(report.imported == 2 && report.transactions == 2 && report.failed == 2, "\(report) \(report.failures)")
        #expect(report.failures.contains { $0.hasPrefix("line 3: GOOGLE_PURCHASE_NOT_FOUND") }, "\(report.failures)")
        #expect(report.failures.contains { $0.hasPrefix("line 4:") && $0.contains("is a Google Play app") }, "\(report.failures)")
        let carol = try await PlayVoidedPollTests.answer(served, "carol")
        #expect(GooglePlayAPITests.entitlement(carol, "pro")?["active"] as? Bool == true, "\(carol.text)")
        #expect(GooglePlayAPITests.entitlement(carol, "pro")?["store"] as? String == "playStore")
        let dave = try await PlayVoidedPollTests.answer(served, "dave")
        #expect(GooglePlayAPITests.entitlement(dave, "extras")?["active"] as? Bool == true, "\(dave.text)")

        // Imported again a minute later: the same answers.
        world.clock.advance(by: 60_000)
        #expect(await importer.run(Array(lines.prefix(2))).imported == 2)
        #expect(try await PlayVoidedPollTests.answer(served, "carol").json["entitlements"] as? NSDictionary
            == carol.json["entitlements"] as? NSDictionary)
    }

    /// `entitled reconcile`'s routing lives in the server: a window for a Play app, or an app of
    /// neither store, is refused before anything is opened.
    @Test func catchUpRoutingRefusesWhatNoStoreCanDo() async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        for (app, since, expected) in [
            (PlayWorld.packageName, Int64?.some(1), "--since and --until"), ("com.other", nil, "no app com.other"),
        ] {
            await #expect {
                _ = try await runCatchUp(configuration: world.configuration, app: app, since: since, until: nil)
            } throws: { error in
                guard case StartupError.configuration(let message) = error else { return false }
                return message.contains(expected)
            }
        }
    }

    @Test func importLinesOfBothStoresParse() {
        let token = "sub.1.AO-J1Oz" + String(repeating: "x", count: 300)
        let (lines, failures) = CustomerImport.parse(Array("""
            u1,1000000000000001
            u2,premium,\(token)
            {"appUserId": "u3", "productId": "coins", "purchaseToken": "tok.3"}
            {"appUserId": "u4", "transactionId": "1000000000000004"}
            u5,premium,tok,extra
            u6,premium,
            {"appUserId": "u7", "purchaseToken": "tok.7"}
            """.utf8))
        #expect(lines.map(\.appUserId) == ["u1", "u2", "u3", "u4"])
        #expect(lines.map(\.productId) == [nil, "premium", "coins", nil])
        #expect(lines[1].transactionId == token)
        #expect(failures.count == 3 && failures[0].hasPrefix("line 5:"), "\(failures)")
    }
}
