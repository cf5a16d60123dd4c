import AppStore
import Foundation
import HTTPClient

/// The state behind the fake Retention Messaging API: uploaded messages and images with their
/// review states, the default message per product and locale, the realtime URL, and performance
/// tests that really call that URL.
///
/// Apple reviews what is uploaded; here an upload is `PENDING` for ``reviewDelayMilliseconds`` of
/// virtual time and `APPROVED` after (0: at once), unless ``review(message:approved:)`` or
/// ``review(image:approved:)`` decided otherwise. The simulator serves one environment: in
/// Production the realtime URL is accepted only after a performance test passed (as Apple), which
/// ``recordPassedPerformanceTest()`` stands in for when the test ran elsewhere. A realtime URL must
/// be `https://`, except on loopback (the simulator runs beside the server under test).
public actor FakeRetentionMessaging {
    struct Message {
        var body: UploadMessageRequestBody
        var uploadedAt: Int64
        var verdict: Bool?
    }

    struct Image {
        var size: ImageSize
        var uploadedAt: Int64
        var verdict: Bool?
    }

    /// Virtual milliseconds an upload stays `PENDING` before it is approved.
    public var reviewDelayMilliseconds: Int64 = 0
    /// How performance tests run: requests, concurrency, the response-time and success-rate thresholds.
    /// Requests are sent as fast as the concurrency allows (`totalDuration` is reported, not waited for).
    public var performanceTestConfig = PerformanceTestConfig(
        maxConcurrentRequests: 10, totalRequests: 100, totalDuration: 60_000, responseTimeThreshold: 700, successRateThreshold: 95)
    /// Apple's limit on uploaded images per app.
    public static let maxImages = 2000

    private(set) var messageOrder: [String] = []
    private(set) var messages: [String: Message] = [:]
    private(set) var imageOrder: [String] = []
    private(set) var images: [String: Image] = [:]
    /// Message identifiers by `productId/locale`.
    private(set) var defaults: [String: String] = [:]
    /// The configured Get Retention Message URL.
    public private(set) var realtimeURL: String?
    /// Whether a performance test passed (the Production URL needs one).
    public private(set) var passedPerformanceTest = false
    private var runs: [String: PerformanceRun] = [:]
    private let http: any OutboundHTTP

    /// Performance tests call the realtime URL through `http`.
    public init(http: any OutboundHTTP = CurlHTTP()) { self.http = http }

    /// Sets how long uploads wait for review (virtual milliseconds).
    public func setReviewDelay(milliseconds: Int64) { reviewDelayMilliseconds = max(0, milliseconds) }

    /// Sets how the next performance tests run.
    public func setPerformanceTestConfig(_ config: PerformanceTestConfig) { performanceTestConfig = config }

    /// Decides the review of message `id` (false: `REJECTED`).
    public func review(message id: String, approved: Bool) { messages[id]?.verdict = approved }

    /// Decides the review of image `id` (false: `REJECTED`).
    public func review(image id: String, approved: Bool) { images[id]?.verdict = approved }

    /// Marks a performance test as passed, as if it had run in Sandbox.
    public func recordPassedPerformanceTest() { passedPerformanceTest = true }

    /// The default message of `productId` in `locale`, if any.
    public func defaultMessage(productId: String, locale: String) -> String? { defaults[productId + "/" + locale] }

    // MARK: - States

    func state(ofMessage id: String, now: Int64) -> MessageState? {
        guard let message = messages[id] else { return nil }
        if let verdict = message.verdict { return verdict ? .approved : .rejected }
        return now >= message.uploadedAt + reviewDelayMilliseconds ? .approved : .pending
    }

    func state(ofImage id: String, now: Int64) -> ImageState? {
        guard let image = images[id] else { return nil }
        if let verdict = image.verdict { return verdict ? .approved : .rejected }
        return now >= image.uploadedAt + reviewDelayMilliseconds ? .approved : .pending
    }

    func messageList(now: Int64) -> GetMessageListResponse {
        GetMessageListResponse(
            messageIdentifiers: messageOrder.map { GetMessageListResponseItem(messageIdentifier: $0, messageState: state(ofMessage: $0, now: now)) })
    }

    func imageList(now: Int64) -> GetImageListResponse {
        GetImageListResponse(
            imageIdentifiers: imageOrder.map {
                GetImageListResponseItem(imageIdentifier: $0, imageState: state(ofImage: $0, now: now), imageSize: images[$0]?.size)
            })
    }

    // MARK: - Changes (each throws Apple's error)

    func uploadImage(_ id: String, png: [UInt8], size: ImageSize, now: Int64) throws(FakeServerAPI.Failure) {
        try Self.requireUUID(id, name: "imageIdentifier")
        guard images[id] == nil else { throw .init(status: 409, code: .imageAlreadyExists, message: "The image identifier already exists.") }
        guard images.count < Self.maxImages else {
            throw .init(status: 403, code: .maximumNumberOfImagesReached, message: "At most \(Self.maxImages) images.")
        }
        guard let (width, height) = Self.pngDimensions(png) else { throw .init(status: 400, code: .invalidImage, message: "Not a PNG image.") }
        if size == .fullSize, width != 3840 || !(160...2160).contains(height) {
            throw .init(status: 400, code: .invalidImage, message: "A full-size image is 3840 pixels wide and 160 to 2160 high.")
        }
        images[id] = Image(size: size, uploadedAt: now)
        imageOrder.append(id)
    }

    func deleteImage(_ id: String) throws(FakeServerAPI.Failure) {
        guard images[id] != nil else { throw .init(status: 404, code: .imageNotFound, message: "Image not found.") }
        let used = messages.values.contains { message in
            message.body.image?.imageIdentifier == id || (message.body.bulletPoints ?? []).contains { $0.imageIdentifier == id }
        }
        if used { throw .init(status: 403, code: .imageInUse, message: "A message uses this image.") }
        images[id] = nil
        imageOrder.removeAll { $0 == id }
    }

    func uploadMessage(_ id: String, _ body: UploadMessageRequestBody, now: Int64) throws(FakeServerAPI.Failure) {
        typealias Limits = UploadMessageRequestBody
        try Self.requireUUID(id, name: "messageIdentifier")
        guard messages[id] == nil else { throw .init(status: 409, code: .messageAlreadyExists, message: "The message identifier already exists.") }
        guard let header = body.header, !header.isEmpty, let text = body.body, !text.isEmpty else {
            throw .init(status: 400, code: .generalBadRequest, message: "header and body are required.")
        }
        guard header.count <= Limits.maxHeaderLength else { throw .init(status: 400, code: .headerTooLong, message: "The header is too long.") }
        guard text.count <= Limits.maxBodyLength else { throw .init(status: 400, code: .bodyTooLong, message: "The body is too long.") }
        if let image = body.image {
            guard (image.altText ?? "").count <= Limits.maxAltTextLength else {
                throw .init(status: 400, code: .altTextTooLong, message: "The alternative text is too long.")
            }
            guard let imageId = image.imageIdentifier, images[imageId] != nil else {
                throw .init(status: 404, code: .imageNotFound, message: "Image not found.")
            }
        } else if body.headerPosition == .aboveImage {
            throw .init(status: 400, code: .badRequestAboveImageRequiresAnImage, message: "ABOVE_IMAGE needs an image.")
        }
        let bullets = body.bulletPoints ?? []
        guard bullets.count <= Limits.maxBulletPoints else {
            throw .init(status: 400, code: .badRequestTooManyBulletPoints, message: "At most \(Limits.maxBulletPoints) bullet points.")
        }
        for bullet in bullets {
            guard (bullet.text ?? "").count <= Limits.maxBulletPointTextLength else {
                throw .init(status: 400, code: .badRequestBulletPointTextTooLong, message: "A bullet point's text is too long.")
            }
            guard (bullet.altText ?? "").count <= Limits.maxAltTextLength else {
                throw .init(status: 400, code: .altTextTooLong, message: "The alternative text is too long.")
            }
            guard let imageId = bullet.imageIdentifier, images[imageId] != nil else {
                throw .init(status: 404, code: .imageNotFound, message: "Image not found.")
            }
        }
        messages[id] = Message(body: body, uploadedAt: now)
        messageOrder.append(id)
    }

    func deleteMessage(_ id: String) throws(FakeServerAPI.Failure) {
        guard messages[id] != nil else { throw .init(status: 404, code: .messageNotFound, message: "Message not found.") }
        messages[id] = nil
        messageOrder.removeAll { $0 == id }
    }

    func configureDefault(productId: String, locale: String, messageId: String?, now: Int64) throws(FakeServerAPI.Failure) {
        try Self.requireLocale(locale)
        guard let messageId, let message = messages[messageId] else {
            throw .init(status: 404, code: .messageNotFound, message: "Message not found.")
        }
        guard state(ofMessage: messageId, now: now) == .approved else {
            throw .init(status: 403, code: .messageNotApproved, message: "The message is not approved.")
        }
        if let imageId = message.body.image?.imageIdentifier, state(ofImage: imageId, now: now) != .approved {
            throw .init(status: 403, code: .imageNotApproved, message: "The message's image is not approved.")
        }
        defaults[productId + "/" + locale] = messageId
    }

    func getDefault(productId: String, locale: String) throws(FakeServerAPI.Failure) -> String {
        try Self.requireLocale(locale)
        guard let id = defaults[productId + "/" + locale] else {
            throw .init(status: 404, code: .defaultMessageNotFound, message: "No default message for this product and locale.")
        }
        return id
    }

    func deleteDefault(productId: String, locale: String) throws(FakeServerAPI.Failure) {
        _ = try getDefault(productId: productId, locale: locale)
        defaults[productId + "/" + locale] = nil
    }

    func configureRealtimeURL(_ raw: String?, production: Bool) throws(FakeServerAPI.Failure) {
        guard let raw, raw.count <= RealtimeUrlRequest.maxLength, let url = URL(string: raw), let host = url.host, !host.isEmpty,
            url.scheme == "https" || (url.scheme == "http" && ["127.0.0.1", "localhost", "::1"].contains(host))
        else { throw .init(status: 400, code: .badRequestRealtimeURL, message: "realtimeURL must be https:// and at most 256 characters.") }
        if production && !passedPerformanceTest {
            throw .init(status: 403, code: .forbiddenNoPassingTest, message: "Pass a performance test before configuring Production.")
        }
        realtimeURL = raw
    }

    func requireRealtimeURL() throws(FakeServerAPI.Failure) -> String {
        guard let realtimeURL else { throw .init(status: 404, code: .realtimeURLNotFound, message: "No realtime URL is configured.") }
        return realtimeURL
    }

    func deleteRealtimeURL() throws(FakeServerAPI.Failure) {
        _ = try requireRealtimeURL()
        realtimeURL = nil
    }

    // MARK: - Performance tests

    /// Starts a test against the realtime URL; `body` makes each request's JSON body (a freshly signed request).
    func startPerformanceTest(body: @escaping @Sendable () throws -> [UInt8]) throws(FakeServerAPI.Failure) -> PerformanceTestResponse {
        let target = try requireRealtimeURL()
        guard !runs.values.contains(where: { !$0.isFinished }) else {
            throw .init(status: 400, code: .existingPerformanceTestRun, message: "A performance test is already running.")
        }
        let config = performanceTestConfig
        let id = UUID().uuidString.lowercased()
        runs[id] = PerformanceRun(config: config, target: target)
        let http = self.http
        Task { await Self.execute(id: id, config: config, target: target, http: http, body: body, report: self) }
        return PerformanceTestResponse(config: config, requestId: id)
    }

    func performanceTestResult(_ id: String) throws(FakeServerAPI.Failure) -> PerformanceTestResultResponse {
        guard UUID(uuidString: id) != nil else { throw .init(status: 400, code: .invalidRequestId, message: "Invalid request id.") }
        guard let run = runs[id] else { throw .init(status: 404, code: .performanceTestRunNotFound, message: "No such performance test.") }
        return run.result
    }

    func record(_ id: String, _ outcome: PerformanceRun.Outcome) {
        runs[id]?.record(outcome)
        if runs[id]?.result.result == .pass { passedPerformanceTest = true }
    }

    /// Sends `config.totalRequests` requests, at most `config.maxConcurrentRequests` at once, timing each.
    static func execute(
        id: String, config: PerformanceTestConfig, target: String, http: any OutboundHTTP, body: @escaping @Sendable () throws -> [UInt8],
        report: FakeRetentionMessaging
    ) async {
        let total = Int(config.totalRequests ?? 0)
        let concurrency = max(1, Int(config.maxConcurrentRequests ?? 1))
        let threshold = config.responseTimeThreshold ?? 700
        guard let url = URL(string: target) else { return }
        await withTaskGroup(of: Void.self) { group in
            var started = 0
            func launch() {
                group.addTask {
                    let outcome = await attempt(url: url, http: http, body: body, thresholdMilliseconds: threshold)
                    await report.record(id, outcome)
                }
                started += 1
            }
            while started < min(concurrency, total) { launch() }
            while await group.next() != nil { if started < total { launch() } }
        }
    }

    /// One realtime request: success is HTTP 200 with a JSON object within the threshold.
    static func attempt(
        url: URL, http: any OutboundHTTP, body: @Sendable () throws -> [UInt8], thresholdMilliseconds: Int64
    ) async -> PerformanceRun.Outcome {
        guard let bytes = try? body() else { return .init(milliseconds: nil, failure: .other) }
        let request = OutboundRequest(
            method: "POST", url: url, headers: ["Content-Type": "application/json"], body: bytes,
            timeoutSeconds: max(1, Double(thresholdMilliseconds) * 3 / 1000))
        let clock = ContinuousClock()
        let started = clock.now
        do throws(OutboundHTTPError) {
            let response = try await http.send(request)
            let elapsed = started.duration(to: clock.now)
            let milliseconds = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            guard response.status == 200 else { return .init(milliseconds: milliseconds, failure: .unsuccessfulHTTPResponseCode) }
            guard (try? JSONSerialization.jsonObject(with: Data(response.body))) is [String: Any] else {
                return .init(milliseconds: milliseconds, failure: .invalidResponse)
            }
            return .init(milliseconds: milliseconds, failure: milliseconds > thresholdMilliseconds ? .timedOut : nil)
        } catch {
            return .init(milliseconds: nil, failure: error.timedOut ? .timedOut : .noResponse)
        }
    }

    // MARK: - Checks

    static func requireUUID(_ id: String, name: String) throws(FakeServerAPI.Failure) {
        guard UUID(uuidString: id) != nil else { throw .init(status: 400, code: .generalBadRequest, message: "\(name) must be a UUID.") }
    }

    /// A BCP 47-like tag: `en`, `en-US`, `zh-Hant-TW`.
    static func requireLocale(_ locale: String) throws(FakeServerAPI.Failure) {
        let parts = locale.split(separator: "-", omittingEmptySubsequences: false)
        let valid = (2...3).contains(parts[0].count) && parts[0].allSatisfy { $0.isASCII && $0.isLetter }
            && parts.dropFirst().allSatisfy { (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
        guard valid else { throw .init(status: 400, code: .invalidLocale, message: "Invalid locale.") }
    }

    /// Width and height from a PNG's IHDR chunk; nil when the bytes are not a PNG.
    static func pngDimensions(_ bytes: [UInt8]) -> (Int, Int)? {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count >= 24, Array(bytes[0..<8]) == signature, Array(bytes[12..<16]) == Array("IHDR".utf8) else { return nil }
        func int(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (int(16), int(20))
    }
}

/// One performance test's progress and figures.
struct PerformanceRun: Sendable {
    /// One request's answer time (nil: none came) and failure reason (nil: success).
    struct Outcome: Sendable {
        var milliseconds: Int64?
        var failure: SendAttemptResult?
    }

    let config: PerformanceTestConfig
    let target: String
    var times: [Int64] = []
    var successes: Int64 = 0
    var failures: [String: Int64] = [:]
    var done: Int64 = 0

    init(config: PerformanceTestConfig, target: String) {
        self.config = config
        self.target = target
    }

    var total: Int64 { config.totalRequests ?? 0 }
    var isFinished: Bool { done >= total }

    mutating func record(_ outcome: Outcome) {
        done += 1
        if let milliseconds = outcome.milliseconds { times.append(milliseconds) }
        if let failure = outcome.failure { failures[failure.rawValue, default: 0] += 1 } else { successes += 1 }
    }

    /// Apple's answer: `PENDING` until every request is done, then `PASS` or `FAIL` on the success rate.
    var result: PerformanceTestResultResponse {
        let rate = total > 0 ? successes * 100 / total : 0
        let status: PerformanceTestStatus = !isFinished ? .pending : rate >= (config.successRateThreshold ?? 100) ? .pass : .fail
        let sorted = times.sorted()
        func percentile(_ p: Int) -> Int64 {
            guard !sorted.isEmpty else { return 0 }
            let rank = (p * sorted.count + 99) / 100  // nearest rank
            return sorted[min(max(rank, 1), sorted.count) - 1]
        }
        return PerformanceTestResultResponse(
            config: config, target: target, result: status, successRate: rate, numPending: total - done,
            responseTimes: PerformanceTestResponseTimes(
                average: sorted.isEmpty ? 0 : sorted.reduce(0, +) / Int64(sorted.count), p50: percentile(50), p90: percentile(90),
                p95: percentile(95), p99: percentile(99)),
            failures: failures)
    }
}
