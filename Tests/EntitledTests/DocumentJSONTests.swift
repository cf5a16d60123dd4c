import Entitlements
import Foundation
import JSONCoding
import Testing

@testable import Storage

/// The stored customer document is written by its own writer (``DocumentJSON``) with the fast
/// paths, and by `JSONEncoder` through the synthesized conformances without them: the two must
/// give the same bytes, or an unchanged answer would look changed and events would differ by path.
@Suite("Customer document writer")
struct DocumentJSONTests {
    static let foundation = JSONCodec(fastPaths: false)

    /// Documents of generated histories (``SortedJSONEncoderTests/customerDocuments(seed:)``):
    /// Foundation's bytes, from the writer itself and through the codec's fast paths.
    @Test(arguments: [UInt64(9), 10, 11])
    func generatedDocumentsMatchFoundation(seed: UInt64) throws {
        var written = 0
        for (round, document) in SortedJSONEncoderTests.customerDocuments(seed: seed).enumerated() {
            let expected = try document.encoded(codec: Self.foundation)
            let direct = try #require(DocumentJSON.encode(document), "round \(round)")
            #expect(direct == expected, "round \(round)")
            #expect(try document.encoded(codec: JSONCodec()) == expected)
            written += direct.count
        }
        #expect(written > 300 * 400)
    }

    /// A document with every member of every type present, each text one that JSON escapes or
    /// that sorts oddly, and integers at their edges: Foundation's bytes. The check before it
    /// fails when a type gains a member this document leaves empty, so a new member cannot slip
    /// past the writer unnoticed.
    @Test(arguments: ["plain", "a/b \"q\" \\ \n\t\u{1} é中😀 \u{2028}", ""])
    func everyMemberPresentMatchesFoundation(text: String) throws {
        let document = Self.full(text: text)
        #expect(Self.emptyMembers(of: document) == [])
        let expected = try document.encoded(codec: Self.foundation)
        #expect(DocumentJSON.encode(document) == expected)
        #expect(try document.encoded(codec: JSONCodec()) == expected)
    }

    /// A rate `JSONEncoder` refuses is left to it: the writer declines and the plain path throws.
    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func aNonFiniteRateIsFoundationsError(rate: Double) {
        var document = Self.full(text: "x")
        document.state.subscriptionGroups[0].proceedsRate = rate
        #expect(DocumentJSON.encode(document) == nil)
        #expect(throws: EncodingError.self) { try document.encoded(codec: JSONCodec()) }
        #expect(throws: EncodingError.self) { try document.encoded(codec: Self.foundation) }
    }

    @Test(arguments: [Int64.min, Int64.min + 1, -1_000_000_007, -10, -1, 0, 1, 9, 10, 99, 100, 1_700_000_000_000, Int64.max])
    func integersAsFoundationWritesThem(value: Int64) throws {
        var stream = JSONStream(capacity: 32)
        stream.beginArray()
        stream.int(value)
        stream.int(value)
        stream.endArray()
        #expect(stream.bytes == Array(try JSONEncoder().encode([value, value])))
    }

    /// Every member set: optionals present, arrays of two, each text `text` with a suffix.
    static func full(text: String) -> CustomerDocument {
        func grant(_ suffix: String, store: PurchaseStore) -> Grant {
            Grant(
                status: .gracePeriod, productId: text + "p" + suffix, productType: .autoRenewable, transactionId: text + "t" + suffix,
                originalTransactionId: text + "o" + suffix, ownership: .familyShared, purchaseDate: Int64.min,
                originalPurchaseDate: -1, expiresAt: Int64.max, gracePeriodExpiresAt: 0, willRenew: false, renewsTo: text + "r",
                periodType: .retentionOffer, billingIssueDetectedAt: 1, unsubscribeDetectedAt: 1_700_000_000_000,
                priceIncrease: .pending, environment: Environment(rawValue: text + "env"), subscriptionGroup: text + "g", store: store)
        }
        var entitlement = EntitlementState(id: text + "e", grant: grant("1", store: .playStore))
        entitlement.grantId = text + "grant"
        var other = EntitlementState(id: "Z", grant: grant("2", store: .appStore))
        other.grantId = "g/2"
        let references = [OfferReference(productId: text + "p", offerId: "o/1"), OfferReference(productId: "Z", offerId: text)]
        let state = CustomerState(
            environment: .sandbox, evaluatedAt: 0, customerClass: .inactive,
            entitlements: [entitlement, other],
            subscriptionGroups: [
                SubscriptionGroupState(
                    id: text + "g", customerClass: .active, current: grant("3", store: .appStore), pendingChange: .downgrade,
                    introOfferEligible: true, promotionalOfferEligible: false, winBackOfferIds: [text, "w"], paidServiceDays: 61,
                    proceedsRate: 0.85),
                SubscriptionGroupState(
                    id: "a", customerClass: .new, current: grant("4", store: .playStore), pendingChange: .crossgrade,
                    introOfferEligible: false, promotionalOfferEligible: true, winBackOfferIds: ["x", text], paidServiceDays: 0,
                    proceedsRate: 1e-7),
            ],
            nonConsumables: [
                NonConsumableState(productId: text + "nc", owned: true, grant: grant("5", store: .appStore)),
                NonConsumableState(productId: "nc2", owned: false, grant: grant("6", store: .playStore)),
            ],
            nonRenewingSubscriptions: [
                NonRenewingState(id: text + "nr", active: true, expiresAt: 5, transactionIds: [text, "t"], grant: grant("7", store: .appStore)),
                NonRenewingState(id: "nr2", active: false, expiresAt: -5, transactionIds: ["u", text], grant: grant("8", store: .appStore)),
            ],
            consumables: [
                ConsumableBalance(
                    productId: text + "c", credited: 7, debited: 2, transactionIds: [text, "c1"], refundedTransactionIds: ["c2", text],
                    spent: 1, spendKeys: [text, "k"]),
                ConsumableBalance(
                    productId: "c", credited: 0, debited: 3, transactionIds: ["c3", "c4"], refundedTransactionIds: ["c5", "c6"], spent: 4,
                    spendKeys: ["k2", "k3"]),
            ],
            preorder: PreorderState(isPreordered: true, preorderDate: 12, appOriginalPurchaseDate: -12),
            proceeds: [
                ProceedsEstimate(transactionId: text + "t", productId: text + "p", rate: 0.7, refunded: false, price: 4_990, currency: text),
                ProceedsEstimate(transactionId: "t2", productId: "p2", rate: 0.85, refunded: true, price: Int64.max, currency: "EUR"),
            ],
            restoreBehavior: .keep, nextStatusChangeAt: 1_700_000_000_001,
            offers: EligibleOffers(introductory: [text, "i"], winBack: references, promotional: references.reversed()),
            storefront: StorefrontState(storefront: text + "USA", storefrontId: "143441", transactionId: text + "t"))
        return CustomerDocument(
            customer: CustomerRecord(id: 1, appUserId: text + "u", appAccountToken: text + "a", createdAt: 0, aliases: [text, "b/c"]),
            environments: [.sandbox, Environment(rawValue: text)], state: state)
    }

    /// The paths of every nil optional and empty array in `value`, found by reflection.
    static func emptyMembers(of value: Any, path: String = "") -> [String] {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let child = mirror.children.first else { return [path] }
            return emptyMembers(of: child.value, path: path)
        }
        if mirror.displayStyle == .collection, mirror.children.isEmpty { return [path] }
        return mirror.children.flatMap { child in emptyMembers(of: child.value, path: path + "." + (child.label ?? "[]")) }
    }
}
