/// The models of Apple's Retention Messaging API (messages, images, default messages, the realtime
/// URL and the performance test), under Apple's names. Identifiers are the UUID strings the caller
/// chose at upload.

/// The review state of an uploaded message (`messageState`).
public struct MessageState: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let pending = MessageState(rawValue: "PENDING")
    /// Only an approved message can be shown or configured as a default.
    public static let approved = MessageState(rawValue: "APPROVED")
    public static let rejected = MessageState(rawValue: "REJECTED")

    public static let known: [MessageState] = [.pending, .approved, .rejected]
}

/// The review state of an uploaded image (`imageState`).
public struct ImageState: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let pending = ImageState(rawValue: "PENDING")
    public static let approved = ImageState(rawValue: "APPROVED")
    public static let rejected = ImageState(rawValue: "REJECTED")

    public static let known: [ImageState] = [.pending, .approved, .rejected]
}

/// What an image is for (`imageSize`): above a message body, or as a bullet point's icon.
public struct ImageSize: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let fullSize = ImageSize(rawValue: "FULL_SIZE")
    public static let bulletPoint = ImageSize(rawValue: "BULLET_POINT")

    public static let known: [ImageSize] = [.fullSize, .bulletPoint]

    /// The largest image file Entitled uploads (Apple's full-size images are PNGs of at most 3840 × 2160).
    public static let maxUploadBytes = 16 * 1024 * 1024
}

/// Where a message's header goes (`headerPosition`); Apple's default is above the body.
public struct HeaderPosition: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let aboveBody = HeaderPosition(rawValue: "ABOVE_BODY")
    /// Needs the message to have an image.
    public static let aboveImage = HeaderPosition(rawValue: "ABOVE_IMAGE")

    public static let known: [HeaderPosition] = [.aboveBody, .aboveImage]
}

/// The outcome of a performance test (`PerformanceTestStatus`).
public struct PerformanceTestStatus: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Still running.
    public static let pending = PerformanceTestStatus(rawValue: "PENDING")
    public static let pass = PerformanceTestStatus(rawValue: "PASS")
    public static let fail = PerformanceTestStatus(rawValue: "FAIL")

    public static let known: [PerformanceTestStatus] = [.pending, .pass, .fail]
}

/// An image shown with a message, and its alternative text (`UploadMessageImage`).
public struct UploadMessageImage: Sendable, Hashable, Codable {
    public var imageIdentifier: String?
    /// At most 150 characters.
    public var altText: String?

    public init(imageIdentifier: String? = nil, altText: String? = nil) {
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// One bullet point of a message: its text and icon (`BulletPoint`).
public struct BulletPoint: Sendable, Hashable, Codable {
    /// At most 66 characters.
    public var text: String?
    /// A `BULLET_POINT` image.
    public var imageIdentifier: String?
    /// At most 150 characters.
    public var altText: String?

    public init(text: String? = nil, imageIdentifier: String? = nil, altText: String? = nil) {
        self.text = text
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// The body of Upload Message (`UploadMessageRequestBody`).
public struct UploadMessageRequestBody: Sendable, Hashable, Codable {
    /// At most 66 characters.
    public var header: String?
    /// At most 144 characters.
    public var body: String?
    public var image: UploadMessageImage?
    public var headerPosition: HeaderPosition?
    /// At most 5.
    public var bulletPoints: [BulletPoint]?

    /// Apple's limits on the texts (characters) and on the bullet points.
    public static let maxHeaderLength = 66
    public static let maxBodyLength = 144
    public static let maxAltTextLength = 150
    public static let maxBulletPoints = 5
    public static let maxBulletPointTextLength = 66

    public init(
        header: String? = nil, body: String? = nil, image: UploadMessageImage? = nil, headerPosition: HeaderPosition? = nil,
        bulletPoints: [BulletPoint]? = nil
    ) {
        self.header = header
        self.body = body
        self.image = image
        self.headerPosition = headerPosition
        self.bulletPoints = bulletPoints
    }
}

/// One message of Get Message List.
public struct GetMessageListResponseItem: Sendable, Hashable, Codable {
    public var messageIdentifier: String?
    public var messageState: MessageState?

    public init(messageIdentifier: String? = nil, messageState: MessageState? = nil) {
        self.messageIdentifier = messageIdentifier
        self.messageState = messageState
    }
}

/// The answer of Get Message List.
public struct GetMessageListResponse: Sendable, Hashable, Codable {
    public var messageIdentifiers: [GetMessageListResponseItem]?

    public init(messageIdentifiers: [GetMessageListResponseItem]? = nil) { self.messageIdentifiers = messageIdentifiers }
}

/// One image of Get Image List.
public struct GetImageListResponseItem: Sendable, Hashable, Codable {
    public var imageIdentifier: String?
    public var imageState: ImageState?
    public var imageSize: ImageSize?

    public init(imageIdentifier: String? = nil, imageState: ImageState? = nil, imageSize: ImageSize? = nil) {
        self.imageIdentifier = imageIdentifier
        self.imageState = imageState
        self.imageSize = imageSize
    }
}

/// The answer of Get Image List.
public struct GetImageListResponse: Sendable, Hashable, Codable {
    public var imageIdentifiers: [GetImageListResponseItem]?

    public init(imageIdentifiers: [GetImageListResponseItem]? = nil) { self.imageIdentifiers = imageIdentifiers }
}

/// The body of Configure Default Message (`DefaultConfigurationRequest`).
public struct DefaultConfigurationRequest: Sendable, Hashable, Codable {
    public var messageIdentifier: String?

    public init(messageIdentifier: String? = nil) { self.messageIdentifier = messageIdentifier }
}

/// The answer of Get Default Message (`DefaultConfigurationResponse`).
public struct DefaultConfigurationResponse: Sendable, Hashable, Codable {
    public var messageIdentifier: String?

    public init(messageIdentifier: String? = nil) { self.messageIdentifier = messageIdentifier }
}

/// The body of Configure Realtime URL (`RealtimeUrlRequest`).
public struct RealtimeUrlRequest: Sendable, Hashable, Codable {
    /// `https://…`, at most 256 characters.
    public var realtimeURL: String?

    /// Apple's limit on the URL's length.
    public static let maxLength = 256

    public init(realtimeURL: String? = nil) { self.realtimeURL = realtimeURL }
}

/// The answer of Get Realtime URL (`RealtimeUrlResponse`).
public struct RealtimeUrlResponse: Sendable, Hashable, Codable {
    public var realtimeURL: String?

    public init(realtimeURL: String? = nil) { self.realtimeURL = realtimeURL }
}

/// The body of Initiate Performance Test: an active Sandbox subscription to ask about.
public struct PerformanceTestRequest: Sendable, Hashable, Codable {
    public var originalTransactionId: String?

    public init(originalTransactionId: String? = nil) { self.originalTransactionId = originalTransactionId }
}

/// How a performance test runs and what passes it (`PerformanceTestConfig`).
public struct PerformanceTestConfig: Sendable, Hashable, Codable {
    public var maxConcurrentRequests: Int64?
    public var totalRequests: Int64?
    /// Milliseconds.
    public var totalDuration: Int64?
    /// Milliseconds: a later answer is a failure (`TIMED_OUT`).
    public var responseTimeThreshold: Int64?
    /// Percent of requests that must succeed.
    public var successRateThreshold: Int64?

    public init(
        maxConcurrentRequests: Int64? = nil, totalRequests: Int64? = nil, totalDuration: Int64? = nil,
        responseTimeThreshold: Int64? = nil, successRateThreshold: Int64? = nil
    ) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}

/// The answer of Initiate Performance Test (`PerformanceTestResponse`).
public struct PerformanceTestResponse: Sendable, Hashable, Codable {
    public var config: PerformanceTestConfig?
    /// Ask Get Performance Test Results with it.
    public var requestId: String?

    public init(config: PerformanceTestConfig? = nil, requestId: String? = nil) {
        self.config = config
        self.requestId = requestId
    }
}

/// Response-time figures of a performance test, in milliseconds (`PerformanceTestResponseTimes`).
public struct PerformanceTestResponseTimes: Sendable, Hashable, Codable {
    public var average: Int64?
    public var p50: Int64?
    public var p90: Int64?
    public var p95: Int64?
    public var p99: Int64?

    public init(average: Int64? = nil, p50: Int64? = nil, p90: Int64? = nil, p95: Int64? = nil, p99: Int64? = nil) {
        self.average = average
        self.p50 = p50
        self.p90 = p90
        self.p95 = p95
        self.p99 = p99
    }
}

/// The answer of Get Performance Test Results (`PerformanceTestResultResponse`).
public struct PerformanceTestResultResponse: Sendable, Hashable, Codable {
    public var config: PerformanceTestConfig?
    /// The URL tested.
    public var target: String?
    public var result: PerformanceTestStatus?
    /// Percent of the requests answered in time and well.
    public var successRate: Int64?
    /// Requests not answered yet.
    public var numPending: Int64?
    public var responseTimes: PerformanceTestResponseTimes?
    /// Failed requests by reason (``SendAttemptResult`` raw values such as `TIMED_OUT`).
    public var failures: [String: Int64]?

    public init(
        config: PerformanceTestConfig? = nil, target: String? = nil, result: PerformanceTestStatus? = nil, successRate: Int64? = nil,
        numPending: Int64? = nil, responseTimes: PerformanceTestResponseTimes? = nil, failures: [String: Int64]? = nil
    ) {
        self.config = config
        self.target = target
        self.result = result
        self.successRate = successRate
        self.numPending = numPending
        self.responseTimes = responseTimes
        self.failures = failures
    }
}
