import AppStoreTesting
import EntitledCrypto
import Foundation
import GooglePlay
import Testing

/// Mutated versions of real bodies: every decoder must either decode or throw its typed error.
@Suite struct FuzzTests {
    static func mutate(_ input: [UInt8], _ g: inout SplitMix64) -> [UInt8] {
        func below(_ n: Int) -> Int { Int(g.next() % UInt64(max(n, 1))) }
        var bytes = input
        let interesting: [UInt8] = Array("{}[]\",:0-9eE.\\ntrufalsn".utf8) + [0, 0xFF, 0xC3, 0x80]
        for _ in 0..<(1 + below(8)) {
            guard !bytes.isEmpty else { bytes = [interesting[below(interesting.count)]]; continue }
            let at = below(bytes.count)
            switch below(5) {
            case 0: bytes[at] = interesting[below(interesting.count)]
            case 1: bytes.remove(at: at)
            case 2: bytes.insert(interesting[below(interesting.count)], at: at)
            case 3: bytes = Array(bytes[..<at])
            default:
                let end = min(bytes.count, at + below(16))
                bytes.insert(contentsOf: bytes[at..<end], at: at)
            }
        }
        return bytes
    }

    @Test func mutatedBodiesNeverCrash() {
        let notification = Array(#"{"version":"1.0","packageName":"p","eventTimeMillis":"1","subscriptionNotification":{"notificationType":4,"purchaseToken":"T","subscriptionId":"s"}}"#.utf8)
        let push = ModelTests.push(String(decoding: notification, as: UTF8.self))
        let subscription = json(ModelTests.subscriptionV2)
        var g = SplitMix64(seed: 42)
        var decoded = 0
        for round in 0..<3000 {
            let pick = round % 4
            let source = [notification, push, subscription, push][pick]
            let body = Self.mutate(source, &g)
            do {
                switch pick {
                case 0: _ = try DeveloperNotification.decode(body)
                case 1: _ = try PubSubPushEnvelope.decode(body)
                case 2: _ = try PlayJSON.decode(SubscriptionPurchaseV2.self, from: body, maxBytes: 1 << 20, code: .malformedResponse)
                default: _ = try PubSubPushEnvelope.decode(body).message.developerNotification()
                }
                decoded += 1
            } catch {
                let code = (error as? GooglePlayError)?.code
                #expect(code == .malformedNotification || code == .malformedResponse)
            }
        }
        // Some mutations stay valid (a changed digit, say); most must not.
        #expect(decoded > 0 && decoded < 3000)
    }

    @Test func mutatedTokensNeverCrash() throws {
        let token = try RS256JWT.sign(claims: ["iss": "https://accounts.google.com"], keyId: "k", key: TestKeys.google)
        var g = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let text = String(decoding: Self.mutate(Array(token.utf8), &g), as: UTF8.self)
            if let parsed = try? RS256JWT.parse(text) { _ = parsed.headerString("alg") }
        }
    }
}
