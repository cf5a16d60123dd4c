import AppStore
import Foundation
import HTTPClient

/// What one delivery attempt came back with.
public enum TransportOutcome: Sendable, Hashable {
    /// The endpoint answered with this HTTP status.
    case status(Int)
    /// No answer: connection refused, timeout … (the text says which).
    case failure(String)

    /// Apple counts HTTP 200–206 as delivered.
    public var isSuccess: Bool {
        if case .status(let code) = self { return (200...206).contains(code) }
        return false
    }
}

/// Posts notification bodies somewhere: the network, or an in-memory receiver in tests.
public protocol NotificationTransport: Sendable {
    /// Posts `body` (JSON `{"signedPayload": "…"}`) and reports the outcome; never throws.
    func post(_ body: [UInt8]) async -> TransportOutcome
}

/// Posts over HTTP(S) through ``OutboundHTTP`` (``CurlHTTP`` unless given another).
public struct HTTPNotificationTransport: NotificationTransport {
    /// The notification URL.
    public var url: URL
    /// Seconds before an attempt counts as timed out.
    public var timeout: TimeInterval
    let http: any OutboundHTTP

    /// Posts to `url`, giving up on an attempt after `timeout` seconds.
    public init(url: URL, timeout: TimeInterval = 10, http: any OutboundHTTP = CurlHTTP()) {
        self.url = url
        self.timeout = timeout
        self.http = http
    }

    /// POSTs `body` as `application/json`; any HTTP answer is a status, anything else a failure.
    public func post(_ body: [UInt8]) async -> TransportOutcome {
        let request = OutboundRequest(
            method: "POST", url: url, headers: ["Content-Type": "application/json"], body: body, timeoutSeconds: timeout)
        do throws(OutboundHTTPError) {
            return .status(try await http.send(request).status)
        } catch {
            return .failure(error.message)
        }
    }
}

/// One delivery attempt, at a virtual time.
public struct DeliveryAttempt: Sendable, Hashable, Codable {
    /// Virtual epoch milliseconds.
    public var date: Int64
    /// The HTTP status answered, if any.
    public var httpStatus: Int?
    /// Why there was no answer, if none.
    public var error: String?
    /// Whether the attempt counts as delivered (HTTP 200–206).
    public var succeeded: Bool
}

/// One notification and its delivery history.
public struct DeliveryRecord: Sendable, Hashable, Codable {
    /// The notification's `notificationUUID` (also the test notification token).
    public var notificationUUID: String
    /// `notificationType` as text.
    public var notificationType: String
    /// `subtype` as text.
    public var subtype: String?
    /// The customer the notification concerns.
    public var customerId: String?
    /// `signedDate`, virtual epoch milliseconds.
    public var signedDate: Int64
    /// The V2 JWS; empty for a V1 notification.
    public var signedPayload: String
    /// `2` or `1`: the notification format.
    public var version: Int = 2
    /// The exact JSON body posted (V1 bodies are not signed; V2 bodies wrap `signedPayload`).
    public var body: String
    /// Every attempt, in order.
    public var attempts: [DeliveryAttempt]
    /// When the next retry is due (virtual time); nil once delivered or out of retries.
    public var nextAttemptDate: Int64?

    /// Delivered on some attempt.
    public var delivered: Bool { attempts.contains { $0.succeeded } }
}

/// Sends notifications and retries failures on Apple's V2 schedule — 1, 12, 24, 48 and 72 hours after the
/// previous attempt, six attempts in all (V1: 6, 24 and 48 hours) — in virtual time: a retry happens when
/// ``deliverDue(now:)`` is called with a time at or past it. Sandbox sends once. Every attempt is recorded.
public actor NotificationSender {
    /// V2 delays between attempts in Production (after the 1st, 2nd … attempt).
    public static let retryDelays: [Int64] = [1, 12, 24, 48, 72].map { $0 * Milliseconds.hour }
    /// V1 delays between attempts in Production.
    public static let v1RetryDelays: [Int64] = [6, 24, 48].map { $0 * Milliseconds.hour }

    private let transport: (any NotificationTransport)?
    private let retries: Bool
    /// Every notification sent, with its attempts, in sending order.
    public private(set) var records: [DeliveryRecord] = []
    /// Indices of records with a retry due, and when (kept small: only undelivered notifications).
    private var due: [Int: Int64] = [:]

    private let retainHistory: Bool

    /// - Parameters:
    ///   - transport: where to post; nil records notifications without sending (no attempts).
    ///   - retries: whether failures are retried (Apple retries in Production only).
    ///   - retainHistory: false posts without recording (load generation); only allowed without retries.
    public init(transport: (any NotificationTransport)?, retries: Bool, retainHistory: Bool = true) {
        self.transport = transport
        self.retries = retries
        self.retainHistory = retainHistory || retries
    }

    /// Sends a new notification now (virtual `now`) and records it.
    @discardableResult
    public func send(_ notification: SignedNotification, now: Int64) async -> DeliveryRecord {
        let record = DeliveryRecord(
            notificationUUID: notification.payload.notificationUUID ?? "", notificationType: notification.payload.notificationType?.rawValue ?? "",
            subtype: notification.payload.subtype?.rawValue, customerId: notification.customerId,
            signedDate: notification.payload.signedDate ?? now, signedPayload: notification.signedPayload,
            body: String(decoding: notification.body, as: UTF8.self), attempts: [],
            nextAttemptDate: transport == nil ? nil : now)
        guard retainHistory else {
            _ = await transport?.post(notification.body)
            return record
        }
        records.append(record)
        await attempt(records.count - 1, at: now)
        return records[records.count - 1]
    }

    /// Sends a V1 notification body (unsigned JSON) now and records it.
    @discardableResult
    public func sendV1(_ body: [UInt8], type: String, customerId: String?, now: Int64) async -> DeliveryRecord {
        let record = DeliveryRecord(
            notificationUUID: UUID().uuidString.lowercased(), notificationType: type, subtype: nil, customerId: customerId,
            signedDate: now, signedPayload: "", version: 1, body: String(decoding: body, as: UTF8.self), attempts: [],
            nextAttemptDate: transport == nil ? nil : now)
        records.append(record)
        await attempt(records.count - 1, at: now)
        return records[records.count - 1]
    }

    /// The earliest pending retry, if any.
    public func nextRetryDate() -> Int64? {
        due.values.min()
    }

    /// Performs every retry due at or before `now`, in time order, each stamped with its due time.
    public func deliverDue(now: Int64) async {
        while let (index, due) = earliestDue(), due <= now {
            await attempt(index, at: due)
        }
    }

    private func earliestDue() -> (Int, Int64)? {
        var best: (Int, Int64)?
        for (index, date) in due where best == nil || date < best!.1 || (date == best!.1 && index < best!.0) {
            best = (index, date)
        }
        return best
    }

    private func attempt(_ index: Int, at date: Int64) async {
        guard let transport else { return }
        // Mark it as in flight so a reentrant deliverDue does not send it twice.
        records[index].nextAttemptDate = nil
        due[index] = nil
        let outcome = await transport.post(Array(records[index].body.utf8))
        var attempt = DeliveryAttempt(date: date, succeeded: outcome.isSuccess)
        switch outcome {
        case .status(let code): attempt.httpStatus = code
        case .failure(let message): attempt.error = message
        }
        records[index].attempts.append(attempt)
        let made = records[index].attempts.count
        let delays = records[index].version == 1 ? Self.v1RetryDelays : Self.retryDelays
        if !outcome.isSuccess, retries, made <= delays.count {
            records[index].nextAttemptDate = date + delays[made - 1]
            due[index] = date + delays[made - 1]
        }
    }

    /// Notification history: every record, optionally only those not (yet) delivered.
    public func history(onlyFailures: Bool = false) -> [DeliveryRecord] {
        onlyFailures ? records.filter { !$0.delivered } : records
    }
}

/// Collects notifications in memory; can be told to fail the next N posts (tests, demos).
public actor InMemoryReceiver: NotificationTransport {
    /// Bodies received, in order (including the ones answered with a failure).
    public private(set) var bodies: [[UInt8]] = []
    private var failuresLeft: Int
    private var failureStatus: Int

    /// Fails the first `failFirst` posts with `failureStatus`, then answers 200.
    public init(failFirst: Int = 0, failureStatus: Int = 500) {
        failuresLeft = failFirst
        self.failureStatus = failureStatus
    }

    /// Fails the next `count` posts.
    public func fail(next count: Int, status: Int = 500) {
        failuresLeft = count
        failureStatus = status
    }

    /// Records `body`; answers the configured failure status while failures are left, then 200.
    public func post(_ body: [UInt8]) async -> TransportOutcome {
        bodies.append(body)
        if failuresLeft > 0 {
            failuresLeft -= 1
            return .status(failureStatus)
        }
        return .status(200)
    }

    /// The `signedPayload` of every body that was answered 200… (and the failed ones too: all received).
    public func signedPayloads() -> [String] {
        bodies.compactMap { body in
            (try? JSONDecoder().decode(ResponseBodyV2.self, from: Data(body)))?.signedPayload
        }
    }
}
