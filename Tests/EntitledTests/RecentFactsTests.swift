import Entitlements
import Testing

@testable import EntitledServer

@Suite("Recently ingested facts")
struct RecentFactsTests {
    static func fact(_ n: Int) -> Fact {
        .transaction(
            TransactionFact(
                transactionId: "t\(n)", originalTransactionId: "o\(n)", productId: "pro.monthly", purchaseDate: 0,
                expiresDate: 1000, productType: .autoRenewable, signedDate: 0, environment: .production))
    }

    @Test("a remembered fact is taken once; the oldest go first when full")
    func firstInFirstOut() {
        let recent = RecentFacts(capacity: 2)
        recent.remember(Self.fact(1), as: "one")
        recent.remember(Self.fact(2), as: "two")
        #expect(recent.take("one") == Self.fact(1))
        #expect(recent.take("one") == nil)
        recent.remember(Self.fact(3), as: "three")  // evicts "one"'s slot (already taken)
        recent.remember(Self.fact(4), as: "four")  // evicts "two"
        #expect(recent.take("two") == nil)
        #expect(recent.take("three") == Self.fact(3))
        #expect(recent.take("four") == Self.fact(4))
    }

    @Test("the rendered-body marker search finds the first occurrence, or none", arguments: [
        ("abcabc", "bc", 1), ("abc", "abcd", nil), ("aaab", "aab", 1), ("xyz", "z", 2), ("xyz", "q", nil),
    ] as [(String, String, Int?)])
    func markerSearch(haystack: String, needle: String, expected: Int?) {
        #expect(RenderedCustomer.offset(of: Array(needle.utf8), in: Array(haystack.utf8)) == expected)
    }
}
