import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import JSONCoding
import Synchronization
import Testing

/// Runs `body` and returns the verification error code it threw (nil if it succeeded).
/// Setup failures (minting, signing) are not verification errors and show up as `SETUP_FAILED`.
func verificationCode<T>(_ body: () async throws -> T) async -> VerificationError.Code? {
    do {
        _ = try await body()
        return nil
    } catch let error as VerificationError {
        return error.code
    } catch {
        Issue.record("unexpected error \(error)")
        return VerificationError.Code(rawValue: "SETUP_FAILED")
    }
}

/// A revocation checker that answers what it is told and counts calls.
final class FakeRevocationChecker: RevocationChecker {
    let answer: VerificationError?
    let calls = Atomic<Int>(0)
    init(answer: VerificationError?) { self.answer = answer }
    func check(_ certificate: X509Certificate, issuer: X509Certificate, trustedRoots: [X509Certificate], at time: Int64)
        async throws(VerificationError)
    {
        calls.add(1, ordering: .relaxed)
        if let answer { throw answer }
    }
}

/// One CA for the whole suite: minting is cheap, but sharing keeps the tests focused.
let sharedCA: TestCertificateAuthority = try! TestCertificateAuthority()

@Suite("SignedDataVerifier")
struct VerifierTests {
    let ca = sharedCA

    func token(_ payload: some Encodable = sampleTransactionPayload()) throws -> String { try ca.signer.sign(payload) }

    @Test func validTokenVerifies() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let verified = try await verifier.verifyPayload(try token(), as: FlatPayload.self)
        #expect(verified.value.bundleId == "com.example")
        #expect(verified.value.transactionId == "1000")
        #expect(verified.signatureChecked)
        #expect(String(decoding: verified.payloadJSON, as: UTF8.self).contains("\"transactionId\":\"1000\""))
    }

    @Test func synchronousVerificationMatchesAsync() throws {
        let verifier = try makeTestVerifier(ca: ca)
        #expect(try verifier.verifySynchronously(try token(), as: FlatPayload.self).value.transactionId == "1000")
        #expect(throws: VerificationError(.invalidEnvironment)) {
            try verifier.verifySynchronously(try token(sampleTransactionPayload(environment: "Production")), as: FlatPayload.self)
        }
    }

    // MARK: every error code from a crafted input

    @Test func everyErrorCodeHasACraftedInput() async throws {
        var seen: Set<VerificationError.Code> = []
        func record(_ expected: VerificationError.Code, _ got: VerificationError.Code?, _ comment: Comment) {
            #expect(got == expected, comment)
            if got == expected { seen.insert(expected) }
        }
        let verifier = try makeTestVerifier(ca: ca)
        let good = try token()
        let parts = good.split(separator: ".").map(String.init)

        record(.invalidJWTFormat, await verificationCode { try await verifier.verify("a.b.c.d", as: FlatPayload.self) }, "four parts")
        record(.invalidAlgorithm, await verificationCode {
            var signer = ca.signer
            signer.algorithm = "none"
            return try await verifier.verify(try! signer.sign(sampleTransactionPayload()), as: FlatPayload.self)
        }, "alg none")
        record(.invalidChainLength, await verificationCode {
            var signer = ca.signer
            signer.certificateChain = [ca.leaf.derBytes, ca.intermediate.derBytes]
            return try await verifier.verify(try! signer.sign(sampleTransactionPayload()), as: FlatPayload.self)
        }, "two certificates")
        record(.invalidCertificate, await verificationCode {
            var signer = ca.signer
            signer.certificateChain = [Array("abc".utf8), ca.intermediate.derBytes, ca.root.derBytes]
            return try await verifier.verify(try! signer.sign(sampleTransactionPayload()), as: FlatPayload.self)
        }, "leaf is abc")
        record(.chainUntrusted, await verificationCode {
            let other = try! TestCertificateAuthority(options: .init(name: "Other"))
            return try await makeVerifierOrCrash(roots: [other.rootDER]).verify(good, as: FlatPayload.self)
        }, "other root")
        record(.certificateExpired, await verificationCode {
            try await verifier.verify(try! token(sampleTransactionPayload(signedDate: 2_280_946_846_000)), as: FlatPayload.self)
        }, "signedDate after expiry")
        record(.missingAppleOID, await verificationCode {
            let noOID = try! TestCertificateAuthority(options: .init(leafHasAppleOID: false))
            return try await makeVerifierOrCrash(roots: [noOID.rootDER]).verify(try! noOID.signer.sign(sampleTransactionPayload()), as: FlatPayload.self)
        }, "leaf without OID")
        record(.certificateRevoked, await verificationCode {
            let verifier = try makeTestVerifier(
                ca: ca, mode: .online, revocationChecker: FakeRevocationChecker(answer: VerificationError(.certificateRevoked)))
            return try await verifier.verify(good, as: FlatPayload.self)
        }, "revoked")
        record(.invalidSignature, await verificationCode {
            var signature = Array(Base64.urlDecode(parts[2])!)
            signature[5] ^= 0x40
            return try await verifier.verify(parts[0] + "." + parts[1] + "." + Base64.urlEncode(signature), as: FlatPayload.self)
        }, "flipped signature bit")
        record(.invalidAppIdentifier, await verificationCode {
            try await verifier.verify(try! token(sampleTransactionPayload(bundleId: "com.example.other")), as: FlatPayload.self)
        }, "other bundle")
        record(.invalidEnvironment, await verificationCode {
            try await verifier.verify(try! token(sampleTransactionPayload(environment: "Production")), as: FlatPayload.self)
        }, "production payload, sandbox app")
        record(.malformedPayload, await verificationCode {
            try await verifier.verify(try! ca.signer.sign(payloadJSON: Array(#"{"signedDate":"yesterday"}"#.utf8)), as: FlatPayload.self)
        }, "wrong type")
        record(.retryableVerificationFailure, await verificationCode {
            let verifier = try makeTestVerifier(
                ca: ca, mode: .online,
                revocationChecker: FakeRevocationChecker(answer: VerificationError(.retryableVerificationFailure)))
            return try await verifier.verify(good, as: FlatPayload.self)
        }, "OCSP unreachable")
        // The receipt codes come from the receipt verifier.
        let receiptVerifier = try ReceiptVerifier(
            configuration: .init(trustedRoots: [ca.rootDER], bundleId: "com.example", environments: [.production]))
        func receiptCode(_ text: String) -> VerificationError.Code? {
            do { _ = try receiptVerifier.verify(base64: text, now: 0) } catch { return error.code }
            return nil
        }
        let created: Int64 = 1_761_962_975_000
        record(.invalidReceipt, receiptCode("not a receipt"), "not base64")
        record(.receiptSignatureInvalid, receiptCode(
            try TestReceipt(bundleId: "com.example", creationDate: created).signed(by: try TestCertificateAuthority(options: .init(name: "Other")))),
            "receipt from another root")
        record(.receiptWrongBundle, receiptCode(try TestReceipt(bundleId: "com.example.other", creationDate: created).signed(by: ca)),
            "receipt for another app")
        let records = (0...AppReceipt.maxInAppPurchases).map {
            TestReceipt.Purchase(productId: "coins", transactionId: String($0), purchaseDate: created - 1000)
        }
        record(.receiptTooLarge, receiptCode(try TestReceipt(bundleId: "com.example", creationDate: created, purchases: records).signed(by: ca)),
            "receipt with too many in-app records")
        #expect(seen == Set(VerificationError.Code.all))
        #expect(VerificationError(.retryableVerificationFailure).isRetryable)
        #expect(!VerificationError(.invalidSignature).isRetryable)
    }

    func makeVerifierOrCrash(roots: [[UInt8]]) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(trustedRoots: roots, bundleId: "com.example", environment: .sandbox),
            clock: FixedClock(milliseconds: testNowMilliseconds))
    }

    // MARK: format

    @Test(arguments: ["", ".", "..", "a.b.c", "a.b.c.d", "abc", "e30.e30", "e30.e30.e30.e30", "e30..", ".e30.", "!!!.e30.AA"])
    func malformedTokensAreFormatErrors(input: String) async throws {
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(input, as: FlatPayload.self) } == .invalidJWTFormat)
    }

    @Test func headerMustBeAnObjectWithX5C() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let payload = Base64.urlEncode(Array(#"{"environment":"Sandbox"}"#.utf8))
        for header in [#"[1]"#, #""x""#, #"{"alg":"ES256","#, #"{"alg":"ES256","alg":"none"}"#] {
            let token = Base64.urlEncode(Array(header.utf8)) + "." + payload + "." + Base64.urlEncode([UInt8](repeating: 1, count: 64))
            #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == .invalidJWTFormat, "\(header)")
        }
        var signer = ca.signer
        signer.certificateChain = nil
        signer.extraHeaderMembers = [("x5cwrong", "[]")]
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == .invalidJWTFormat)
        signer.extraHeaderMembers = []
        signer.certificateChain = [ca.leaf.derBytes]
        // x5c of the wrong type
        let bad = Base64.urlEncode(Array(#"{"alg":"ES256","x5c":"abc"}"#.utf8)) + "." + payload + ".AA"
        #expect(await verificationCode { try await verifier.verify(bad, as: FlatPayload.self) } == .invalidJWTFormat)
    }

    @Test(arguments: ["none", "HS256", "RS256", "ES384", "PS256", "es256", ""])
    func onlyES256IsAccepted(alg: String) async throws {
        var signer = ca.signer
        signer.algorithm = alg
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == .invalidAlgorithm)
    }

    @Test func missingAlgIsRejected() async throws {
        let chain = ca.signer.certificateChain!.map { "\"\(Base64.encode($0))\"" }.joined(separator: ",")
        let header = Base64.urlEncode(Array("{\"x5c\":[\(chain)]}".utf8))
        let payload = Base64.urlEncode(Array(#"{"environment":"Sandbox","bundleId":"com.example"}"#.utf8))
        let signature = try ca.leafKey.es256Signature(for: Array((header + "." + payload).utf8))
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(header + "." + payload + "." + Base64.urlEncode(signature), as: FlatPayload.self) }
            == .invalidAlgorithm)
    }

    @Test func oneMegabyteOfGarbageFailsFast() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let garbage = String(repeating: "AAAA.", count: 200_000)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await verificationCode { try await verifier.verify(garbage, as: FlatPayload.self) } == .invalidJWTFormat)
        let brackets = String(repeating: "[", count: 1 << 20)
        #expect(await verificationCode { try await verifier.verify(brackets, as: FlatPayload.self) } == .invalidJWTFormat)
        #expect(clock.now - start < .seconds(1))
    }

    @Test func deeplyNestedPayloadIsMalformed() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let nested = String(repeating: "{\"a\":", count: 40) + "1" + String(repeating: "}", count: 40)
        let token = try ca.signer.sign(payloadJSON: Array(nested.utf8))
        #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == .malformedPayload)
        let arrays = "{\"a\":" + String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000) + "}"
        #expect(await verificationCode { try await verifier.verify(try ca.signer.sign(payloadJSON: Array(arrays.utf8)), as: FlatPayload.self) }
            == .malformedPayload)
        // Within the limit it is fine (and extra keys are ignored).
        let shallow = "{\"environment\":\"Sandbox\",\"bundleId\":\"com.example\",\"x\":" + String(repeating: "[", count: 20)
            + String(repeating: "]", count: 20) + "}"
        #expect(await verificationCode { try await verifier.verify(try ca.signer.sign(payloadJSON: Array(shallow.utf8)), as: FlatPayload.self) } == nil)
    }

    @Test func payloadThatIsNotJSONIsMalformedOnlyIfSigned() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let signed = try ca.signer.sign(payloadJSON: Array("{not json".utf8))
        #expect(await verificationCode { try await verifier.verify(signed, as: FlatPayload.self) } == .malformedPayload)
        // The same garbage with a forged signature is reported as a signature failure.
        let parts = signed.split(separator: ".")
        let forged = parts[0] + "." + parts[1] + "." + Base64.urlEncode(try P256PrivateKey().es256Signature(for: [1]))
        #expect(await verificationCode { try await verifier.verify(String(forged), as: FlatPayload.self) } == .invalidSignature)
        // Signed by an untrusted chain: the chain is what is wrong.
        let attacker = try TestCertificateAuthority(options: .init(name: "Attacker"))
        let untrusted = try attacker.signer.sign(payloadJSON: Array(#"{"signedDate":"x"}"#.utf8))
        #expect(await verificationCode { try await verifier.verify(untrusted, as: FlatPayload.self) } == .chainUntrusted)
    }

    // MARK: tampering

    @Test func truncatedTokensNeverVerify() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let good = try token()
        let utf8 = Array(good.utf8)
        for length in stride(from: 0, to: utf8.count, by: 7) {
            let truncated = String(decoding: utf8.prefix(length), as: UTF8.self)
            #expect(await verificationCode { try await verifier.verify(truncated, as: FlatPayload.self) } != nil, "length \(length)")
        }
        #expect(await verificationCode { try await verifier.verify(String(good.dropLast()), as: FlatPayload.self) } != nil)
    }

    @Test func bitFlippedTokensNeverVerify() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let good = try token()
        let utf8 = Array(good.utf8)
        var codes: [VerificationError.Code: Int] = [:]
        for index in stride(from: 0, to: utf8.count, by: 5) {
            for bit in [0, 3, 5] {
                var flipped = utf8
                flipped[index] ^= UInt8(1 << bit)
                let result = await verificationCode { try await verifier.verify(String(decoding: flipped, as: UTF8.self), as: FlatPayload.self) }
                #expect(result != nil, "byte \(index) bit \(bit)")
                if let result { codes[result, default: 0] += 1 }
            }
        }
        #expect(codes[.invalidSignature, default: 0] > 0)
    }

    @Test func reencodedTokensNeverVerify() async throws {
        let verifier = try makeTestVerifier(ca: ca)
        let good = try token()
        let parts = good.split(separator: ".").map(String.init)
        // Standard base64 with padding instead of base64url: different bytes signed, or not base64url at all.
        let header = Base64.urlDecode(parts[0])!
        let payload = Base64.urlDecode(parts[1])!
        let standard = Base64.encode(header) + "." + Base64.encode(payload) + "." + parts[2]
        #expect(await verificationCode { try await verifier.verify(standard, as: FlatPayload.self) } != nil)
        // The same JSON re-serialized with whitespace: equal meaning, different signed bytes.
        let spaced = String(decoding: payload, as: UTF8.self).replacingOccurrences(of: ",", with: ", ")
        let respaced = parts[0] + "." + Base64.urlEncode(Array(spaced.utf8)) + "." + parts[2]
        #expect(await verificationCode { try await verifier.verify(respaced, as: FlatPayload.self) } == .invalidSignature)
        // A payload lifted from another token under this header.
        let other = try token(sampleTransactionPayload(bundleId: "com.example")).split(separator: ".")
        let spliced = parts[0] + "." + other[1] + "." + parts[2]
        if other[1] != parts[1] {
            #expect(await verificationCode { try await verifier.verify(spliced, as: FlatPayload.self) } == .invalidSignature)
        }
        // Signature with the DER encoding instead of raw r||s.
        let der = ECDSASignature.derFromRaw(Base64.urlDecode(parts[2])!)!
        #expect(await verificationCode { try await verifier.verify(parts[0] + "." + parts[1] + "." + Base64.urlEncode(der), as: FlatPayload.self) }
            == .invalidSignature)
    }

    @Test func signatureByAnotherKeyFails() async throws {
        var signer = ca.signer
        signer.key = try P256PrivateKey()
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == .invalidSignature)
    }

    // MARK: chains

    @Test(arguments: [0, 1, 2, 4, 5])
    func chainMustHaveThreeCertificates(count: Int) async throws {
        var signer = ca.signer
        let all = [ca.leaf.derBytes, ca.intermediate.derBytes, ca.root.derBytes, ca.root.derBytes, ca.root.derBytes]
        signer.certificateChain = Array(all.prefix(count))
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == .invalidChainLength)
    }

    @Test func x5cRootIsNeverTrustedByItself() async throws {
        let attacker = try TestCertificateAuthority(options: .init(name: "Attacker"))
        // The attacker's full chain, carrying its own root in x5c[2]: the verifier trusts only ca.root.
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try attacker.signer.sign(sampleTransactionPayload()), as: FlatPayload.self) }
            == .chainUntrusted)
        // And x5c[2] need not be the configured root's bytes: anything there is ignored.
        var signer = ca.signer
        signer.certificateChain = [ca.leaf.derBytes, ca.intermediate.derBytes, attacker.root.derBytes]
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == nil)
    }

    @Test func intermediateFromAnotherCAIsUntrusted() async throws {
        let other = try TestCertificateAuthority(options: .init(name: "Other"))
        var signer = ca.signer
        signer.certificateChain = [ca.leaf.derBytes, other.intermediate.derBytes, ca.root.derBytes]
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == .chainUntrusted)
    }

    @Test func leafIssuedDirectlyByRootIsUntrusted() async throws {
        let leafKey = try P256PrivateKey()
        let leaf = try X509Certificate.mint(
            CertificateTemplate(
                commonName: "Direct", notBefore: 1_600_000_000, notAfter: 2_100_000_000, isCertificateAuthority: false,
                markerExtensionOIDs: [SignedDataVerifier.leafMarkerOID]),
            subjectKey: try leafKey.publicKey, issuer: ca.root, issuerKey: ca.rootKey)
        let signer = JWSSigner(key: leafKey, certificateChain: [leaf.derBytes, ca.intermediate.derBytes, ca.root.derBytes])
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try signer.sign(sampleTransactionPayload()), as: FlatPayload.self) } == .chainUntrusted)
    }

    @Test func missingOIDs() async throws {
        for options in [TestCertificateAuthority.Options(leafHasAppleOID: false), .init(intermediateHasAppleOID: false)] {
            let broken = try TestCertificateAuthority(options: options)
            let verifier = try makeTestVerifier(ca: broken)
            #expect(await verificationCode { try await verifier.verify(try broken.signer.sign(sampleTransactionPayload()), as: FlatPayload.self) }
                == .missingAppleOID)
        }
    }

    @Test func validityIsCheckedAtSignedDateOffline() async throws {
        // Leaf valid 2021…2039. The clock says 2025 throughout; only signedDate matters offline.
        let verifier = try makeTestVerifier(ca: ca)
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(signedDate: 1_500_000_000_000)), as: FlatPayload.self) }
            == .certificateExpired)
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(signedDate: 2_200_000_000_000)), as: FlatPayload.self) }
            == .certificateExpired)
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(signedDate: 1_700_000_000_000)), as: FlatPayload.self) }
            == nil)
        // Without signedDate, the clock's time is used.
        #expect(await verificationCode { try await verifier.verify(try token(sampleTransactionPayload(signedDate: nil)), as: FlatPayload.self) } == nil)
        let late = try makeTestVerifier(ca: ca, clock: FixedClock(seconds: 2_280_946_846))
        #expect(await verificationCode { try await late.verify(try token(sampleTransactionPayload(signedDate: nil)), as: FlatPayload.self) }
            == .certificateExpired)
    }

    @Test func expiredLeafAtSignedDate() async throws {
        let expired = try TestCertificateAuthority(options: .init(leafValidity: 1_600_000_000...1_700_000_000))
        let verifier = try makeTestVerifier(ca: expired)
        #expect(await verificationCode { try await verifier.verify(try expired.signer.sign(sampleTransactionPayload()), as: FlatPayload.self) }
            == .certificateExpired)
        // Signed while the leaf was valid: fine offline…
        let old = try expired.signer.sign(sampleTransactionPayload(signedDate: 1_650_000_000_000))
        #expect(await verificationCode { try await verifier.verify(old, as: FlatPayload.self) } == nil)
        // …but not when validity is checked at the clock's time.
        let atNow = try makeTestVerifier(ca: expired, mode: .clockTime)
        #expect(await verificationCode { try await atNow.verify(old, as: FlatPayload.self) } == .certificateExpired)
    }

    @Test func malformedConfiguredRootIsInvalidCertificate() throws {
        #expect(throws: VerificationError(.invalidCertificate)) {
            try SignedDataVerifier(
                configuration: .init(trustedRoots: [Array("abc".utf8)], bundleId: nil, environment: .sandbox),
                clock: FixedClock(milliseconds: 0))
        }
    }

    // MARK: app checks

    @Test func appIdentifierChecks() async throws {
        let production = try makeTestVerifier(ca: ca, appAppleId: 1234, environments: [.production])
        let notification = NotificationLikePayload(
            notificationType: "TEST", signedDate: testNowMilliseconds,
            data: .init(environment: "Production", bundleId: "com.example", appAppleId: 1234))
        #expect(await verificationCode { try await production.verify(try token(notification), as: NotificationLikePayload.self) } == nil)
        var wrongApp = notification
        wrongApp.data?.appAppleId = 1235
        #expect(await verificationCode { try await production.verify(try token(wrongApp), as: NotificationLikePayload.self) }
            == .invalidAppIdentifier)
        var noApp = notification
        noApp.data?.appAppleId = nil
        #expect(await verificationCode { try await production.verify(try token(noApp), as: NotificationLikePayload.self) }
            == .invalidAppIdentifier)
        // appAppleId is compared before the environment.
        var sandboxWrongApp = wrongApp
        sandboxWrongApp.data?.environment = "Sandbox"
        #expect(await verificationCode { try await production.verify(try token(sandboxWrongApp), as: NotificationLikePayload.self) }
            == .invalidAppIdentifier)
        sandboxWrongApp.data?.appAppleId = 1234
        #expect(await verificationCode { try await production.verify(try token(sandboxWrongApp), as: NotificationLikePayload.self) }
            == .invalidEnvironment)
        // Sandbox configuration: appAppleId is not compared.
        let sandbox = try makeTestVerifier(ca: ca, appAppleId: 1234, environments: [.sandbox])
        var sandboxOther = notification
        sandboxOther.data = .init(environment: "Sandbox", bundleId: "com.example", appAppleId: 999)
        #expect(await verificationCode { try await sandbox.verify(try token(sandboxOther), as: NotificationLikePayload.self) } == nil)
        // A transaction-shaped type without a bundleId is a mismatch; renewal info has none to compare.
        #expect(await verificationCode { try await sandbox.verify(try token(sampleTransactionPayload(bundleId: nil)), as: FlatPayload.self) }
            == .invalidAppIdentifier)
        let renewal = RenewalLikePayload(signedDate: testNowMilliseconds, environment: "Sandbox")
        #expect(await verificationCode { try await sandbox.verify(try token(renewal), as: RenewalLikePayload.self) } == nil)
        // No configured bundle: not checked.
        let anyBundle = try makeTestVerifier(ca: ca, bundleId: nil)
        #expect(await verificationCode { try await anyBundle.verify(try token(sampleTransactionPayload(bundleId: "x.y")), as: FlatPayload.self) } == nil)
    }

    @Test func environments() async throws {
        let both = try makeTestVerifier(ca: ca, environments: [.production, .sandbox])
        #expect(await verificationCode { try await both.verify(try token(sampleTransactionPayload(environment: "Production")), as: FlatPayload.self) } == nil)
        #expect(await verificationCode { try await both.verify(try token(sampleTransactionPayload(environment: "Sandbox")), as: FlatPayload.self) } == nil)
        #expect(await verificationCode { try await both.verify(try token(sampleTransactionPayload(environment: "Staging")), as: FlatPayload.self) }
            == .invalidEnvironment)
        // A correctly signed payload that claims Xcode is still verified in full, then refused.
        #expect(await verificationCode { try await both.verify(try token(sampleTransactionPayload(environment: "Xcode")), as: FlatPayload.self) }
            == .invalidEnvironment)
    }

    @Test func localEnvironmentsSkipSignatureOnlyWhenConfigured() async throws {
        let xcodeKey = try P256PrivateKey()
        let xcodeSigner = JWSSigner(key: xcodeKey, certificateChain: nil, extraHeaderMembers: [("kid", "\"Apple_Xcode_Key\"")])
        let xcodeToken = try xcodeSigner.sign(sampleTransactionPayload(environment: "Xcode"))
        let localToken = try JWSSigner(key: xcodeKey, certificateChain: nil).sign(sampleTransactionPayload(environment: "LocalTesting"))

        let xcode = try makeTestVerifier(ca: ca, environments: [.xcode])
        let verified = try await xcode.verifyPayload(xcodeToken, as: FlatPayload.self)
        #expect(!verified.signatureChecked)
        #expect(await verificationCode { try await xcode.verify(localToken, as: FlatPayload.self) } == .invalidJWTFormat)
        let local = try makeTestVerifier(ca: ca, environments: [.localTesting])
        #expect(await verificationCode { try await local.verify(localToken, as: FlatPayload.self) } == nil)
        // The app checks still apply.
        #expect(await verificationCode { try await xcode.verify(try xcodeSigner.sign(sampleTransactionPayload(environment: "Xcode", bundleId: "b")), as: FlatPayload.self) }
            == .invalidAppIdentifier)
        // Never for Production or Sandbox configurations.
        for environments: Set<AppStoreEnvironment> in [[.production], [.sandbox], [.production, .sandbox]] {
            let verifier = try makeTestVerifier(ca: ca, environments: environments)
            #expect(await verificationCode { try await verifier.verify(xcodeToken, as: FlatPayload.self) } == .invalidJWTFormat)
            var oneCert = xcodeSigner
            oneCert.certificateChain = [ca.leaf.derBytes]
            #expect(await verificationCode { try await verifier.verify(try oneCert.sign(sampleTransactionPayload(environment: "Xcode")), as: FlatPayload.self) }
                == .invalidChainLength)
        }
        // Claiming Xcode while the configuration lists Xcode and Sandbox does not skip checks for Sandbox payloads.
        let mixed = try makeTestVerifier(ca: ca, environments: [.xcode, .sandbox])
        #expect(await verificationCode { try await mixed.verify(try xcodeSigner.sign(sampleTransactionPayload(environment: "Sandbox")), as: FlatPayload.self) }
            == .invalidJWTFormat)
    }
}
