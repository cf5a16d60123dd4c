import AppStore
import EntitledConfig
import Foundation
import HTTPServer
import JSONCoding
import Storage

/// `POST /v1/apple/retention` (the Get Retention Message URL registered at Apple) and
/// `GET /v1/retention/save-rates` (console): the HTTP side of ``RetentionResponder`` and
/// ``RetentionSaveRates``.
///
/// A request that does not verify, or is for no app here, is refused with a problem (no body Apple
/// would use). An internal failure is answered at once with 503 and no answer body, so that Apple
/// shows the default message configured for the product at Apple: never worse than Apple's fallback.
struct RetentionRoutes: Sendable {
    let responder: RetentionResponder
    let saveRates: RetentionSaveRates
    let gate: AccessGate
    let clock: any EpochClock
    let codec: JSONCodec
    let metrics: ServerMetrics

    /// Realtime request bodies are a small JWS; larger ones get 413.
    static let maxRequestBytes = 16 * 1024
    /// The save-rate report's window when `days` is absent, and its maximum.
    static let defaultReportDays = 90
    static let maxReportDays = 400

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/apple/retention") { try await routes.retentionMessage($0) }
        router.get("/v1/retention/save-rates") { try await routes.saveRateReport($0) }
    }

    /// `POST /v1/apple/retention`: `{"signedPayload": "…"}` → a `RealtimeResponseBody`, or 204
    /// when the rules choose nothing.
    func retentionMessage(_ request: Request) async throws -> Response {
        guard request.body.count <= Self.maxRequestBytes else { throw HTTPError.payloadTooLarge(limit: Self.maxRequestBytes) }
        // Verification is the expensive part: an address whose signatures keep failing is refused at once.
        guard gate.budget.allows(request.remoteAddress, .appleSignature) else { throw RejectionBudget.exhausted }
        guard let envelope = try? codec.decode(RealtimeRequestBody.self, from: request.body) else {
            throw HTTPError(.invalidJSON, "the body is not {\"signedPayload\": \"…\"}")
        }
        let body: RealtimeResponseBody?
        do throws(RetentionResponder.Failure) {
            body = try await responder.respond(signedPayload: envelope.signedPayload)
        } catch .refused(let error) {
            metrics.retentionRequests.add(["refused"])
            _ = gate.budget.charge(request.remoteAddress, .appleSignature)
            throw HTTPError(ProblemCode(error.code), error.message)
        } catch .internalError(let detail) {
            metrics.retentionRequests.add(["failed"])
            ServerLog.event("retention request answered without a message", ["error": detail], level: .error)
            throw HTTPError(.storageUnavailable, "no answer now; Apple shows its default message")
        }
        let answer = body?.message != nil ? "message" : body?.alternateProduct != nil ? "alternateProduct" : body != nil ? "promotionalOffer" : "none"
        metrics.retentionRequests.add([answer])
        guard let body else { return Response(status: 204, headers: ["Cache-Control": "no-store"]) }
        return RequestInput.noStore(try .json(body))
    }

    /// `GET /v1/retention/save-rates?days=90` (`console` or `admin`): per app and rule, the
    /// requests of the last `days` days and what became of their subscriptions.
    func saveRateReport(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        var days = Self.defaultReportDays
        if let raw = request.query["days"] {
            guard let value = Int(raw), (1...Self.maxReportDays).contains(value) else {
                throw HTTPError(.invalidRequest, "days is 1–\(Self.maxReportDays)")
            }
            days = value
        }
        let now = clock.nowMilliseconds()
        let since = now - Int64(days) * 86_400_000
        let rules: [RetentionRuleReport]
        do {
            rules = try await saveRates.report(since: since, now: now)
        } catch {
            throw Problems.unavailable
        }
        return try .json(SaveRateBody(days: days, rules: rules, serverTime: ISO8601.format(milliseconds: now)))
    }

    struct SaveRateBody: Encodable {
        var days: Int
        var rules: [RetentionRuleReport]
        var serverTime: String
    }
}

extension RetentionRoutes {
    /// The routes over `ledger`, recording into its store's ``Storage/RetentionLog``.
    init(
        configuration: Configuration, verifier: any NotificationVerifying, ledger: FactLedger, signers: [String: OfferSigner],
        gate: AccessGate, clock: any EpochClock, codec: JSONCodec, metrics: ServerMetrics
    ) {
        let log = ledger.store
        let policy = configuration.policy
        self.init(
            responder: RetentionResponder(
                configuration: configuration, verifier: verifier, ledger: ledger, policy: policy, signers: signers,
                recorder: RetentionRecorder(log: log), clock: clock, codec: codec),
            saveRates: RetentionSaveRates(log: log, ledger: ledger, policy: policy),
            gate: gate, clock: clock, codec: codec, metrics: metrics)
    }
}
