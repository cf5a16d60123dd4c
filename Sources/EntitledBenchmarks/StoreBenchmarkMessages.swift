import EntitledCrypto
import Entitlements
import Storage

/// `bench store`'s notifications: shaped and sized like Apple's V2 notifications, so that what the
/// ledger stores per notification is what it stores in production. Storage verifies nothing, so
/// the texts are built, not signed: every JWS carries an `x5c` chain of three certificates of
/// 420, 419 and 390 bytes (the sizes of the minted chain the simulator and `bench api` sign with,
/// and of Apple's test chain: ~8.3 KB of `x5c` per notification, as measured on Apple's;
/// one chain for all, as Apple signs with one), Apple's payload members, a 64-byte signature.
enum AppleShapedNotification {
    static func pseudoRandom(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    /// The protected header every JWS carries.
    static let header: String = {
        let chain = [(420, 1), (419, 2), (390, 3)].map { "\"" + Base64.encode(pseudoRandom($0.0, seed: UInt64($0.1))) + "\"" }
        return Base64.urlEncode(Array(#"{"alg":"ES256","x5c":[\#(chain.joined(separator: ","))]}"#.utf8))
    }()

    static func jws(_ payload: String, seed: UInt64) -> String {
        header + "." + Base64.urlEncode(Array(payload.utf8)) + "." + Base64.urlEncode(pseudoRandom(64, seed: seed))
    }

    /// Notification `index` of run `run` (any number below 10^8): a SUBSCRIBED notification for a
    /// new subscription whose transaction carries `token`; the message (body
    /// `{"signedPayload":"…"}`, as the API stores it) and its three facts with their texts, as the
    /// V2 endpoint hands them to the ledger. Its ids have Apple's shapes: a 16-digit transaction
    /// id, a UUID for the notification (what the ledger indexes is then as long as in production).
    static func make(_ index: Int, run: Int, token: String, now: Int64)
        -> (message: ReceivedMessage, facts: [(fact: Fact, signed: String?)])
    {
        let otid = String(2_000_000_000_000_000 + run % 100_000_000 * 10_000_000 + index)
        let uuid = uuid(pseudoRandom(16, seed: UInt64(run) << 32 | UInt64(index)))
        let expires = now + 2_592_000_000
        let product = "com.example.app.pro.monthly"
        let transactionJSON = """
            {"transactionId":"\(otid)","originalTransactionId":"\(otid)","webOrderLineItemId":"2000000\(100_000_000 + index)",\
            "bundleId":"com.example.app","productId":"\(product)","subscriptionGroupIdentifier":"21345678",\
            "purchaseDate":\(now),"originalPurchaseDate":\(now),"expiresDate":\(expires),"quantity":1,\
            "type":"Auto-Renewable Subscription","appAccountToken":"\(token)","inAppOwnershipType":"PURCHASED",\
            "signedDate":\(now),"environment":"Production","transactionReason":"PURCHASE","storefront":"USA",\
            "storefrontId":"143441","price":9990,"currency":"USD","appTransactionId":"7040000\(100_000_000 + index)"}
            """
        let renewalJSON = """
            {"originalTransactionId":"\(otid)","autoRenewProductId":"\(product)","productId":"\(product)",\
            "autoRenewStatus":1,"renewalPrice":9990,"currency":"USD","signedDate":\(now),"environment":"Production",\
            "recentSubscriptionStartDate":\(now),"renewalDate":\(expires),"appTransactionId":"7040000\(100_000_000 + index)"}
            """
        let seed = UInt64(index) &* 3 &+ 10
        let transactionJWS = jws(transactionJSON, seed: seed)
        let renewalJWS = jws(renewalJSON, seed: seed + 1)
        let notificationJSON = """
            {"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY","notificationUUID":"\(uuid)",\
            "data":{"appAppleId":1234567890,"bundleId":"com.example.app","bundleVersion":"42","environment":"Production",\
            "signedTransactionInfo":"\(transactionJWS)","signedRenewalInfo":"\(renewalJWS)","status":1},\
            "version":"2.0","signedDate":\(now)}
            """
        let signedPayload = jws(notificationJSON, seed: seed + 2)
        let transaction = TransactionFact(
            transactionId: otid, originalTransactionId: otid, productId: product, purchaseDate: now, expiresDate: expires,
            productType: .autoRenewable, appAccountToken: token, signedDate: now)
        let renewal = RenewalInfoFact(originalTransactionId: otid, productId: product, autoRenewStatus: true, signedDate: now)
        let notification = NotificationFact(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", notificationUUID: uuid, signedDate: now, originalTransactionId: otid,
            transactionId: otid, productId: product)
        return (
            ReceivedMessage(
                notificationUUID: uuid, source: .appleV2, body: Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8),
                receivedAt: now, notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", bundleId: "com.example.app"),
            [(.notification(notification), signedPayload), (.transaction(transaction), transactionJWS), (.renewalInfo(renewal), renewalJWS)]
        )
    }

    /// `bytes` as a version 4 UUID's lowercase text.
    static func uuid(_ bytes: [UInt8]) -> String {
        var bytes = bytes
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = Hex.encode(bytes)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex[hex.index(hex.startIndex, offsetBy: range.lowerBound)..<hex.index(hex.startIndex, offsetBy: range.upperBound)])
        }.joined(separator: "-")
    }

    /// Bytes of `x5c` headers in one notification's body (the outer JWS's, and the nested ones',
    /// encoded once more inside its payload).
    static var x5cBytesPerNotification: Int {
        let nested = (header.utf8.count + 2) / 3 * 4
        return header.utf8.count + 2 * nested
    }
}
