import AppStore
import Foundation

/// One action, as the control API and scenario files spell it (JSON). Which fields matter depends on `action`:
///
/// | action | fields |
/// |---|---|
/// | `customer` | `customer`, `storefront`?, `paymentMethod`? (`ok`/`failing`) |
/// | `purchase` | `customer`, `product`, `offer`? (`intro`, `promotional`, `offerCode`, `winBack`, `retention`), `offerId`?, `appAccountToken`?, `quantity`? |
/// | `advance` | `by` (ISO 8601 duration) |
/// | `autoRenew` | `customer`, `product`, `enabled` |
/// | `upgrade`, `downgrade`, `crossgrade`, `changeProduct` | `customer`, `product` (current), `to` |
/// | `paymentMethod` | `customer`, `paymentMethod` (`ok`/`failing`) |
/// | `gracePeriod` | `days` (0 turns grace off) |
/// | `productAvailability` | `product`, `enabled` (false: off sale; subscribers expire at renewal) |
/// | `renewalRate` | `rate` (`realTime`, `monthlyEveryFiveMinutes`, `monthlyEveryThirtyMinutes`, `monthlyEveryHour`) |
/// | `priceIncrease` | `product`, `price`, `consentRequired`? (default true) |
/// | `priceIncreaseResponse` | `customer`, `product`, `accept` |
/// | `refund` | `customer`, `product`, `transactionId`?, `reason`? (`other`/`appIssue`), `prorated`? |
/// | `refundDeclined`, `refundReversed` | `customer`, `product`, `transactionId`? |
/// | `consumptionRequest` | `customer`, `product`, `transactionId`?, `reason`? (Apple's `consumptionRequestReason`) |
/// | `family` | `family`, `members` (organizer first, ≤ 6) |
/// | `joinFamily` | `family`, `customer` |
/// | `leaveFamily` | `customer` |
/// | `familySharing` | `customer`, `product`, `enabled` |
/// | `extendRenewal` | `customer`, `product`, `days` |
/// | `massExtendRenewal` | `product`, `days`, `requestIdentifier`?, `storefronts`? |
/// | `test` | — |
/// | `storefront` | `customer`, `storefront` |
///
/// In scenario files `at` is the time offset from the scenario's start (an ISO 8601 duration).
public struct ActionRequest: Sendable, Codable, Hashable {
    /// Scenario only: offset from the scenario start (ISO 8601 duration).
    public var at: String?
    /// The action name.
    public var action: String
    /// A customer id.
    public var customer: String?
    /// A product id (the current one for product changes).
    public var product: String?
    /// The product to change to.
    public var to: String?
    /// `intro`, `promotional`, `offerCode`, `winBack` or `retention`.
    public var offer: String?
    /// The offer identifier.
    public var offerId: String?
    /// A UUID linking the purchase to an app account.
    public var appAccountToken: String?
    /// An ISO 3166-1 alpha-3 storefront.
    public var storefront: String?
    /// `ok` or `failing`.
    public var paymentMethod: String?
    /// A family id.
    public var family: String?
    /// Family members, organizer first.
    public var members: [String]?
    /// A refund reason (`other`, `appIssue`) or a `consumptionRequestReason`.
    public var reason: String?
    /// The mass extension request identifier.
    public var requestIdentifier: String?
    /// Storefronts a mass extension applies to (all when absent).
    public var storefronts: [String]?
    /// A transaction id (default: the latest matching one).
    public var transactionId: String?
    /// An ISO 8601 duration to advance by.
    public var by: String?
    /// A ``RenewalRate`` name.
    public var rate: String?
    /// On or off (auto-renew, family sharing, availability).
    public var enabled: Bool?
    /// Whether the customer accepts a price increase.
    public var accept: Bool?
    /// Whether a price increase needs consent (default true).
    public var consentRequired: Bool?
    /// A prorated rather than full refund.
    public var prorated: Bool?
    /// Days (grace period, extension).
    public var days: Int?
    /// Price in milli-units of the currency.
    public var price: Int64?
    /// Quantity of a consumable.
    public var quantity: Int32?

    /// An action with no fields set but its name.
    public init(_ action: String, at: String? = nil) {
        self.action = action
        self.at = at
    }
}

/// The simulated App Store: the store's state, the virtual clock, the signing chain and the sender, behind one actor.
///
/// Every action signs the resulting V2 notifications at the virtual now and posts them through the
/// ``NotificationSender``. ``advance(to:)`` walks virtual time forward event by event: renewals,
/// billing-retry milestones and delivery retries each happen at their own virtual instant.
public actor Simulator {
    /// The virtual clock (shareable with a verifier or a server under test).
    public nonisolated let clock: VirtualClock
    /// Delivery and its history.
    public nonisolated let sender: NotificationSender
    /// The signing chain.
    public nonisolated let ca: SimulatorCA
    /// The store's state.
    public internal(set) var store: SimulatedStore
    let signer: NotificationSigner
    let v1Builder: V1NotificationBuilder?
    /// Mass renewal-date extensions by request identifier (for the fake Server API's status endpoint).
    var massExtensions: [String: MassExtendRenewalDateStatusResponse] = [:]
    /// Consumption information sent through the fake Server API, by transaction id (raw JSON bodies).
    public private(set) var consumptionInformation: [String: [UInt8]] = [:]
    /// The transaction ids Finish Transaction was called for, in order, once per call.
    public private(set) var finishedTransactions: [String] = []
    /// Fake Server API calls answered 429 on request (``throttleServerAPI(requests:retryAfterSeconds:)``).
    var serverAPIThrottle = ServerAPIThrottle()
    /// Fake Server API calls received with a valid token.
    public internal(set) var serverAPIRequests = 0
    /// The fake Retention Messaging API's messages, images, defaults, realtime URL and performance tests.
    public nonisolated let retentionMessaging = FakeRetentionMessaging()

    /// - Parameters:
    ///   - catalog: the app and its products.
    ///   - environment: `Sandbox` (sends once, no `appAppleId`) or `Production` (retries on Apple's schedule).
    ///   - ca: the signing chain.
    ///   - clock: the virtual clock, at the simulation's start.
    ///   - transport: where notifications are posted; nil only records them.
    ///   - v1SharedSecret: when set, the app is configured for V1 notifications: the V1 bodies (with this
    ///     shared secret as `password`) are posted instead of V2, and retried on the V1 schedule. Actions
    ///     still return the V2 notifications, as the App Store's own record.
    ///   - retainHistory: false keeps no delivery history (load generation in Sandbox; ignored with retries).
    public init(
        catalog: Catalog, environment: AppStoreEnvironment = .sandbox, ca: SimulatorCA, clock: VirtualClock,
        transport: (any NotificationTransport)?, v1SharedSecret: String? = nil, retainHistory: Bool = true
    ) {
        self.clock = clock
        v1Builder = v1SharedSecret.map {
            V1NotificationBuilder(sharedSecret: $0, bundleId: catalog.bundleId, environment: environment)
        }
        self.ca = ca
        store = SimulatedStore(catalog: catalog, environment: environment)
        sender = NotificationSender(transport: transport, retries: environment == .production, retainHistory: retainHistory)
        signer = NotificationSigner(
            signer: ca.signer, bundleId: catalog.bundleId, appAppleId: catalog.appAppleId, environment: environment)
    }

    /// Current virtual time.
    public nonisolated var now: Int64 { clock.nowMilliseconds() }

    /// Runs a change to the store at the virtual now, then signs and sends what it produced.
    @discardableResult
    public func apply(_ change: (inout SimulatedStore, Int64) throws -> [PendingNotification]) async throws
        -> [SignedNotification]
    {
        await acquire()
        defer { release() }
        return try await applyLocked(change)
    }

    private func applyLocked(_ change: (inout SimulatedStore, Int64) throws -> [PendingNotification]) async throws
        -> [SignedNotification]
    {
        let now = clock.nowMilliseconds()
        let pending = try change(&store, now)
        return try await emit(pending)
    }

    private func emit(_ pending: [PendingNotification]) async throws -> [SignedNotification] {
        var out: [SignedNotification] = []
        for item in pending {
            let signed = try signer.sign(item, signedDate: item.date)
            out.append(signed)
            if let v1Builder {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for body in v1Builder.bodies(for: item, store: store) {
                    await sender.sendV1(
                        Array(try encoder.encode(body)), type: body.notificationType?.rawValue ?? "", customerId: item.customerId,
                        now: item.date)
                }
            } else {
                await sender.send(signed, now: item.date)
            }
        }
        return out
    }

    /// Moves the clock forward by `duration`, running every renewal, billing milestone and delivery retry on the way.
    @discardableResult
    public func advance(by duration: ISODuration) async throws -> [SignedNotification] {
        await acquire()
        defer { release() }
        return try await advanceLocked(to: duration.added(to: clock.nowMilliseconds()))
    }

    /// Moves the clock forward to `target` (virtual epoch milliseconds), event by event.
    @discardableResult
    public func advance(to target: Int64) async throws -> [SignedNotification] {
        await acquire()
        defer { release() }
        return try await advanceLocked(to: target)
    }

    /// The latest virtual time the simulator reaches: 9999-12-31T23:59:59.999Z, the last instant ISO 8601
    /// dates and the renewal arithmetic handle; advancing past it is a typed error, not an overflow.
    public static let latestTime: Int64 = 253_402_300_799_999

    private func advanceLocked(to target: Int64) async throws -> [SignedNotification] {
        guard target <= Self.latestTime else {
            throw SimulatorError.invalid("virtual time ends at 9999-12-31T23:59:59.999Z")
        }
        var out: [SignedNotification] = []
        while true {
            let storeDue = store.nextDueTime()
            let retryDue = await sender.nextRetryDate()
            let candidates = [storeDue, retryDue].compactMap { $0 }
            guard let next = candidates.min(), next <= target else { break }
            clock.set(milliseconds: next)
            if let storeDue, storeDue <= next {
                out += try await emit(store.processDue(now: next))
            }
            await sender.deliverDue(now: next)
        }
        clock.set(milliseconds: target)
        return out
    }

    /// Performs one action (see ``ActionRequest`` for names and fields) at the virtual now.
    @discardableResult
    public func perform(_ request: ActionRequest) async throws -> [SignedNotification] {
        await acquire()
        defer { release() }
        return try await performLocked(request)
    }

    private func performLocked(_ request: ActionRequest) async throws -> [SignedNotification] {
        func need<T>(_ value: T?, _ name: String) throws -> T {
            guard let value else { throw SimulatorError.invalid("\(request.action) needs '\(name)'") }
            return value
        }
        func paymentOK() throws -> Bool? {
            switch request.paymentMethod {
            case nil: return nil
            case "ok": return true
            case "failing", "fails", "failing-card": return false
            case let other?: throw SimulatorError.invalid("paymentMethod is 'ok' or 'failing', not '\(other)'")
            }
        }
        switch request.action {
        case "customer":
            let id = try need(request.customer, "customer")
            let ok = try paymentOK() ?? true
            let storefront = request.storefront ?? "USA"
            return try await applyLocked { store, _ in
                store.addCustomer(id, storefront: storefront, paymentSucceeds: ok)
                return []
            }
        case "purchase":
            let customer = try need(request.customer, "customer")
            let product = try need(request.product, "product")
            let choice: SimulatedStore.OfferChoice?
            switch request.offer {
            case nil: choice = nil
            case "intro", "introductory": choice = .introductory
            case "promotional", "promo": choice = .promotional(try need(request.offerId, "offerId"))
            case "offerCode", "code": choice = .offerCode(try need(request.offerId, "offerId"))
            case "winBack", "winback": choice = .winBack(try need(request.offerId, "offerId"))
            case "retention": choice = .retention(try need(request.offerId, "offerId"))
            case let other?: throw SimulatorError.invalid("unknown offer kind '\(other)'")
            }
            return try await applyLocked {
                try $0.purchase(
                    customer, product: product, offer: choice, appAccountToken: request.appAccountToken,
                    quantity: request.quantity ?? 1, now: $1)
            }
        case "advance":
            let text = try need(request.by, "by")
            guard let duration = ISODuration(text) else { throw SimulatorError.invalid("'\(text)' is not an ISO 8601 duration") }
            return try await advanceLocked(to: duration.added(to: clock.nowMilliseconds()))
        case "autoRenew":
            let (customer, product, enabled) = (try need(request.customer, "customer"), try need(request.product, "product"), try need(request.enabled, "enabled"))
            return try await applyLocked { try $0.setAutoRenew(customer, product: product, enabled: enabled, now: $1) }
        case "upgrade", "downgrade", "crossgrade", "changeProduct":
            let (customer, product, to) = (try need(request.customer, "customer"), try need(request.product, "product"), try need(request.to, "to"))
            return try await applyLocked { try $0.changeProduct(customer, from: product, to: to, now: $1) }
        case "paymentMethod":
            let customer = try need(request.customer, "customer")
            let ok = try need(try paymentOK(), "paymentMethod")
            return try await applyLocked { try $0.setPaymentMethod(customer, succeeds: ok, now: $1) }
        case "gracePeriod":
            let days = try need(request.days, "days")
            // Apple offers 3, 16 or 28 days; beyond the billing-retry window a grace period means nothing.
            guard days <= SimulatedStore.billingRetryWindow / Milliseconds.day else {
                throw SimulatorError.invalid("gracePeriod days is at most \(SimulatedStore.billingRetryWindow / Milliseconds.day)")
            }
            return try await applyLocked { store, _ in
                store.catalog.gracePeriodDays = days > 0 ? days : nil
                return []
            }
        case "productAvailability":
            let (product, enabled) = (try need(request.product, "product"), try need(request.enabled, "enabled"))
            return try await applyLocked { store, _ in
                try store.setAvailableForSale(product, enabled)
                return []
            }
        case "renewalRate":
            let text = try need(request.rate, "rate")
            guard let rate = RenewalRate(rawValue: text) else {
                throw SimulatorError.invalid("rate is one of \(RenewalRate.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return try await applyLocked { store, _ in
                store.renewalRate = rate
                return []
            }
        case "priceIncrease":
            let (product, price) = (try need(request.product, "product"), try need(request.price, "price"))
            return try await applyLocked {
                try $0.priceIncrease(product: product, newPrice: price, consentRequired: request.consentRequired ?? true, now: $1)
            }
        case "priceIncreaseResponse":
            let (customer, product, accept) = (try need(request.customer, "customer"), try need(request.product, "product"), try need(request.accept, "accept"))
            return try await applyLocked { try $0.respondToPriceIncrease(customer, product: product, accept: accept, now: $1) }
        case "refund":
            let (customer, product) = (try need(request.customer, "customer"), try need(request.product, "product"))
            let reason: RevocationReason = request.reason == "appIssue" ? .appIssue : .other
            return try await applyLocked {
                try $0.refund(customer, product: product, transactionId: request.transactionId, reason: reason,
                    prorated: request.prorated ?? false, now: $1)
            }
        case "refundDeclined":
            let (customer, product) = (try need(request.customer, "customer"), try need(request.product, "product"))
            return try await applyLocked { try $0.refundDeclined(customer, product: product, transactionId: request.transactionId, now: $1) }
        case "refundReversed":
            let (customer, product) = (try need(request.customer, "customer"), try need(request.product, "product"))
            return try await applyLocked { try $0.refundReversed(customer, product: product, transactionId: request.transactionId, now: $1) }
        case "consumptionRequest":
            let (customer, product) = (try need(request.customer, "customer"), try need(request.product, "product"))
            let reason = request.reason.map(ConsumptionRequestReason.init(rawValue:)) ?? .unintendedPurchase
            return try await applyLocked { try $0.consumptionRequest(customer, product: product, transactionId: request.transactionId, reason: reason, now: $1) }
        case "family":
            let (family, members) = (try need(request.family, "family"), try need(request.members, "members"))
            return try await applyLocked { try $0.createFamily(family, members: members, now: $1) }
        case "joinFamily":
            let (family, customer) = (try need(request.family, "family"), try need(request.customer, "customer"))
            return try await applyLocked { try $0.joinFamily(family, customer: customer, now: $1) }
        case "leaveFamily":
            let customer = try need(request.customer, "customer")
            return try await applyLocked { try $0.leaveFamily(customer, now: $1) }
        case "familySharing":
            let (customer, product, enabled) = (try need(request.customer, "customer"), try need(request.product, "product"), try need(request.enabled, "enabled"))
            return try await applyLocked { try $0.setFamilySharing(customer, product: product, enabled: enabled, now: $1) }
        case "extendRenewal":
            let (customer, product, days) = (try need(request.customer, "customer"), try need(request.product, "product"), try need(request.days, "days"))
            return try await applyLocked { try $0.extendRenewalDate(customer, product: product, days: days, now: $1) }
        case "massExtendRenewal":
            let (product, days) = (try need(request.product, "product"), try need(request.days, "days"))
            let requestId = request.requestIdentifier ?? UUID().uuidString.lowercased()
            return try await applyLocked {
                try $0.massExtendRenewalDate(product: product, days: days, requestIdentifier: requestId,
                    storefronts: request.storefronts ?? [], now: $1)
            }
        case "test":
            return try await applyLocked { store, now in [store.testNotification(now: now)] }
        case "storefront":
            let (customer, storefront) = (try need(request.customer, "customer"), try need(request.storefront, "storefront"))
            return try await applyLocked { store, _ in
                try store.changeStorefront(customer, to: storefront)
                return []
            }
        default:
            throw SimulatorError.invalid("unknown action '\(request.action)'")
        }
    }

    /// Runs a scenario: JSON lines of ``ActionRequest``s (blank lines and lines starting with `#` or `//`
    /// are skipped). A step's `at` offset is measured from the virtual time when the scenario starts; the
    /// clock is advanced to it first (a step never moves time backwards).
    @discardableResult
    public func run(scenario text: String) async throws -> [SignedNotification] {
        await acquire()
        defer { release() }
        let start = clock.nowMilliseconds()
        var out: [SignedNotification] = []
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("//") { continue }
            let request: ActionRequest
            do {
                request = try JSONDecoder().decode(ActionRequest.self, from: Data(line.utf8))
            } catch {
                throw SimulatorError(code: "INVALID_SCENARIO", "line \(number + 1): not an action object")
            }
            if let at = request.at {
                guard let offset = ISODuration(at) else {
                    throw SimulatorError(code: "INVALID_SCENARIO", "line \(number + 1): '\(at)' is not an ISO 8601 duration")
                }
                let target = offset.added(to: start)
                if target > clock.nowMilliseconds() { out += try await advanceLocked(to: target) }
            }
            do {
                out += try await performLocked(request)
            } catch let error as SimulatorError {
                throw SimulatorError(code: error.code, "line \(number + 1): \(error.message)", status: error.status)
            }
        }
        return out
    }

    /// Records consumption information for a transaction (fake Server API).
    func recordConsumptionInformation(_ transactionId: String, body: [UInt8]) {
        consumptionInformation[transactionId] = body
    }

    /// Records a Finish Transaction call (fake Server API).
    func recordFinished(_ transactionId: String) {
        finishedTransactions.append(transactionId)
    }

    /// Records a mass extension's outcome (fake Server API).
    func recordMassExtension(_ status: MassExtendRenewalDateStatusResponse) {
        if let id = status.requestIdentifier { massExtensions[id] = status }
    }

    // MARK: - Serialising actions

    // Actions suspend while notifications are delivered; without this gate a second request could run
    // in the middle of an advance, at an intermediate virtual time. Requests run one at a time, FIFO.
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    /// A JSON-friendly snapshot of the state.
    public func snapshot() -> StateSnapshot {
        StateSnapshot(
            now: clock.nowMilliseconds(), environment: store.environment.rawValue, bundleId: store.catalog.bundleId,
            customers: store.customers.values.sorted { $0.id < $1.id }, families: store.families.values.sorted { $0.id < $1.id },
            subscriptions: store.subscriptions.values.sorted { $0.originalTransactionId < $1.originalTransactionId },
            transactions: store.transactionOrder.compactMap { store.transactions[$0] })
    }
}

/// The simulator's state as `GET /state` returns it.
public struct StateSnapshot: Sendable, Codable {
    /// The virtual time after the request, epoch milliseconds.
    public var now: Int64
    /// `Sandbox` or `Production`.
    public var environment: String
    /// The app's bundle identifier.
    public var bundleId: String
    /// Customers, sorted by id.
    public var customers: [SimulatedCustomer]
    /// Family groups, sorted by id.
    public var families: [FamilyGroup]
    /// Subscriptions, sorted by original transaction id.
    public var subscriptions: [SimulatedSubscription]
    /// Transactions in issue order.
    public var transactions: [JWSTransactionDecodedPayload]
}
