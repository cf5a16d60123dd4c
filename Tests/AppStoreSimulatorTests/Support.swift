import AppStore
import AppStoreSimulator
import AppStoreTesting
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import Foundation
import Testing

/// 2026-01-15T00:00:00Z.
let start: Int64 = 1_768_435_200_000
let bundleId = "com.example.app"
let appAppleId: Int64 = 1_234_567_890

/// Pro group: basic.monthly (level 3), pro.monthly (level 2, intro trial, offers), pro.yearly (level 1); plus one-time products.
func testCatalog(grace: Int? = nil) -> Catalog {
    let month = ISODuration("P1M")!
    return Catalog(
        bundleId: bundleId, appAppleId: appAppleId, gracePeriodDays: grace,
        products: [
            SimulatedProduct(id: "basic.monthly", kind: .autoRenewable, group: "pro", level: 3, period: month, price: 4990),
            SimulatedProduct(
                id: "pro.monthly", kind: .autoRenewable, group: "pro", level: 2, period: month, price: 9990,
                familyShareable: true,
                introductoryOffer: SubscriptionOffer(discountType: .freeTrial, period: ISODuration("P1W")!),
                promotionalOffers: [SubscriptionOffer(id: "promo50", discountType: .payAsYouGo, period: month, periods: 2, price: 4990)],
                offerCodes: [SubscriptionOffer(id: "CODE3M", discountType: .payUpFront, period: ISODuration("P3M")!, price: 19990)],
                winBackOffers: [SubscriptionOffer(id: "winback1", discountType: .payAsYouGo, period: month, periods: 1, price: 1990)]),
            SimulatedProduct(
                id: "pro.monthly.alt", kind: .autoRenewable, group: "pro", level: 2, period: month, price: 9990),
            SimulatedProduct(id: "pro.yearly", kind: .autoRenewable, group: "pro", level: 1, period: ISODuration("P1Y")!, price: 99990,
                familyShareable: true),
            SimulatedProduct(id: "coins", kind: .consumable, price: 990),
            SimulatedProduct(id: "noads", kind: .nonConsumable, price: 4990, familyShareable: true),
            SimulatedProduct(id: "season", kind: .nonRenewing, period: ISODuration("P3M")!, price: 19990),
        ])
}

/// A simulator with an in-memory receiver, and customers alice (USA) and bob (GBR).
struct Harness {
    let simulator: Simulator
    let receiver: InMemoryReceiver
    let verifier: SignedDataVerifier
    let environment: AppStoreEnvironment

    init(environment: AppStoreEnvironment = .sandbox, grace: Int? = nil, failFirst: Int = 0, customers: Bool = true) async throws {
        self.environment = environment
        let ca = try SimulatorCA.ephemeral()
        receiver = InMemoryReceiver(failFirst: failFirst)
        let clock = VirtualClock(milliseconds: start)
        simulator = Simulator(catalog: testCatalog(grace: grace), environment: environment, ca: ca, clock: clock, transport: receiver)
        verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: [ca.rootDER], bundleId: bundleId, appAppleId: appAppleId, environment: environment,
                mode: .offline),
            clock: clock)
        if customers {
            try await simulator.perform(customer("alice"))
            var bob = ActionRequest("customer")
            bob.customer = "bob"
            bob.storefront = "GBR"
            try await simulator.perform(bob)
        }
    }

    func customer(_ id: String) -> ActionRequest {
        var request = ActionRequest("customer")
        request.customer = id
        return request
    }

    /// Verifies a notification and its nested signed fields.
    func open(_ notification: SignedNotification) throws -> Opened {
        let payload = try verifier.verifySynchronously(notification.signedPayload, as: ResponseBodyV2DecodedPayload.self).value
        var transaction: JWSTransactionDecodedPayload?
        var renewal: JWSRenewalInfoDecodedPayload?
        if let jws = payload.data?.signedTransactionInfo {
            transaction = try verifier.verifySynchronously(jws, as: JWSTransactionDecodedPayload.self).value
        }
        if let jws = payload.data?.signedRenewalInfo {
            renewal = try verifier.verifySynchronously(jws, as: JWSRenewalInfoDecodedPayload.self).value
        }
        return Opened(payload: payload, transaction: transaction, renewal: renewal)
    }

    func open(_ notifications: [SignedNotification]) throws -> [Opened] { try notifications.map(open) }

    @discardableResult
    func perform(_ action: String, _ configure: (inout ActionRequest) -> Void = { _ in }) async throws -> [Opened] {
        var request = ActionRequest(action)
        configure(&request)
        return try open(try await simulator.perform(request))
    }

    @discardableResult
    func advance(_ duration: String) async throws -> [Opened] {
        try open(try await simulator.advance(by: ISODuration(duration)!))
    }
}

struct Opened {
    var payload: ResponseBodyV2DecodedPayload
    var transaction: JWSTransactionDecodedPayload?
    var renewal: JWSRenewalInfoDecodedPayload?

    var type: NotificationType? { payload.notificationType }
    var subtype: NotificationSubtype? { payload.subtype }
    var status: SubscriptionStatus? { payload.data?.status }
    /// `TYPE/SUBTYPE` or `TYPE`, for compact assertions.
    var kind: String { [type?.rawValue, subtype?.rawValue].compactMap { $0 }.joined(separator: "/") }
}

func fixtureURL(_ name: String, file: String = #filePath) -> URL {
    URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent(name)
}

/// Runs blocking work on its own thread, so the 2-thread cooperative pool stays free.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
