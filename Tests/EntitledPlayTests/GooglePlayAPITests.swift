import AppStore
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import HTTPServer
@testable import Storage
import Testing

/// Google Play end to end: the fake Google (Developer API, token endpoint, JWKS, OIDC-signed
/// Pub/Sub pushes) against the real server on SQLite and PostgreSQL.
@Suite(.serialized) struct GooglePlayAPITests {
    static func entitlement(_ reply: Loopback.Reply, _ id: String) -> [String: Any]? {
        (reply.json["entitlements"] as? [String: Any])?[id] as? [String: Any]
    }

    /// A lifecycle delivered to server 0 as it happens, and to server 1 afterwards, shuffled and
    /// with every message twice: the same answer. The app posts the first token to both.
    @Test(arguments: StoredBackend.all)
    func lifecycleInOrderShuffledAndDuplicatedGivesTheSameAnswer(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        let live = try await world.startServer(backend)
        let late = try await world.startServer(backend)
        var sent: [(DeveloperNotification, String)] = []
        var sequence = 0
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                sequence += 1
                let id = "m-\(sequence)"
                #expect(try await world.push(live, notification, messageId: id) == 200)
                sent.append((notification, id))
            }
        }

        let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        let posted = try await world.postPurchase(live, "alice", productId: "premium", token: token)
        #expect(posted.status == 200, "\(posted.text)")
        #expect(Self.entitlement(posted, "pro")?["store"] as? String == "playStore")
        #expect(Self.entitlement(posted, "pro")?["active"] as? Bool == true)
        #expect(try await world.postPurchase(late, "alice", productId: "premium", token: token).status == 200)
        try await deliver()

        world.clock.advance(by: 10 * 86_400_000)
        try world.google.cancel(token)
        try await deliver()
        var reply = try await world.send(live, "GET", "/v1/customers/alice")
        #expect(Self.entitlement(reply, "pro")?["willRenew"] as? Bool == false)
        #expect(Self.entitlement(reply, "pro")?["active"] as? Bool == true)

        world.clock.advance(by: 86_400_000)
        let upgraded = try world.google.upgrade(token, to: "premium.plus")
        try await deliver()
        reply = try await world.send(live, "GET", "/v1/customers/alice")
        #expect(Self.entitlement(reply, "plus")?["active"] as? Bool == true, "\(reply.text)")
        #expect(Self.entitlement(reply, "pro")?["transactionId"] as? String == upgraded)
        #expect(Self.entitlement(reply, "pro")?["originalTransactionId"] as? String == token)
        let subscriptions = reply.json["subscriptions"] as? [[String: Any]] ?? []
        #expect(subscriptions.count == 1)

        world.clock.advance(by: PlayWorld.period * 1000)
        try world.google.renew(upgraded)
        try await deliver()
        world.clock.advance(by: 86_400_000)
        try world.google.failRenewal(upgraded)
        try await deliver()
        reply = try await world.send(live, "GET", "/v1/customers/alice")
        #expect(Self.entitlement(reply, "plus")?["status"] as? String == "gracePeriod", "\(reply.text)")

        // The same messages, shuffled, each twice, to the server that saw none of them.
        var rng = SystemRandomNumberGenerator()
        let replayed = (sent + sent).shuffled(using: &rng)
        for (notification, id) in replayed {
            #expect(try await world.push(late, notification, messageId: id) == 200)
        }
        let facts = try await world.factCount(late)
        for (notification, id) in replayed.prefix(3) {
            #expect(try await world.push(late, notification, messageId: id) == 200)
        }
        #expect(try await world.factCount(late) == facts, "a repeated messageId stores nothing")
        #expect(try await world.answer(live, "alice") == world.answer(late, "alice"))
    }

    /// Pushes that fail authentication are 401 and change nothing.
    @Test(arguments: StoredBackend.all)
    func forgedExpiredWrongAudienceAndWrongAccountPushesChangeNothing(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        let server = try await world.startServer(backend)
        let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        #expect(try await world.postPurchase(server, "bob", productId: "premium", token: token).status == 200)
        _ = world.google.takeNotifications()
        world.clock.advance(by: 86_400_000)
        try world.google.cancel(token)
        let notification = try #require(world.google.takeNotifications().first)
        let before = try await world.answer(server, "bob")
        let facts = try await world.factCount(server)

        // Another key under Google's key id; a token issued two hours ago; the wrong audience; the
        // wrong service account; an unverified email; no token at all.
        let forger = try FakeGoogle(products: [], clock: world.clock, signingKeyId: world.google.signingKeyId)
        let past = VirtualClock(APIHarness.start - 2 * 3_600_000)
        let earlier = try FakeGoogle(products: [], clock: past, signingKey: world.google.signingKey, signingKeyId: world.google.signingKeyId)
        let cases: [(String, FakePubSubPusher, String)] = [
            ("forged", world.pusher(server, google: forger), "GOOGLE_PUSH_BAD_SIGNATURE"),
            ("expired", world.pusher(server, google: earlier), "GOOGLE_PUSH_TOKEN_EXPIRED"),
            ("wrong audience", world.pusher(server, identity: .init(audience: "https://evil.test/", serviceAccountEmail: PlayWorld.pushAccount)),
             "GOOGLE_PUSH_WRONG_AUDIENCE"),
            ("wrong account", world.pusher(server, identity: .init(audience: PlayWorld.audience, serviceAccountEmail: "evil@evil.iam.gserviceaccount.com")),
             "GOOGLE_PUSH_WRONG_ACCOUNT"),
            ("unverified", world.pusher(server, identity: .init(audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount, emailVerified: false)),
             "GOOGLE_PUSH_EMAIL_NOT_VERIFIED"),
        ]
        for (index, (label, pusher, code)) in cases.enumerated() {
            let request = try pusher.request(for: notification, messageId: "bad-\(index)")
            let reply = try await Loopback.send(
                port: world.servers[server].server.port, "POST", "/v1/google/notifications", headers: request.headers, body: request.body ?? [])
            #expect(reply.status == 401, "\(label)")
            #expect(reply.code == code, "\(label): \(reply.text)")
        }
        let bare = try world.pusher(server).request(for: notification, messageId: "bare")
        let unauthenticated = try await Loopback.send(
            port: world.servers[server].server.port, "POST", "/v1/google/notifications", headers: ["Content-Type": "application/json"],
            body: bare.body ?? [])
        #expect(unauthenticated.status == 401 && unauthenticated.code == "GOOGLE_PUSH_MISSING_TOKEN")
        #expect(try await world.factCount(server) == facts)
        #expect(try await world.answer(server, "bob") == before)

        // The genuine push of the same change is then taken, with an id none of the refused ones used up.
        #expect(try await world.push(server, notification, messageId: "bad-0") == 200)
        let after = try await world.send(server, "GET", "/v1/customers/bob")
        #expect(Self.entitlement(after, "pro")?["willRenew"] as? Bool == false)
    }

    /// A one-time product posted by the app, then refunded through a voided-purchase push; an
    /// unknown package or token is refused with the table's codes.
    @Test func oneTimeProductAndRefusals() async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        let server = try await world.startServer(.sqlite)
        let token = try world.google.buyProduct(packageName: PlayWorld.packageName, productId: "lifetime")
        let posted = try await world.postPurchase(server, "carol", productId: "lifetime", token: token)
        #expect(posted.status == 200, "\(posted.text)")
        #expect(Self.entitlement(posted, "extras")?["active"] as? Bool == true)
        _ = world.google.takeNotifications()
        try world.google.refundProduct(token)
        for (index, notification) in world.google.takeNotifications().enumerated() {
            #expect(try await world.push(server, notification, messageId: "v-\(index)") == 200)
        }
        let refunded = try await world.send(server, "GET", "/v1/customers/carol")
        #expect(Self.entitlement(refunded, "extras")?["status"] as? String == "refunded", "\(refunded.text)")

        let unknownToken = try await world.postPurchase(server, "carol", productId: "lifetime", token: "no-such-token")
        #expect(unknownToken.status == 404 && unknownToken.code == "GOOGLE_PURCHASE_NOT_FOUND", "\(unknownToken.text)")
        let unknownPackage = try await world.send(
            server, "POST", "/v1/customers/carol/google/purchases",
            json: #"{"packageName":"com.other.app","productId":"lifetime","purchaseToken":"t"}"#)
        #expect(unknownPackage.status == 404 && unknownPackage.code == "APP_NOT_FOUND")
        let missing = try await world.send(server, "POST", "/v1/customers/carol/google/purchases", json: #"{"packageName":"x"}"#)
        #expect(missing.status == 400 && missing.code == "INVALID_REQUEST")
        let anonymous = try await Loopback.send(
            port: world.servers[server].server.port, "POST", "/v1/customers/carol/google/purchases", body: Array("{}".utf8))
        #expect(anonymous.status == 401)
    }
}
