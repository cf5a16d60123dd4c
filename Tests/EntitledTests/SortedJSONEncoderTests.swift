import AppStore
import AppStoreTesting
import Entitlements
import Foundation
import Storage
import Testing

@testable import EntitledServer
@testable import JSONCoding

/// The ledger stores each fact as `JSONEncoder` (`.sortedKeys`) writes it, and a V1 fact's key is
/// the digest of those bytes: `SortedJSONEncoder` must write the very same bytes.
@Suite("Sorted JSON encoder")
struct SortedJSONEncoderTests {
    struct Maker {
        var rng: SplitMix64

        mutating func chance() -> Bool { rng.next() % 2 == 0 }
        mutating func int(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &rng) }

        /// Plain ids mostly; sometimes everything JSON escapes, slashes, unicode, sort-order traps.
        mutating func text() -> String {
            let odd = ["a/b", "q\"u\\o", "\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f}", "é中😀", "", "Z", "pro.monthly", "  ", "\u{2028}"]
            return chance() ? "id\(rng.next() % 10_000)" : odd[Int(rng.next() % UInt64(odd.count))]
        }

        mutating func maybe<T>(_ make: (inout Maker) -> T) -> T? { chance() ? make(&self) : nil }

        mutating func fact() -> Fact {
            switch rng.next() % 7 {
            case 0:
                return .transaction(
                    TransactionFact(
                        transactionId: text(), originalTransactionId: text(), webOrderLineItemId: maybe { $0.text() },
                        productId: text(), subscriptionGroupId: maybe { $0.text() }, purchaseDate: int(0...Int64.max),
                        originalPurchaseDate: maybe { $0.int(-5...5) }, expiresDate: maybe { $0.int(Int64.min...0) },
                        quantity: Int(int(0...100)), productType: ProductType.allCases.randomElement(using: &rng)!,
                        appAccountToken: maybe { $0.text() }, ownership: chance() ? .purchased : .familyShared,
                        signedDate: int(0...2_000_000_000_000), revocationDate: maybe { $0.int(0...9) },
                        revocationReason: maybe { Int($0.int(0...1)) }, revocationType: maybe { RevocationType(rawValue: $0.text()) },
                        isUpgraded: chance(), offerType: maybe { _ in .promotional }, offerDiscountType: maybe { OfferDiscountType(rawValue: $0.text()) },
                        offerIdentifier: maybe { $0.text() }, environment: Environment(rawValue: text()), storefront: maybe { $0.text() },
                        transactionReason: maybe { TransactionReason(rawValue: $0.text()) }, price: maybe { $0.int(-1...99_990) },
                        currency: maybe { $0.text() }))
            case 1:
                return .renewalInfo(
                    RenewalInfoFact(
                        originalTransactionId: text(), productId: text(), autoRenewProductId: maybe { $0.text() },
                        autoRenewStatus: chance(), expirationIntent: maybe { Int($0.int(0...5)) },
                        isInBillingRetryPeriod: maybe { $0.chance() }, gracePeriodExpiresDate: maybe { $0.int(0...9) },
                        priceIncreaseStatus: maybe { Int($0.int(0...1)) }, offerType: maybe { _ in .offerCode },
                        offerIdentifier: maybe { $0.text() }, offerDiscountType: maybe { OfferDiscountType(rawValue: $0.text()) },
                        signedDate: int(0...9), renewalDate: maybe { $0.int(0...9) }, recentSubscriptionStartDate: maybe { $0.int(0...9) },
                        eligibleWinBackOfferIds: chance() ? [] : [text(), text()], environment: Environment(rawValue: text())))
            case 2:
                return .notification(
                    NotificationFact(
                        type: NotificationType(rawValue: text()), subtype: maybe { NotificationSubtype(rawValue: $0.text()) },
                        notificationUUID: text(), signedDate: int(0...9), environment: .sandbox,
                        originalTransactionId: maybe { $0.text() }, transactionId: maybe { $0.text() }, productId: maybe { $0.text() }))
            case 3:
                return .appTransaction(
                    AppTransactionFact(
                        appTransactionId: maybe { $0.text() }, originalPurchaseDate: int(0...9), preorderDate: maybe { $0.int(0...9) },
                        originalApplicationVersion: maybe { $0.text() }, signedDate: int(0...9)))
            case 4:
                return .receiptEntry(
                    ReceiptEntryFact(
                        transactionId: text(), originalTransactionId: text(), webOrderLineItemId: maybe { $0.text() },
                        productId: text(), subscriptionGroupId: maybe { $0.text() }, purchaseDate: int(0...9),
                        originalPurchaseDate: maybe { $0.int(0...9) }, expiresDate: maybe { $0.int(0...9) },
                        cancellationDate: maybe { $0.int(0...9) }, cancellationReason: maybe { Int($0.int(0...1)) },
                        isTrialPeriod: chance(), isInIntroOfferPeriod: chance(), isUpgraded: chance(), ownership: .familyShared,
                        promotionalOfferId: maybe { $0.text() }, offerCodeRefName: maybe { $0.text() }, quantity: 2,
                        appAccountToken: maybe { $0.text() }, receiptDate: int(0...9), environment: .production))
            case 5:
                return .pendingRenewal(
                    PendingRenewalFact(
                        originalTransactionId: text(), productId: text(), autoRenewProductId: maybe { $0.text() },
                        autoRenewStatus: chance(), expirationIntent: maybe { Int($0.int(0...5)) },
                        isInBillingRetryPeriod: maybe { $0.chance() }, gracePeriodExpiresDate: maybe { $0.int(0...9) },
                        priceConsentStatus: maybe { Int($0.int(0...1)) }, priceIncreaseStatus: maybe { Int($0.int(0...1)) },
                        promotionalOfferId: maybe { $0.text() }, offerCodeRefName: maybe { $0.text() }, receiptDate: int(0...9)))
            default:
                return .v1Notification(
                    V1NotificationFact(
                        type: V1NotificationType(rawValue: text()), date: int(0...9), environment: Environment(rawValue: text()),
                        originalTransactionId: maybe { $0.text() }, transactionId: maybe { $0.text() }, productId: maybe { $0.text() },
                        autoRenewStatus: maybe { $0.chance() }))
            }
        }
    }

    @Test("facts of every kind: JSONEncoder's bytes", arguments: [UInt64(1), 2, 3, 4])
    func matchesFoundation(seed: UInt64) async throws {
        var maker = Maker(rng: SplitMix64(seed: seed))
        for round in 0..<500 {
            // Yield now and then: servers of other tests share Swift's pool threads.
            if round % 50 == 0 { await Task.yield() }
            let fact = maker.fact()
            let foundation = try JSONCodec(fastPaths: false).encodeSorted(fact)
            #if os(Linux)
                // swift-foundation sorts keys by their bytes, as the writer does.
                #expect(try SortedJSONEncoder.encode(fact) == foundation, "\(fact)")
            #else
                let ours = try JSONSerialization.jsonObject(with: Data(try SortedJSONEncoder.encode(fact))) as? NSDictionary
                #expect(ours == (try JSONSerialization.jsonObject(with: Data(foundation)) as? NSDictionary))
            #endif
            #expect(try JSONCodec(fastPaths: true).encodeSorted(fact) == foundation)
        }
    }

    /// Doubles of every shape: the edges (zeros, integral values below and beyond 2^53, exponents
    /// both ways, subnormals, the extremes), money-like fractions, and values of random bits.
    static func doubles(seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        var values: [Double] = [
            0, -0.0, 1, -1, 0.85, 0.7, 0.1, 0.3, 2.0 / 3, 100, 1e15, 1e16, 1e17, 1e21, 1e22, 123.456, 1e-5, 1e-6, 1e-7, 2.5e-10,
            9_007_199_254_740_992, 9_007_199_254_740_994, 1.2345678901234567e19, Double(Int64.max), Double(Int64.min),
            .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .ulpOfOne, 1 + .ulpOfOne, .pi, -.pi, 1e300, 1.5e-300,
        ]
        for _ in 0..<2_000 {
            switch rng.next() % 4 {
            case 0: values.append(Double(bitPattern: rng.next()))
            case 1: values.append(Double(Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)))
            case 2: values.append(Double(Int64(rng.next() % 2_000_000) - 1_000_000) / 100)
            default: values.append(Double(sign: rng.next() % 2 == 0 ? .plus : .minus, exponent: Int(rng.next() % 120) - 60,
                                          significand: 1 + Double(rng.next() % 1_000) / 1_000))
            }
        }
        return values.filter(\.isFinite)
    }

    @Test("doubles: JSONEncoder's bytes, alone, in arrays and in maps", arguments: [UInt64(1), 2])
    func doublesMatchFoundation(seed: UInt64) throws {
        struct Holder: Encodable { var value: Double; var values: [Double]; var named: [String: Double]; var optional: Double? }
        let values = Self.doubles(seed: seed)
        for (index, value) in values.enumerated() {
            let holder = Holder(
                value: value, values: [value, -value], named: ["a": value, "b": values[(index + 1) % values.count]],
                optional: index % 2 == 0 ? nil : value)
            let foundation = try JSONCodec(fastPaths: false).encodeSorted(holder)
            #expect(try SortedJSONEncoder.encode(holder) == foundation, "\(value)")
            #expect(try JSONCodec(fastPaths: true).encodeSorted(holder) == foundation)
        }
        // NaN and the infinities: Foundation refuses them, and so does the codec with its fast paths.
        for value in [Double.nan, .infinity, -.infinity] {
            #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(Holder(value: value, values: [], named: [:])) }
            #expect(throws: EncodingError.self) { try JSONCodec(fastPaths: true).encodeSorted(Holder(value: 1, values: [value], named: [:])) }
        }
    }

    /// A stored customer document (a subscriber's, with its groups' fractional proceeds rates) is
    /// the fast writer's own work, not a fallback to Foundation, and Foundation's bytes.
    @Test func aCustomerDocumentIsWrittenByTheFastWriter() throws {
        let facts: [Fact] = (0..<3).map { k in
            .transaction(
                TransactionFact(
                    transactionId: "t\(k)", originalTransactionId: "o", productId: "pro.monthly", purchaseDate: Int64(k) * 2_592_000_000,
                    expiresDate: Int64(k + 1) * 2_592_000_000, productType: .autoRenewable, signedDate: Int64(k) * 2_592_000_000,
                    price: 4_990, currency: "EUR"))
        }
        let policy = Policy(products: ["pro.monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"])])
        var state = evaluate(facts: facts, policy: policy, now: 3_000_000_000)
        state.evaluatedAt = 0
        let document = CustomerDocument(
            customer: CustomerRecord(id: 1, appUserId: "alice", appAccountToken: "token", createdAt: 0), environments: nil, state: state)
        let fast = try SortedJSONEncoder.encode(document)
        #expect(String(decoding: fast, as: UTF8.self).contains("\"proceedsRate\":0.7"))
        #expect(fast == (try document.encoded(codec: JSONCodec(fastPaths: false))))
    }

    /// Customer documents of generated histories (every kind of fact, odd texts, one to twelve
    /// facts, evaluated at several instants, with merged environments or without): the writer's
    /// own bytes, and Foundation's.
    @Test(arguments: [UInt64(5), 6])
    func generatedCustomerDocumentsMatchFoundation(seed: UInt64) throws {
        var written = 0
        for (round, document) in Self.customerDocuments(seed: seed).enumerated() {
            let foundation = try document.encoded(codec: JSONCodec(fastPaths: false))
            let fast = try SortedJSONEncoder.encode(document)
            #expect(fast == foundation, "round \(round)")
            written += fast.count
        }
        #expect(written > 300 * 400)
    }

    /// 300 customer documents of generated histories: every kind of fact, odd texts, one to
    /// twelve facts, products of every type, evaluated at several instants, merged environments
    /// or not, a few with an `evaluatedAt` other than 0.
    static func customerDocuments(seed: UInt64) -> [CustomerDocument] {
        var maker = Maker(rng: SplitMix64(seed: seed))
        let products = ["pro.monthly", "id1", "Z", "a/b", "c.consumable", "n.renewing"]
        let types: [Entitlements.ProductType] = [.autoRenewable, .nonConsumable, .autoRenewable, .nonConsumable, .consumable, .nonRenewing]
        let policy = Policy(
            products: Dictionary(uniqueKeysWithValues: products.enumerated().map { index, id in
                (id, ProductPolicy(type: types[index], entitlements: ["e\(index % 3)", "pro"]))
            }))
        return (0..<300).map { round in
            let facts = (0..<(1 + round % 12)).map { _ in maker.fact() }
            let now = maker.int(0...2_000_000_000_000)
            // The generated facts' environments are mostly odd texts: evaluated in their first's.
            let merged: [Environment]? =
                round % 3 == 0 ? [facts[0].environment] + [Environment.production, .sandbox].filter { $0 != facts[0].environment } : nil
            var state = merged.map { evaluate(facts: facts, policy: policy, now: now, environments: $0) }
                ?? evaluate(facts: facts, policy: policy, now: now, environment: facts[0].environment)
            state.evaluatedAt = round % 5 == 0 ? maker.int(-1_000...1_000) : 0
            return CustomerDocument(
                customer: CustomerRecord(
                    id: 1, appUserId: maker.text(), appAccountToken: maker.text(), createdAt: 0,
                    aliases: round % 2 == 0 ? [] : [maker.text(), "b"]),
                environments: merged, state: state)
        }
    }

    /// Without escaping slashes (the events' JSON fields): `JSONEncoder`'s bytes with
    /// `.withoutEscapingSlashes`, for facts, texts, maps of texts and a citation-shaped value.
    @Test(arguments: [UInt64(7), 8])
    func withoutEscapingSlashesMatchesFoundation(seed: UInt64) throws {
        struct Citation: Encodable { var notificationUUID: String?; var notificationType: String?; var transactionIds: [String] }
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var maker = Maker(rng: SplitMix64(seed: seed))
        for _ in 0..<300 {
            let texts = (0..<Int(maker.int(0...4))).map { _ in maker.text() }
            let details = Dictionary(texts.map { ($0, maker.text()) }, uniquingKeysWith: { $1 })
            let citation = Citation(notificationUUID: maker.maybe { $0.text() }, notificationType: maker.maybe { $0.text() }, transactionIds: texts)
            let fact = maker.fact()
            #expect(try SortedJSONEncoder.encode(texts, escapingSlashes: false) == Array(foundation.encode(texts)))
            #expect(try SortedJSONEncoder.encode(details, escapingSlashes: false) == Array(foundation.encode(details)))
            #expect(try SortedJSONEncoder.encode(citation, escapingSlashes: false) == Array(foundation.encode(citation)))
            #expect(try SortedJSONEncoder.encode(fact, escapingSlashes: false) == Array(foundation.encode(fact)))
            #expect(try JSONCodec(fastPaths: false).encodeSorted(citation, escapingSlashes: false) == Array(foundation.encode(citation)))
        }
    }

    /// `Encodable` lets a value fill the containers it was handed in any order: nested ones after
    /// their siblings, one key's container before another's. The writer places each member by its
    /// key all the same.
    @Test func containersFilledAfterTheyWereHandedOut() throws {
        struct Interleaved: Encodable {
            enum Keys: String, CodingKey { case b, a, list, c, inner }
            enum InnerKeys: String, CodingKey { case y, x }
            func encode(to encoder: any Encoder) throws {
                var top = encoder.container(keyedBy: Keys.self)
                var inner = top.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
                var list = top.nestedUnkeyedContainer(forKey: .list)
                try top.encode("bee", forKey: .b)
                try list.encode(1)
                var deeper = list.nestedContainer(keyedBy: InnerKeys.self)
                try list.encode("two/2")
                try inner.encode(Int64.min, forKey: .y)
                try deeper.encode(true, forKey: .x)
                try top.encode([UInt8(255)], forKey: .a)
                try inner.encodeNil(forKey: .x)
                try list.encode(-0.5)
                try top.encode(Int32.min, forKey: .c)
            }
        }
        let expected = try JSONCodec(fastPaths: false).encodeSorted(Interleaved())
        #expect(String(decoding: expected, as: UTF8.self)
            == #"{"a":[255],"b":"bee","c":-2147483648,"inner":{"x":null,"y":-9223372036854775808},"list":[1,{"x":true},"two\/2",-0.5]}"#)
        #expect(try SortedJSONEncoder.encode(Interleaved()) == expected)
    }

    /// A key written twice, and a super encoder, are Foundation's to decide.
    @Test func repeatedKeysAndSuperEncodersAreLeftToFoundation() {
        enum Keys: String, CodingKey { case a }
        struct Twice: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(1, forKey: .a)
                try container.encode("again", forKey: .a)
            }
        }
        struct Nested: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(1, forKey: .a)
                _ = container.nestedUnkeyedContainer(forKey: .a)
            }
        }
        struct Super: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try 1.encode(to: container.superEncoder(forKey: .a))
            }
        }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(Twice()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(Nested()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(Super()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode([Super()]) }
    }

    /// What Foundation formats by its own rules is refused, so callers fall back to it.
    @Test func refusesWhatFoundationFormatsItself() throws {
        struct WithFloat: Encodable { var rate: Float = 0.85 }
        struct WithDate: Encodable { var at = Date(timeIntervalSince1970: 1) }
        struct WithHugeUnsigned: Encodable { var n = UInt64.max }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(WithFloat()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(WithDate()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(WithHugeUnsigned()) }
        struct Small: Encodable { var a: UInt8 = 7; var b: Int16 = -3; var c: [Int32] = [1, 2]; var d: String? = nil }
        #expect((try? SortedJSONEncoder.encode(Small())) == Array(#"{"a":7,"b":-3,"c":[1,2]}"#.utf8))
        struct Edges: Encodable {
            var values: [Int64] = [0, 9, 10, -1, -10, 99, 100, Int64.max, Int64.min, 1_000_000_007]
            var unsigned: [UInt64] = [0, UInt64(Int64.max)]
            var int: Int = -42
            var optionals: [Int?] = [nil, 3]
        }
        #expect(try SortedJSONEncoder.encode(Edges()) == JSONCodec(fastPaths: false).encodeSorted(Edges()))
    }

    /// An accepted message's stored body (`Ingest.storedBody`) is the codec's sorted writer over one
    /// member: the same bytes `JSONEncoder()` wrote for it, with the fast paths on or off.
    @Test(arguments: [true, false])
    func aStoredBodyIsJSONEncodersBytes(fastPaths: Bool) throws {
        for value in ["eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln", "a/b", "q\"u\\o", "\n\t\u{1}\u{7f}", "é中😀", "", "\u{2028}"] {
            let expected = Array(try JSONEncoder().encode(["signedPayload": value]))
            #expect(Ingest.storedBody("signedPayload", value, codec: JSONCodec(fastPaths: fastPaths)) == expected)
        }
    }
}
