import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import HTTPClient

/// One `entitled retention …` call of Apple's Retention Messaging API.
public enum RetentionOperation: Sendable {
    case listMessages
    case uploadMessage(id: String, UploadMessageRequestBody)
    case deleteMessage(id: String)
    case listImages
    case uploadImage(id: String, png: [UInt8], size: ImageSize?)
    case deleteImage(id: String)
    case getDefault(productId: String, locale: String)
    case setDefault(productId: String, locale: String, messageId: String)
    case deleteDefault(productId: String, locale: String)
    case getURL
    case setURL(String)
    case deleteURL
    case startPerformanceTest(originalTransactionId: String)
    /// With `wait`, asks again every ``RetentionCalls/pollMilliseconds`` while the test is `PENDING`.
    case performanceTestResult(requestId: String, wait: Bool)
}

/// Runs `operation` for the app `bundleId` (nil: the only app with `serverAPI`) against
/// `environment` (nil: the app's first of Production and Sandbox) with the app's Server API key,
/// and returns what to print. Opens no database.
/// - Throws: ``StartupError``: `.configuration` when the app cannot be chosen, `.runtime` when Apple
///   refused or could not be reached (Apple's error code and message included).
public func runRetention(
    _ operation: RetentionOperation, configuration: Configuration, bundleId: String?, environment: AppStoreEnvironment?,
    outbound: (any OutboundHTTP)? = nil, clock: any EpochClock = SystemClock()
) async throws(StartupError) -> String {
    let withKeys = configuration.apps.filter { $0.serverAPI != nil }
    let app: String
    if let bundleId {
        guard let found = configuration.app(bundleId: bundleId) else { throw .configuration("--app: no app \(bundleId) in the configuration") }
        guard found.serverAPI != nil else { throw .configuration("--app: \(bundleId) has no serverAPI in the configuration") }
        app = bundleId
    } else {
        guard let only = withKeys.first else { throw .configuration("configuration: no app has serverAPI (see docs/configuration.md)") }
        guard withKeys.count == 1 else { throw .configuration("--app: several apps have serverAPI; name one") }
        app = only.bundleId
    }
    let clients = try buildServerAPIClients(configuration: configuration, clock: clock, outbound: outbound, sleeper: TaskSleeper())
    guard let client = clients[app] else { throw .configuration("--app: \(app) accepts neither Production nor Sandbox") }
    do {
        return try await RetentionCalls(client: client, environment: environment ?? client.settings.environment).run(operation)
    } catch {
        throw .runtime("\(error.description) [\(error.code)]")
    }
}

/// The calls and what each prints.
struct RetentionCalls {
    let client: AppStoreServerAPIClient
    let environment: AppStoreEnvironment
    /// How often a waiting `performance-test result` asks, and for how long at most (Apple's test
    /// takes about a minute).
    static let pollMilliseconds = 1000
    static let maxPolls = 900

    func run(_ operation: RetentionOperation) async throws(ServerAPIError) -> String {
        let env = environment
        switch operation {
        case .listMessages:
            let items = try await client.messageList(environment: env)
            return items.isEmpty ? "no messages" : Self.table(items.map { [$0.messageIdentifier ?? "?", $0.messageState?.rawValue ?? "?"] })
        case .uploadMessage(let id, let body):
            try await client.uploadMessage(messageIdentifier: id, body, environment: env)
            return "uploaded message \(id) (PENDING until Apple approves it; see 'retention messages list')"
        case .deleteMessage(let id):
            try await client.deleteMessage(messageIdentifier: id, environment: env)
            return "deleted message \(id)"
        case .listImages:
            let items = try await client.imageList(environment: env)
            return items.isEmpty
                ? "no images"
                : Self.table(items.map { [$0.imageIdentifier ?? "?", $0.imageState?.rawValue ?? "?", $0.imageSize?.rawValue ?? ""] })
        case .uploadImage(let id, let png, let size):
            try await client.uploadImage(imageIdentifier: id, png: png, imageSize: size, environment: env)
            return "uploaded image \(id) (PENDING until Apple approves it; see 'retention images list')"
        case .deleteImage(let id):
            try await client.deleteImage(imageIdentifier: id, environment: env)
            return "deleted image \(id)"
        case .getDefault(let productId, let locale):
            return try await client.defaultMessage(productId: productId, locale: locale, environment: env)
        case .setDefault(let productId, let locale, let messageId):
            try await client.configureDefaultMessage(productId: productId, locale: locale, messageIdentifier: messageId, environment: env)
            return "default message for \(productId) in \(locale): \(messageId)"
        case .deleteDefault(let productId, let locale):
            try await client.deleteDefaultMessage(productId: productId, locale: locale, environment: env)
            return "deleted the default message for \(productId) in \(locale)"
        case .getURL:
            return try await client.realtimeURL(environment: env)
        case .setURL(let url):
            try await client.configureRealtimeURL(url, environment: env)
            return "\(env.rawValue) realtime URL: \(url)"
        case .deleteURL:
            try await client.deleteRealtimeURL(environment: env)
            return "deleted the \(env.rawValue) realtime URL"
        case .startPerformanceTest(let originalTransactionId):
            let started = try await client.initiatePerformanceTest(originalTransactionId: originalTransactionId)
            return (["requestId \(started.requestId ?? "?")"] + Self.configLines(started.config)).joined(separator: "\n")
        case .performanceTestResult(let requestId, let wait):
            var result = try await client.performanceTestResult(requestId: requestId)
            var polls = 0
            while wait, result.result == .pending, polls < Self.maxPolls {
                do {
                    try await Task.sleep(for: .milliseconds(Self.pollMilliseconds))
                } catch {
                    break  // interrupted: print what is known
                }
                polls += 1
                result = try await client.performanceTestResult(requestId: requestId)
            }
            return Self.resultLines(result).joined(separator: "\n")
        }
    }

    static func configLines(_ config: PerformanceTestConfig?) -> [String] {
        guard let config else { return [] }
        func text(_ value: Int64?) -> String { value.map(String.init) ?? "?" }
        return [
            "config      \(text(config.totalRequests)) requests, at most \(text(config.maxConcurrentRequests)) at once, "
                + "over \(text(config.totalDuration)) ms; pass: \(text(config.successRateThreshold))% answered within "
                + "\(text(config.responseTimeThreshold)) ms",
        ]
    }

    static func resultLines(_ result: PerformanceTestResultResponse) -> [String] {
        func text(_ value: Int64?) -> String { value.map(String.init) ?? "?" }
        var lines = ["result      \(result.result?.rawValue ?? "?")", "target      \(result.target ?? "?")"]
        lines.append("successRate \(text(result.successRate))%   numPending \(text(result.numPending))")
        if let times = result.responseTimes {
            lines.append(
                "ms          average \(text(times.average))  p50 \(text(times.p50))  p90 \(text(times.p90))  p95 \(text(times.p95))  "
                    + "p99 \(text(times.p99))")
        }
        let failures = (result.failures ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        lines.append("failures    " + (failures.isEmpty ? "none" : failures.joined(separator: ", ")))
        return lines + configLines(result.config)
    }

    /// Rows as left-aligned columns.
    static func table(_ rows: [[String]]) -> String {
        // Plain loops: the same as closures over `max() ?? 0`, which took the type checker seconds.
        var widths: [Int] = []
        for row in rows {
            for (column, cell) in row.enumerated() {
                if column == widths.count { widths.append(0) }
                widths[column] = max(widths[column], cell.count)
            }
        }
        var lines: [String] = []
        for row in rows {
            var line = ""
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0)
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// What the console shows of one app's retention messaging in one environment, read from Apple.
struct RetentionSetup: Encodable, Sendable {
    var bundleId: String
    var environment: String
    /// Nil when none is configured.
    var realtimeURL: String?
    var messages: [GetMessageListResponseItem]
    var images: [GetImageListResponseItem]
    /// Why Apple could not be read (the stable code and the message); the lists are then empty.
    var error: String?

    /// Each app with a Server API client, in configuration order, in each of its environments
    /// among Production and Sandbox.
    static func read(apps: [App], clients: [String: AppStoreServerAPIClient]) async -> [RetentionSetup] {
        var out: [RetentionSetup] = []
        for app in apps {
            guard let client = clients[app.bundleId] else { continue }
            for environment in [AppStoreEnvironment.production, .sandbox] where app.environments.contains(environment.rawValue) {
                var setup = RetentionSetup(bundleId: app.bundleId, environment: environment.rawValue, messages: [], images: [])
                do {
                    setup.messages = try await client.messageList(environment: environment)
                    setup.images = try await client.imageList(environment: environment)
                    do {
                        setup.realtimeURL = try await client.realtimeURL(environment: environment)
                    } catch where error.appleErrorCode == .realtimeURLNotFound {
                        setup.realtimeURL = nil
                    }
                } catch {
                    setup.error = "\(error.code): \(error.description)"
                }
                out.append(setup)
            }
        }
        return out
    }
}
