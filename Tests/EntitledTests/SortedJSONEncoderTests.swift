import AppStore
import AppStoreTesting
import Entitlements
import Foundation
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

    /// What Foundation formats by its own rules is refused, so callers fall back to it.
    @Test func refusesWhatFoundationFormatsItself() {
        struct WithDouble: Encodable { var rate = 0.85 }
        struct WithDate: Encodable { var at = Date(timeIntervalSince1970: 1) }
        struct WithHugeUnsigned: Encodable { var n = UInt64.max }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(WithDouble()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(WithDate()) }
        #expect(throws: SortedJSONEncoder.Unsupported.self) { try SortedJSONEncoder.encode(WithHugeUnsigned()) }
        struct Small: Encodable { var a: UInt8 = 7; var b: Int16 = -3; var c: [Int32] = [1, 2]; var d: String? = nil }
        #expect((try? SortedJSONEncoder.encode(Small())) == Array(#"{"a":7,"b":-3,"c":[1,2]}"#.utf8))
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
