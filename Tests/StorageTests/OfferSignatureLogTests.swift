import Foundation
import Testing

@testable import Storage

/// The offer-signature log (`offer_signatures`) on every backend.
@Suite struct OfferSignatureLogTests {
    @Test("signatures are kept per customer, newest first, bounded by the limit", arguments: Backend.all)
    func logKeepsEachSignature(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let log = store
            let first = OfferSignatureRecord(
                appUserId: "alice", bundleId: "com.example.app", productId: "pro.monthly", offerId: "half", kind: "promotional",
                format: "v1", nonce: "a1", signedAt: 1000)
            var second = first
            second.offerId = nil
            second.kind = "introductoryEligibility"
            second.format = "jws"
            second.nonce = "a2"
            second.signedAt = 2000
            var other = first
            other.appUserId = "bob"
            for record in [first, other, second] { try await log.recordOfferSignature(record) }
            #expect(try await log.offerSignatures(appUserId: "alice", limit: 10) == [second, first])
            #expect(try await log.offerSignatures(appUserId: "alice", limit: 1) == [second])
            #expect(try await log.offerSignatures(appUserId: "bob", limit: 10) == [other])
            #expect(try await log.offerSignatures(appUserId: "carol", limit: 10).isEmpty)
        }
    }
}
