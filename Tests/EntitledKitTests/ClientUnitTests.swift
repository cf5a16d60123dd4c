import EntitledKit
import Foundation
import Testing

/// The client's pure parts: backoff, decoding, and its dependencies.
@Suite struct ClientUnitTests {
    @Test(arguments: [
        (1, nil, 0.5), (2, nil, 1), (3, nil, 2), (10, nil, 30), (1, 10, 10), (1, 3600, 30),
    ] as [(Int, Int?, TimeInterval)])
    func backoffDoublesAndHonoursRetryAfterUpToItsCap(attempt: Int, retryAfter: Int?, expected: TimeInterval) {
        #expect(RetryPolicy().delay(after: attempt, retryAfter: retryAfter) == expected)
    }

    @Test func anAnswerDecodesTheServersJSONAndIgnoresUnknownMembers() throws {
        let json = #"""
            {"appUserId":"u","appAccountToken":"9f1c4e4e-8a0e-4d3b-9c39-0b8b5f6c1d2e","environment":"Sandbox",
             "state":"active","serverTime":"2027-01-15T08:00:00.000Z","nextChangeAt":"2027-02-15T08:00:00.000Z",
             "entitlements":{"pro":{"active":true,"status":"active","productId":"pro.monthly","productType":"autoRenewable",
               "transactionId":"1","originalTransactionId":"1","ownership":"purchased","purchaseDate":"2027-01-15T08:00:00.000Z",
               "originalPurchaseDate":null,"expiresAt":"2027-02-15T08:00:00.000Z","gracePeriodExpiresAt":null,"willRenew":true,
               "renewsTo":null,"periodType":"normal","billingIssueDetectedAt":null,"unsubscribeDetectedAt":null,
               "priceIncrease":null,"subscriptionGroup":"pro","environment":"Sandbox","somethingNew":1}},
             "subscriptions":[],"nonSubscriptions":[],"offers":{"introductory":[],
               "winBack":[],"promotional":[{"productId":"pro.monthly","offerId":"half"}]},"preorder":{"isPreordered":false,"preorderDate":null,
               "appOriginalPurchaseDate":null}}
            """#
        let answer = try CustomerAnswer.decode(Data(json.utf8))
        #expect(answer.grants("pro"))
        #expect(!answer.grants("extras"))
        #expect(answer.serverTime == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(answer.validUntil == Date(timeIntervalSince1970: 1_802_678_400))
        #expect(answer.offers.promotional.map(\.productId) == ["pro.monthly"])
        #expect(answer.offers.promotional.map(\.offerId) == ["half"])
    }

    @Test func anAnswerCarriesTheStorefrontAndConsumableCounts() throws {
        let json = #"""
            {"appUserId":"u","appAccountToken":"9f1c4e4e-8a0e-4d3b-9c39-0b8b5f6c1d2e","environment":"Production",
             "state":"new","serverTime":"2027-01-15T08:00:00.000Z","nextChangeAt":null,"entitlements":{},"subscriptions":[],
             "nonSubscriptions":[{"kind":"consumable","id":"coins","active":true,"expiresAt":null,"balance":3,"purchased":8,
               "refunded":3,"spent":2,"transactionIds":["t1","t2"],"grant":null}],
             "offers":{"introductory":[],"winBack":[],"promotional":[]},"storefront":"FRA","storefrontId":"143442"}
            """#
        let answer = try CustomerAnswer.decode(Data(json.utf8))
        #expect(answer.storefront == "FRA")
        #expect(answer.storefrontId == "143442")
        let coins = try #require(answer.nonSubscriptions?.first)
        #expect([coins.balance, coins.purchased, coins.refunded, coins.spent] == [3, 8, 3, 2])
    }

    #if os(Linux)
        /// The default monotonic clock is the boot clock: one origin per boot (so a relaunch keeps
        /// its anchors), and time since boot (sleep included, as /proc/uptime counts it).
        @Test func theSystemClockCountsFromBootUnderTheBootsId() throws {
            let bootID = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            let clock = SystemMonotonicClock()
            #expect(clock.origin == "boot-" + bootID.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(SystemMonotonicClock().origin == clock.origin)
            let uptime = try #require(
                Double(try String(contentsOfFile: "/proc/uptime", encoding: .utf8).split(separator: " ")[0]))
            let elapsed = clock.elapsed()
            #expect(abs(elapsed - uptime) < 5)
            #expect(clock.elapsed() >= elapsed)
        }
    #endif

    /// The library depends on no server target and no C library: its package (Clients/EntitledKit)
    /// declares no dependency, its floor is StoreKit 2's, and its sources import only Foundation,
    /// FoundationNetworking and Apple's frameworks (StoreKit, Security, SwiftUI, Combine).
    @Test func theLibraryDependsOnNothingOfTheServer() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let package = root.appendingPathComponent("Clients/EntitledKit")
        let manifest = try String(contentsOf: package.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(!manifest.contains("dependencies"))
        #expect(manifest.contains("platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)]"))
        let sources = package.appendingPathComponent("Sources/EntitledKit")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count >= 5)
        let allowed: Set<String> = ["Foundation", "FoundationNetworking", "StoreKit", "Security", "SwiftUI", "Combine"]
        for file in files {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), words[..<index].allSatisfy({ $0.hasPrefix("@") || $0 == "internal" || $0 == "public" }),
                    index + 1 < words.count
                else { continue }
                #expect(allowed.contains(String(words[index + 1])), "\(file.lastPathComponent): \(line)")
            }
        }
    }
}
