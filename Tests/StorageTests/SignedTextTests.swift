import EntitledCrypto
import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// Apple-shaped signed text without a signer (storage never verifies): an `x5c` header of the
/// size of Apple's chain (leaf ~1 KB, WWDR G6 794 B, Root G3 583 B), base64url payloads, 64-byte
/// signatures.
enum AppleShaped {
    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    /// One chain for every JWS, as Apple signs with one.
    static let header: String = {
        let chain = [bytes(1077, seed: 1), bytes(794, seed: 2), bytes(583, seed: 3)].map { "\"" + Base64.encode($0) + "\"" }
        return Base64.urlEncode(Array(#"{"alg":"ES256","x5c":[\#(chain.joined(separator: ","))]}"#.utf8))
    }()

    static func signature(_ seed: Int) -> [UInt8] { (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) } }

    static func jws(payload: String, signature: [UInt8]) -> String {
        header + "." + Base64.urlEncode(Array(payload.utf8)) + "." + Base64.urlEncode(signature)
    }

    /// A fact's JWS: its JSON (what Apple signs is of that size) under the common header.
    static func jws(_ fact: Fact, seed: Int) -> String { jws(payload: testProjector.encode(fact), signature: signature(seed)) }

    /// A V2 notification carrying `transaction` and `renewal`: its facts with their texts, and the
    /// message whose body is `{"signedPayload":"…"}`, as the API stores it.
    static func notification(
        uuid: String, otid: String, token: String?, seed: Int, transactionJWS: String? = nil
    ) -> (message: ReceivedMessage, facts: [SignedFact]) {
        let transaction = Fact.transaction(
            TransactionFact(
                transactionId: "t-\(otid)", originalTransactionId: otid, productId: "com.example.pro", purchaseDate: testNow - day,
                expiresDate: testNow + 30 * day, productType: .autoRenewable, appAccountToken: token, signedDate: testNow - day))
        let renewal = Fact.renewalInfo(
            RenewalInfoFact(originalTransactionId: otid, productId: "com.example.pro", autoRenewStatus: true, signedDate: testNow - day))
        let transactionText = transactionJWS ?? jws(transaction, seed: seed)
        let renewalText = jws(renewal, seed: seed + 1)
        let payload = """
            {"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY","notificationUUID":"\(uuid)","data":{"appAppleId":1234,\
            "bundleId":"com.example","environment":"Production","signedTransactionInfo":"\(transactionText)",\
            "signedRenewalInfo":"\(renewalText)","status":1},"version":"2.0","signedDate":\(testNow - day)}
            """
        let outer = jws(payload: payload, signature: signature(seed + 2))
        let notification = Fact.notification(
            NotificationFact(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", notificationUUID: uuid, signedDate: testNow - day, originalTransactionId: otid,
                transactionId: "t-\(otid)", productId: "com.example.pro"))
        return (
            ReceivedMessage(
                notificationUUID: uuid, source: .appleV2, body: Array(#"{"signedPayload":"\#(outer)"}"#.utf8), receivedAt: testNow,
                notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", bundleId: "com.example"),
            [(notification, outer), (transaction, transactionText), (renewal, renewalText)]
        )
    }
}

extension LedgerStore {
    var signedLedger: any SignedLedger { self as! any SignedLedger }

    /// Every fact's signed text, by row id.
    func signedTexts() async throws -> [Int64: String] {
        var texts: [Int64: String] = [:]
        var after: Int64 = 0
        while true {
            let page = try await signedLedger.signedFacts(after: after, limit: 100)
            guard let last = page.last else { return texts }
            for fact in page { texts[fact.id] = fact.text }
            after = last.id
        }
    }

    /// Every notification's body, by row id.
    func bodies() async throws -> [Int64: [UInt8]] {
        var bodies: [Int64: [UInt8]] = [:]
        for id in 1...max(1, try await count("SELECT COALESCE(MAX(id), 0) FROM notifications")) {
            if let body = try await signedLedger.notificationBody(id: id) { bodies[id] = body }
        }
        return bodies
    }
}

@Suite("Signed text stored once, rebuilt byte for byte")
struct SignedTextTests {
    @Test("a V2 notification's texts come back exactly; the chain is stored once", arguments: Backend.all)
    func roundTrip(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "sam", appAccountToken: nil, projector: testProjector, now: testNow)
            var sent: [String] = []
            var bodies: [[UInt8]] = []
            for index in 0..<3 {
                let (message, facts) = AppleShaped.notification(
                    uuid: "n-\(index)", otid: "o-\(index)", token: customer.appAccountToken, seed: index * 10)
                _ = try await store.ingest(message, facts: facts, claim: nil, projector: testProjector, now: testNow)
                sent += facts.compactMap(\.signed)
                bodies.append(message.body)
            }
            // What the API reads and what `check --reverify` reads: the exact texts.
            #expect(try await store.facts(appUserId: "sam").map(\.signed).sorted() == sent.sorted())
            #expect(try await store.signedTexts().values.sorted() == sent.sorted())
            #expect(try await store.bodies().values.sorted { $0.lexicographicallyPrecedes($1) } == bodies.sorted { $0.lexicographicallyPrecedes($1) })
            // The customer's export has the texts and bodies as received, not their packed form.
            let exportRead = try await (store as! any CustomerDirectory).exportCustomer(appUserId: "sam")
            let export = try #require(exportRead)
            func exported(_ table: String, _ column: String) -> [CustomerExport.Value] {
                (export.tables.first { $0.table == table }?.rows ?? []).compactMap { row in row.first { $0.column == column }?.value }
            }
            #expect(Set(exported("facts", "jws")) == Set(sent.map(CustomerExport.Value.text)), "exported texts differ")
            #expect(
                Set(exported("notifications", "body")) == Set(bodies.map { CustomerExport.Value.text(String(decoding: $0, as: UTF8.self)) }),
                "exported bodies differ")
            // One header for nine JWS; no fact keeps its text whole, no body its notification.
            #expect(try await store.rows("jws_headers") == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws <> '' OR signed_packed IS NULL") == 0)
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE body_packed IS NULL") == 0)
            // What stays per notification is its payloads and signatures, not its chains.
            let stored = try await store.count(
                "SELECT SUM(LENGTH(signed_packed)) FROM facts") + (try await store.count("SELECT SUM(LENGTH(body_packed)) FROM notifications"))
            #expect(stored < 3 * 2_500, "\(stored) bytes of signed text for 3 notifications")
        }
    }

    @Test("a nested JWS under another signature than the stored fact's comes back with its own", arguments: Backend.all)
    func twinSignature(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let first = AppleShaped.notification(uuid: "n-1", otid: "o-1", token: nil, seed: 1)
            _ = try await store.ingest(first.message, facts: first.facts, claim: nil, projector: testProjector, now: testNow)
            // The same signed transaction under other signature bytes: the same fact (a replay),
            // inside a notification of its own.
            let original = try #require(first.facts[1].signed)
            let twin = String(original[..<original.lastIndex(of: ".")!]) + "." + Base64.urlEncode(AppleShaped.signature(99))
            let second = AppleShaped.notification(uuid: "n-2", otid: "o-1", token: nil, seed: 50, transactionJWS: twin)
            let result = try await store.ingest(second.message, facts: second.facts, claim: nil, projector: testProjector, now: testNow)
            // Its transaction and renewal are the first's (same content, other signatures): replays.
            #expect(result.replayedFacts == 2)
            let texts = Set(try await store.signedTexts().values)
            #expect(texts == Set(first.facts.compactMap(\.signed) + [second.facts[0].signed!]), "stored texts differ")
            // The second notification's payload carries the twin, byte for byte.
            #expect(Set(try await store.bodies().values) == [first.message.body, second.message.body])
        }
    }

    /// How a stored text refers to another fact.
    enum Reference: Equatable {
        /// By the kind alone: the message's only fact of that kind, with its own signature.
        case byKind(String)
        /// By kind and key, with the signature (nil: the referenced fact's own).
        case byKey(String, signature: [UInt8]?)
    }

    /// Each stored reference, in order.
    static func references(_ parts: [StoredPart]) -> [Reference] {
        parts.flatMap { part -> [Reference] in
            switch part {
            case .literal: []
            case .jws(_, let payload, _): references(payload)
            case .reference(let kind, _, let signature): [.byKey(kind, signature: signature)]
            case .sibling(let kind): [.byKind(kind)]
            }
        }
    }

    @Test("a reference to the message's own fact is its kind alone; one to a twin stored before keeps key and signature", arguments: Backend.all)
    func referencesWithoutSignatures(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let first = AppleShaped.notification(uuid: "n-1", otid: "o-1", token: nil, seed: 1)
            _ = try await store.ingest(first.message, facts: first.facts, claim: nil, projector: testProjector, now: testNow)
            let original = try #require(first.facts[1].signed)
            let twin = String(original[..<original.lastIndex(of: ".")!]) + "." + Base64.urlEncode(AppleShaped.signature(99))
            let second = AppleShaped.notification(uuid: "n-2", otid: "o-1", token: nil, seed: 50, transactionJWS: twin)
            _ = try await store.ingest(second.message, facts: second.facts, claim: nil, projector: testProjector, now: testNow)
            let stored = try await (store as! any SessionBackedStore).read { session in
                let facts = try session.query(
                    "SELECT signed_packed, payload, payload_packed FROM facts WHERE kind = 'notification' ORDER BY id"
                ).map { Self.references(try SignedTextFormat.decode(try $0.blob(0), context: try FactPayload.texts($0))) }
                let bodies = try session.query("SELECT body_packed FROM notifications ORDER BY id").map {
                    Self.references(try SignedTextFormat.decode(try $0.blob(0), context: .none))
                }
                return (facts, bodies)
            }
            // The first notification stored its transaction and renewal itself.
            #expect(stored.0.first == [.byKind("transaction"), .byKind("renewal")])
            // The second's are twins stored before under other signature bytes: kept as received.
            #expect(
                stored.0.last == [
                    .byKey("transaction", signature: AppleShaped.signature(99)), .byKey("renewal", signature: AppleShaped.signature(51)),
                ])
            #expect(stored.1 == [[.byKind("notification")], [.byKind("notification")]])
            // And every text still comes back exactly.
            let texts = Set(try await store.signedTexts().values)
            #expect(texts == Set(first.facts.compactMap(\.signed) + [second.facts[0].signed!]))
            #expect(Set(try await store.bodies().values) == [first.message.body, second.message.body])
        }
    }

    @Test("a message with two facts of one kind refers to each by its key", arguments: Backend.all)
    func twoOfAKind(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let one = AppleShaped.notification(uuid: "unused", otid: "o-1", token: nil, seed: 1).facts[1]
            let two = AppleShaped.notification(uuid: "unused", otid: "o-2", token: nil, seed: 20).facts[1]
            let body = Array(#"{"signedTransactions":["\#(one.signed!)","\#(two.signed!)"]}"#.utf8)
            let message = ReceivedMessage(notificationUUID: nil, source: .client, body: body, receivedAt: testNow)
            _ = try await store.ingest(message, facts: [one, two], claim: Claim(appUserId: "u"), projector: testProjector, now: testNow)
            let references = try await (store as! any SessionBackedStore).read { session in
                try session.query("SELECT body_packed FROM notifications").map {
                    Self.references(try SignedTextFormat.decode(try $0.blob(0), context: .none))
                }
            }
            #expect(references == [[.byKey("transaction", signature: nil), .byKey("transaction", signature: nil)]])
            #expect(Set(try await store.signedTexts().values) == [one.signed!, two.signed!])
            #expect(Array(try await store.bodies().values) == [body])
        }
    }

    @Test(
        "text that is no canonical JWS is stored as it is",
        arguments: [
            "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2lnBB",  // signature with stray trailing bits: not what it re-encodes to
            "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ==.c2ln",  // padded payload
            "not.a jws.at all", "plain text",
        ])
    func nonCanonical(text: String) async throws {
        try await withStore(.sqliteMemory) { store, _ in
            let fact = Fact.transaction(
                TransactionFact(
                    transactionId: "t", originalTransactionId: "o", productId: "com.example.pro", purchaseDate: testNow,
                    expiresDate: testNow + day, productType: .autoRenewable, signedDate: testNow))
            let body = Array(#"{"signedTransaction":"\#(text)"}"#.utf8)
            let message = ReceivedMessage(notificationUUID: nil, source: .client, body: body, receivedAt: testNow)
            _ = try await store.ingest(message, facts: [(fact, text)], claim: Claim(appUserId: "u"), projector: testProjector, now: testNow)
            #expect(Array(try await store.signedTexts().values) == [text])
            #expect(Array(try await store.bodies().values) == [body])
        }
    }

    /// A message's JWS that share one header (the notification and its nested JWS, signed by the
    /// same chain) give one `JWSHeader`, digested once; another header is a header of its own.
    @Test func aMessagesSharedHeaderIsMadeOnce() {
        let chain = Array("eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUkiXX0".utf8)
        let other = Array("eyJhbGciOiJFUzI1NiJ9".utf8)
        var made: [JWSHeader] = []
        let first = JWSHeader(chain[...], reusing: &made)
        let again = JWSHeader(chain[...], reusing: &made)
        #expect(made.count == 1)
        #expect(again.digest == first.digest && again.text == chain)
        #expect(first.digest == JWSHeader(chain).digest)
        let third = JWSHeader(other[...], reusing: &made)
        #expect(made.count == 2)
        #expect(third.digest == JWSHeader(other).digest && third.text == other)
    }

    /// A fact's text is scanned once: the digest's scan also says where packing splits it.
    @Test(arguments: ["eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln", "not.a-jws!", "{\"v1\":true}", "a..b"])
    func theDigestsScanGivesPackingsSplit(text: String) {
        let bytes = Array(text.utf8)
        let (hex, end) = FactDigest.hexAndSigningInputEnd(text)
        #expect(hex == FactDigest.hex(text))
        #expect(end == bytes.withUnsafeBufferPointer { FactDigest.signingInputEnd($0) })
        let once = SignedTextPacker.split(bytes, signingInputEnd: end)
        let twice = SignedTextPacker.split(bytes)
        #expect(once.map { [Array($0.header), Array($0.payload), Array($0.signature)] } == twice.map { [Array($0.header), Array($0.payload), Array($0.signature)] })
    }
}
