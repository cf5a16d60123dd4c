import AppStore
import EntitledCrypto
import Foundation
import HTTPServer

/// A notification as the control API reports it.
public struct NotificationSummary: Sendable, Codable, Hashable {
    /// The notification's `notificationUUID` (also the test notification token).
    public var notificationUUID: String?
    /// `notificationType` as text.
    public var notificationType: String?
    /// `subtype` as text.
    public var subtype: String?
    /// `data.status` as a number.
    public var status: Int32?
    /// `signedDate`, virtual epoch milliseconds.
    public var signedDate: Int64?
    /// The customer the notification concerns.
    public var customerId: String?
    /// The notification JWS.
    public var signedPayload: String

    /// Summarises a signed notification.
    public init(_ notification: SignedNotification) {
        notificationUUID = notification.payload.notificationUUID
        notificationType = notification.payload.notificationType?.rawValue
        subtype = notification.payload.subtype?.rawValue
        status = notification.payload.data?.status?.rawValue
        signedDate = notification.payload.signedDate
        customerId = notification.customerId
        signedPayload = notification.signedPayload
    }
}

/// The simulator's control API (JSON over HTTP):
///
/// - `POST /actions` — one ``ActionRequest``; answers `{"now", "notifications": [NotificationSummary]}`.
/// - `POST /scenario` — a scenario (JSON lines) as the body; same answer.
/// - `POST /clock/advance` — `{"by": "P1M"}` or `{"to": <epoch ms>}`; same answer.
/// - `GET /clock` — `{"now": <epoch ms>, "iso": "…"}`.
/// - `GET /state` — a ``StateSnapshot``.
/// - `GET /notifications[?onlyFailures=true]` — every ``DeliveryRecord`` with its attempts.
/// - `GET /customers/{customer}/receipt` — `{"receiptData": …}`, the customer's ``SimulatedReceipt``.
/// - `GET /ca/root.pem`, `GET /ca/root.der` — the root to configure in a server.
///
/// Simulator errors answer 400 (404 for an unknown customer, product …) with a problem body.
public enum ControlAPI {
    /// The answer of the mutating endpoints.
    public struct ActionResponse: Sendable, Codable {
        /// The virtual time after the request, epoch milliseconds.
        public var now: Int64
        /// The notifications the request produced, in order.
        public var notifications: [NotificationSummary]
    }

    struct AdvanceRequest: Codable {
        var by: String?
        var to: Int64?
    }

    struct ClockResponse: Codable {
        var now: Int64
        var iso: String
    }

    /// Adds the control routes for `simulator` to `router`.
    public static func register(_ simulator: Simulator, on router: inout Router) {
        router.post("/actions") { request in
            let action = try request.decodeJSON(ActionRequest.self)
            return try await respond(simulator) { try await simulator.perform(action) }
        }
        router.post("/scenario") { request in
            let text = String(decoding: request.body, as: UTF8.self)
            return try await respond(simulator) { try await simulator.run(scenario: text) }
        }
        router.post("/clock/advance") { request in
            let body = try request.decodeJSON(AdvanceRequest.self)
            if let by = body.by {
                guard let duration = ISODuration(by) else { throw HTTPError.badRequest("'by' is not an ISO 8601 duration") }
                return try await respond(simulator) { try await simulator.advance(by: duration) }
            }
            guard let to = body.to else { throw HTTPError.badRequest("give 'by' (ISO 8601 duration) or 'to' (epoch ms)") }
            guard to >= simulator.now else { throw HTTPError.badRequest("virtual time does not go backwards") }
            return try await respond(simulator) { try await simulator.advance(to: to) }
        }
        router.get("/clock") { _ in
            let now = simulator.now
            return try .json(ClockResponse(now: now, iso: ISO8601.format(milliseconds: now)))
        }
        router.get("/state") { _ in
            try .json(await simulator.snapshot())
        }
        router.get("/notifications") { request in
            let onlyFailures = request.query["onlyFailures"] == "true"
            return try .json(await simulator.sender.history(onlyFailures: onlyFailures))
        }
        router.get("/customers/{customer}/receipt") { request in
            let customer = try request.parameter("customer")
            guard await simulator.store.customers[customer] != nil else { throw HTTPError.notFound("no customer '\(customer)'") }
            return try .json(["receiptData": await simulator.receipt(for: customer)])
        }
        router.get("/ca/root.pem") { _ in
            .text(PEM.encode(simulator.ca.rootDER, label: "CERTIFICATE"))
        }
        router.get("/ca/root.der") { _ in
            Response(status: 200, headers: ["Content-Type": "application/pkix-cert"], body: simulator.ca.rootDER)
        }
    }

    /// A router with only the control routes.
    public static func router(for simulator: Simulator) -> Router {
        var router = Router()
        register(simulator, on: &router)
        return router
    }

    private static func respond(_ simulator: Simulator, _ body: () async throws -> [SignedNotification]) async throws -> Response {
        do {
            let notifications = try await body()
            return try .json(ActionResponse(now: simulator.now, notifications: notifications.map(NotificationSummary.init)))
        } catch let error as SimulatorError {
            throw HTTPError(status: error.status, code: error.code, detail: error.message)
        }
    }
}
