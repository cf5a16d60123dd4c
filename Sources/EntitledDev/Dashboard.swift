import AppStoreSimulator
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Storage
import Synchronization

/// The `entitled dev` dashboard: one self-contained page at `/` and the JSON it is fed with under
/// `/dev/`. Registered by `entitled dev` only, never by `serve` (and absent from docs/openapi.yaml).
///
/// - `GET /dev/customers` — every simulator customer with the server's answer.
/// - `GET /dev/metrics` — live counts and the ring of per-virtual-day samples behind the charts.
/// - `GET /dev/customers/{appUserId}/timeline[?cursor=&limit=]` — the customer's answer and their
///   ledger history newest first (cursor-paged like `/v1/…/history`), each notification once with
///   what it carried and the simulator's delivery of it.
/// - `GET /dev/catalog` — the simulator's products.
/// - `GET /dev/clock`, `POST /dev/clock` `{"running", "dayEvery"}` — the auto-advance.
/// - `POST /dev/clock/advance` `{"by": "P1M"}` or `{"days": N}` — move virtual time, a day at a time.
/// - `POST /dev/actions` — one simulator ``ActionRequest`` (see docs/simulator.md).
/// - `GET /dev/play`, `POST /dev/play/actions` — the fake Google Play (`DashboardPlay.swift`).
///
/// Every `/dev/` route needs `Authorization: Bearer <dev key>` (a custom header, so a foreign page
/// cannot post a simple cross-origin form at it); `/` embeds the key. All of them answer only to a
/// loopback `Host` (or the one given to `--listen`) so a DNS-rebound name cannot read the key.
enum Dashboard {
    struct Row: Encodable {
        var appUserId: String
        var state: String
        /// The best entitlement status (`none` without any).
        var status: String
        var paymentSucceeds: Bool
        var entitlements: [Item]
        struct Item: Encodable {
            var id: String
            var status: String
            var active: Bool
            var productId: String
            var productType: String
            var expiresAt: String?
            var willRenew: Bool?
        }
    }

    struct Page: Encodable {
        var serverTime: String
        var now: Int64
        var customers: [Row]
    }

    struct ClockBody: Encodable {
        var now: Int64
        var serverTime: String
        var day: Int
        var running: Bool
        var dayEvery: Double
    }

    struct PaceRequest: Decodable {
        var running: Bool?
        var dayEvery: Double?
    }

    struct AdvanceRequest: Decodable {
        var by: String?
        var days: Int?
    }

    struct Notification: Encodable {
        var notificationUUID: String?
        var notificationType: String?
        var subtype: String?
        var customerId: String?
        var signedDate: String?
    }

    struct ActionBody: Encodable {
        var now: Int64
        var serverTime: String
        var notifications: [Notification]
    }

    struct Metrics: Encodable {
        var now: Int64
        var serverTime: String
        var day: Int
        var pace: DevDriver.Pace
        var customers: Int
        var states: [String: Int]
        var notifications: [String: Int]
        var capacity: Int
        /// One per virtual day, oldest first, at most `capacity`.
        var samples: [DevDriver.Sample]
    }

    struct Delivery: Encodable {
        var notificationUUID: String
        var notificationType: String
        var subtype: String?
        var signedDate: String
        var delivered: Bool
        var attempts: Int
        var lastStatus: Int?
        var lastError: String?
    }

    struct Timeline: Encodable {
        var appUserId: String
        var serverTime: String
        var customer: CustomerBody
        /// The ledger's entries and the simulator's deliveries (first page only), newest first,
        /// each notification once (``timelineEntries(_:deliveries:)``).
        var entries: [TimelineEntry]
        var nextCursor: String?
    }

    struct ProductBody: Encodable {
        var id: String
        var kind: String
        var group: String?
        var level: Int?
        var period: String?
        var price: Int64
        var currency: String
        var hasIntroductoryOffer: Bool
    }

    /// Deliveries listed per customer on the timeline.
    static let deliveryLimit = 100

    static func register(on router: inout Router, driver box: DriverBox, key: String, listenHost: String) {
        let guardian = Guardian(key: key, listenHost: listenHost)
        let page = Array(html.replacingOccurrences(of: "__DEV_KEY__", with: key).utf8)
        router.add(.get, "/", .inline { request in
            try guardian.checkHost(request)
            return Response(
                status: 200,
                headers: [
                    "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
                    // Nothing leaves the page but requests to this server.
                    "Content-Security-Policy":
                        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                ],
                body: page)
        })
        func route(_ method: HTTPMethod, _ pattern: String, _ body: @escaping @Sendable (Request, DevDriver) async throws -> Response) {
            router.add(
                method, pattern,
                .async { request in
                    try guardian.check(request)
                    guard let driver = box.driver else {
                        throw HTTPError(status: 503, code: "STARTING", detail: "the simulator is starting")
                    }
                    do {
                        var response = try await body(request, driver)
                        response.headers.set("Cache-Control", "no-store")
                        return response
                    } catch let error as SimulatorError {
                        throw HTTPError(status: error.status, code: error.code, detail: error.message)
                    } catch let error as StorageError {
                        throw HTTPError(status: 503, code: "STORAGE_UNAVAILABLE", detail: error.description)
                    }
                })
        }
        route(.get, "/dev/customers") { _, driver in try .json(await customers(driver)) }
        route(.get, "/dev/metrics") { _, driver in try .json(await metrics(driver)) }
        route(.get, "/dev/customers/{appUserId}/timeline") { request, driver in
            try .json(await timeline(request, driver))
        }
        route(.get, "/dev/catalog") { _, driver in
            try .json(await driver.simulator.store.catalog.products.map(product(_:)))
        }
        route(.get, "/dev/clock") { _, driver in try .json(clock(driver)) }
        route(.post, "/dev/clock") { request, driver in
            let body = try request.decodeJSON(PaceRequest.self)
            if let dayEvery = body.dayEvery, !(dayEvery.isFinite && dayEvery > 0) {
                throw HTTPError.badRequest("dayEvery is a positive number of seconds")
            }
            driver.setPace(running: body.running, dayEvery: body.dayEvery)
            return try .json(clock(driver))
        }
        route(.post, "/dev/clock/advance") { request, driver in
            let body = try request.decodeJSON(AdvanceRequest.self)
            let duration: AppStoreSimulator.ISODuration
            if let by = body.by {
                guard let parsed = AppStoreSimulator.ISODuration(by) else { throw HTTPError.badRequest("'by' is not an ISO 8601 duration") }
                duration = parsed
            } else if let days = body.days, days > 0 {
                duration = AppStoreSimulator.ISODuration("P\(days)D")!
            } else {
                throw HTTPError.badRequest("give 'by' (an ISO 8601 duration) or 'days' (a positive number)")
            }
            return try .json(actionBody(try await driver.advance(by: duration), driver))
        }
        route(.post, "/dev/actions") { request, driver in
            let action = try request.decodeJSON(ActionRequest.self)
            return try .json(actionBody(try await driver.act(action), driver))
        }
        registerPlay(route)
    }

    // MARK: - Bodies

    static func customers(_ driver: DevDriver) async -> Page {
        let (now, views) = await driver.customers()
        let rows = views.compactMap { view -> Row? in
            guard let snapshot = view.snapshot else { return nil }
            return Row(
                appUserId: view.id, state: snapshot.state.customerClass.rawValue,
                status: DevDriver.status(of: snapshot.state), paymentSucceeds: view.paymentSucceeds,
                entitlements: snapshot.state.entitlements.map {
                    Row.Item(
                        id: $0.id, status: $0.status.rawValue, active: $0.active, productId: $0.productId,
                        productType: $0.productType.rawValue,
                        expiresAt: $0.expiresAt.map { ISO8601.format(milliseconds: $0) }, willRenew: $0.willRenew)
                })
        }
        return Page(serverTime: ISO8601.format(milliseconds: now), now: now, customers: rows)
    }

    static func metrics(_ driver: DevDriver) async -> Metrics {
        let live = await driver.measure()
        return Metrics(
            now: live.at, serverTime: ISO8601.format(milliseconds: live.at), day: live.day, pace: driver.currentPace,
            customers: live.customers, states: live.states,
            notifications: ["sent": live.sent, "accepted": live.accepted, "failed": live.failed],
            capacity: driver.capacity, samples: await driver.history())
    }

    static func timeline(_ request: Request, _ driver: DevDriver) async throws -> Timeline {
        let appUserId = try request.parameter("appUserId")
        let (cursor, limit) = try API.historyPaging(request)
        // Only customers the dashboard knows: the ledger would create any other name on sight.
        guard await driver.knows(appUserId) else {
            throw HTTPError(status: 404, code: "CUSTOMER_NOT_FOUND", detail: "no such customer")
        }
        let now = driver.simulator.now
        let snapshot = try await driver.ledger.customer(
            appUserId: appUserId, context: driver.ledger.answerContext(now: now))
        let page = try await history(driver.ledger, appUserId: appUserId, cursor: cursor, limit: limit)
        var deliveries: [(signedAt: Int64, delivery: Delivery)] = []
        if cursor == nil {
            for record in await driver.simulator.sender.history().reversed() where record.customerId == appUserId {
                let last = record.attempts.last
                deliveries.append(
                    (signedAt: record.signedDate,
                     delivery: Delivery(
                        notificationUUID: record.notificationUUID, notificationType: record.notificationType,
                        subtype: record.subtype, signedDate: ISO8601.format(milliseconds: record.signedDate),
                        delivered: record.delivered, attempts: record.attempts.count, lastStatus: last?.httpStatus,
                        lastError: last?.error)))
                if deliveries.count == deliveryLimit { break }
            }
        }
        return Timeline(
            appUserId: appUserId, serverTime: ISO8601.format(milliseconds: now),
            customer: CustomerBody(customer: snapshot.customer, state: snapshot.state, now: now),
            entries: timelineEntries(page?.entries ?? [], deliveries: deliveries),
            nextCursor: page?.nextCursor.map(HistoryCursor.wrap))
    }

    private static func history(_ ledger: FactLedger, appUserId: String, cursor: String?, limit: Int) async throws
        -> LedgerHistoryPage?
    {
        let result: Result<LedgerHistoryPage?, StorageError>
        do {
            result = .success(try await ledger.history(appUserId: appUserId, cursor: cursor, limit: limit))
        } catch {
            result = .failure(error)
        }
        if case .failure(let error) = result, error.code == .invalidArgument { throw API.invalidCursor }
        return try result.get()
    }

    static func clock(_ driver: DevDriver) -> ClockBody {
        let now = driver.simulator.now
        let pace = driver.currentPace
        return ClockBody(
            now: now, serverTime: ISO8601.format(milliseconds: now), day: driver.day(of: now), running: pace.running,
            dayEvery: pace.dayEvery)
    }

    static func actionBody(_ notifications: [SignedNotification], _ driver: DevDriver) -> ActionBody {
        let now = driver.simulator.now
        return ActionBody(
            now: now, serverTime: ISO8601.format(milliseconds: now),
            notifications: notifications.map {
                Notification(
                    notificationUUID: $0.payload.notificationUUID, notificationType: $0.payload.notificationType?.rawValue,
                    subtype: $0.payload.subtype?.rawValue, customerId: $0.customerId,
                    signedDate: $0.payload.signedDate.map { ISO8601.format(milliseconds: $0) })
            })
    }

    static func product(_ product: SimulatedProduct) -> ProductBody {
        ProductBody(
            id: product.id, kind: product.kind.rawValue, group: product.group, level: product.level,
            period: product.period?.description, price: product.price, currency: product.currency,
            hasIntroductoryOffer: product.introductoryOffer != nil)
    }

    /// The dev key and a loopback `Host` for every dashboard route.
    struct Guardian: Sendable {
        let key: String
        let listenHost: String

        func check(_ request: Request) throws {
            try checkHost(request)
            guard request.headers["Authorization"] == "Bearer \(key)" else {
                throw HTTPError(
                    status: 401, code: "UNAUTHORIZED", detail: "send Authorization: Bearer <the dev key printed at start>",
                    headers: ["WWW-Authenticate": "Bearer"])
            }
        }

        func checkHost(_ request: Request) throws {
            guard let host = request.headers["Host"], !Self.wildcard(listenHost) else { return }
            let name = Self.hostname(host)
            guard name == "localhost" || name == "127.0.0.1" || name == "::1" || name == listenHost.lowercased() else {
                throw HTTPError(status: 403, code: "FORBIDDEN_HOST", detail: "the dev dashboard answers loopback names only")
            }
        }

        /// Listening on every interface was asked for explicitly: any name may reach it.
        static func wildcard(_ host: String) -> Bool { host == "0.0.0.0" || host == "::" || host == "[::]" }

        /// `name`, `name:port`, `[v6]` or `[v6]:port` → the name, lower-cased, without brackets.
        static func hostname(_ host: String) -> String {
            let lowered = host.lowercased()
            if lowered.hasPrefix("["), let end = lowered.firstIndex(of: "]") {
                return String(lowered[lowered.index(after: lowered.startIndex)..<end])
            }
            return String(lowered.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        }
    }
}

/// The driver, set once it exists (the dashboard's routes are built before the simulator, which
/// needs the server's port).
final class DriverBox: Sendable {
    private let value = Mutex<DevDriver?>(nil)
    func set(_ driver: DevDriver) { value.withLock { $0 = driver } }
    var driver: DevDriver? { value.withLock { $0 } }
}
