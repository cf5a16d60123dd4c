import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import JSONCoding
import Synchronization
import Testing

/// The verifier's chain cache, concurrency, nested signed fields and the embedded root.
extension VerifierTests {
    @Test func warmVerificationDoesNoX509Work() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        for index in 0..<20 {
            var payload = sampleTransactionPayload()
            payload.transactionId = "\(index)"
            #expect(await verificationCode { try await verifier.verify(try token(payload), as: FlatPayload.self) } == nil)
        }
        #expect(verifier.x509ValidationCount == 1)
        #expect(verifier.chainCache.statistics.hits == 19)
        // Failures after the chain step still use the cache.
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(bundleId: "zzz")), as: FlatPayload.self) }
            == .invalidAppIdentifier)
        #expect(verifier.x509ValidationCount == 1)
    }

    @Test func cachedChainStillChecksTheTime() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try token(), as: FlatPayload.self) } == nil)
        #expect(verifier.x509ValidationCount == 1)
        // Cached, but this payload's signedDate is after the leaf expired.
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(signedDate: 2_200_000_000_000)), as: FlatPayload.self) }
            == .certificateExpired)
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(signedDate: 1_000_000_000_000)), as: FlatPayload.self) }
            == .certificateExpired)
        #expect(verifier.x509ValidationCount == 1)
    }

    @Test func cacheEntriesExpire() async throws {
        let clock = ManualClock(milliseconds: testNowMilliseconds)
        let cache = VerifiedChainCache(timeToLive: 15 * 60 * 1000, capacity: 4)
        let verifier = try makeTestVerifier(ca: ca, clock: clock, cache: cache)
        _ = try await verifier.verify(try token(), as: FlatPayload.self)
        clock.advance(milliseconds: 1000)
        _ = try await verifier.verify(try token(), as: FlatPayload.self)
        #expect(verifier.x509ValidationCount == 1)
        clock.advance(milliseconds: 15 * 60 * 1000)
        _ = try await verifier.verify(try token(), as: FlatPayload.self)
        #expect(verifier.x509ValidationCount == 2)
    }

    @Test func cacheIsKeyedByRootAndBounded() async throws {
        let cache = VerifiedChainCache(capacity: 3)
        let verifier = try makeTestVerifier(ca: ca, cache: cache)
        _ = try await verifier.verify(try token(), as: FlatPayload.self)
        // Another verifier sharing the cache but trusting another root gets no hit from it.
        let other = try TestCertificateAuthority(options: .init(name: "Other"))
        let otherVerifier = try makeTestVerifier(ca: other, roots: [other.rootDER], cache: cache)
        #expect(await verificationCode { try await otherVerifier.verify(try token(), as: FlatPayload.self) } == .chainUntrusted)
        #expect(otherVerifier.x509ValidationCount == 1)
        for _ in 0..<5 {
            let fresh = try TestCertificateAuthority()
            let freshVerifier = try makeTestVerifier(ca: fresh, cache: cache)
            _ = try await freshVerifier.verify(try fresh.signer.sign(sampleTransactionPayload()), as: FlatPayload.self)
        }
        #expect(cache.count <= 3)
    }

    @Test func concurrentVerificationsAgree() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let tokens = try (0..<64).map { index in
            var payload = sampleTransactionPayload()
            payload.transactionId = "\(index)"
            return try token(payload)
        }
        let results = await withTaskGroup(of: String?.self) { group in
            for token in tokens {
                group.addTask { try? await verifier.verify(token, as: FlatPayload.self).transactionId }
            }
            var all: [String?] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(Set(results.compactMap { $0 }).count == 64)
        #expect(verifier.x509ValidationCount <= 2)  // two cores may race on the first, cold lookup
    }

    @Test func nestedSignedFieldsAreVerifiedByAnotherCall() async throws {
        struct Outer: Codable, VerifiablePayload {
            struct Data: Codable { var environment: String; var bundleId: String; var signedTransactionInfo: String }
            var signedDate: Int64
            var data: Data
            var verificationSignedDate: Int64? { signedDate }
            var verificationEnvironment: AppStoreEnvironment? { AppStoreEnvironment(rawValue: data.environment) }
            var verificationBundleId: String? { data.bundleId }
            var verificationAppAppleId: Int64? { nil }
        }
        let inner = try token()
        let outer = try token(Outer(signedDate: testNowMilliseconds, data: .init(environment: "Sandbox", bundleId: "com.example", signedTransactionInfo: inner)))
        let verifier = try makeTestVerifier(ca: ca)
        let notification = try await verifier.verify(outer, as: Outer.self)
        let transaction = try await verifier.verify(notification.data.signedTransactionInfo, as: FlatPayload.self)
        #expect(transaction.transactionId == "1000")
        #expect(verifier.x509ValidationCount == 1)
    }

    @Test func embeddedAppleRootMatchesTheFile() throws {
        let file = try Data(contentsOf: appStorePackageRoot().appendingPathComponent("certs/AppleRootCA-G3.cer"))
        #expect(AppleRootCertificates.appleRootCAG3DER == Array(file))
        #expect(SHA256.fingerprint(AppleRootCertificates.appleRootCAG3DER)
            == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        let root = try X509Certificate(der: AppleRootCertificates.appleRootCAG3DER)
        #expect(root.subject.contains("CN=Apple Root CA - G3"))
        #expect(SignedDataVerifier.Configuration(bundleId: nil, environment: .production).trustedRoots == [Array(file)])
    }

    @Test func jsonReaderHandlesEscapes() {
        let value = StrictJSONReader.parse(Array(#"{"a":"x\/y\u00e9\ud83d\ude00","b":[1,-2.5e3,true,null]}"#.utf8))
        #expect(value?["a"] == .string("x/yé😀"))
        #expect(value?["b"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .null]))
        #expect(StrictJSONReader.parse(Array(#"{"a":"\ud83d"}"#.utf8)) == nil)
        #expect(StrictJSONReader.parse(Array(#"{"a":01}"#.utf8)) == nil)
        #expect(StrictJSONReader.parse(Array(#"{"a":1} x"#.utf8)) == nil)
        #expect(JSONNestingScan.nestingDepth(of: Array(#"{"a":"[[[[","b":[{}]}"#.utf8), limit: 3) == 3)
        #expect(JSONNestingScan.nestingDepth(of: Array(#"[[[["#.utf8), limit: 3) == nil)
        // Escaped quotes do not end strings; escaped backslashes before a quote do not escape it.
        #expect(JSONNestingScan.nestingDepth(of: Array(#"{"a":"x\"[[[[[","b":"\\"}"#.utf8), limit: 3) == 1)
        #expect(JSONNestingScan.nestingDepth(of: Array(#"{"a":"\\\"[[[["}"#.utf8), limit: 3) == 1)
        #expect(JSONNestingScan.nestingDepth(of: Array(#"{"a":"\\",[[[[1]]]]}"#.utf8), limit: 3) == nil)
        #expect(JSONNestingScan.nestingDepth(of: Array(#"{"a":"unterminated [[[["#.utf8), limit: 3) == 1)
    }
}
