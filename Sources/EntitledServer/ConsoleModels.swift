import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// `GET /v1/metrics/overview`: one point per day, week or month. Stocks are the level at the end
/// of the point's last day (UTC); flows are summed over the point's days. Money is in the
/// currency's units (Apple's milli-units / 1000), per currency.
struct OverviewBody: Encodable {
    struct Point: Encodable {
        var date: String
        var activeSubscriptions: Int64 = 0
        var activeTrials: Int64 = 0
        var newSubscriptions: Int64 = 0
        var renewals: Int64 = 0
        var churned: Int64 = 0
        var refunds: Int64 = 0
        var inGracePeriod: Int64 = 0
        var inBillingRetry: Int64 = 0
        var conversions: Int64 = 0
        var recoveries: Int64 = 0
        var mrr: [String: Double] = [:]
        var revenue: [String: Double] = [:]
        var refundAmount: [String: Double] = [:]
        /// MRR summed in `console.reportingCurrency`; absent without one.
        var mrrReported: Reported?
    }

    /// MRR in the reporting currency: the currencies with a rate converted and summed, those
    /// without one listed in `unconverted` (never guessed).
    struct Reported: Encodable, Equatable {
        var currency: String
        var amount: Double
        var unconverted: [String]

        init?(mrr: [String: Double], console: ConsoleSettings) {
            guard let currency = console.reportingCurrency else { return nil }
            self.currency = currency
            var amount = 0.0
            var unconverted: [String] = []
            // Sorted, so the floating-point sum is the same on every call.
            for (code, value) in mrr.sorted(by: { $0.key < $1.key }) {
                if let rate = console.rate(code) { amount += value * rate } else { unconverted.append(code) }
            }
            self.amount = (amount * 100).rounded() / 100
            self.unconverted = unconverted
        }
    }

    var from: String
    var to: String
    var interval: String
    var environment: String
    /// Subscriptions granting access now that no customer has claimed yet (purchases without an
    /// `appAccountToken` the app has not posted): counted in the series like the others.
    var unlinkedActiveSubscriptions: Int64
    var series: [Point]

    init(
        rollup: MetricRollup, from: Int64, to: Int64, interval: OverviewInterval, environment: Environment,
        console: ConsoleSettings
    ) {
        self.from = Self.format(from)
        self.to = Self.format(to)
        self.interval = interval.rawValue
        self.environment = environment.rawValue
        self.unlinkedActiveSubscriptions = rollup.unlinkedActive
        // Stock levels (milli-units for money), carried from day to day.
        var level: [String: Int64] = [:]
        func key(_ d: MetricDelta) -> String { d.kind.rawValue + "\u{0}" + d.currency }
        for delta in rollup.opening { level[key(delta), default: 0] += delta.value }
        var byDay: [Int64: [MetricDelta]] = [:]
        for delta in rollup.days { byDay[delta.day, default: []].append(delta) }
        var series: [Point] = []
        var flows: [String: Int64] = [:]
        var start = from
        for day in from...to {
            for delta in byDay[day] ?? [] {
                if delta.kind.isStock { level[key(delta), default: 0] += delta.value } else { flows[key(delta), default: 0] += delta.value }
            }
            guard day == to || Self.bucketEnds(day, interval: interval) else { continue }
            var point = Self.point(date: start, level: level, flows: flows)
            point.mrrReported = Reported(mrr: point.mrr, console: console)
            series.append(point)
            flows = [:]
            start = day + 1
        }
        self.series = series
    }

    /// Whether `day` is the last of its week (ISO: Sunday) or month.
    static func bucketEnds(_ day: Int64, interval: OverviewInterval) -> Bool {
        switch interval {
        case .day: true
        // 1970-01-01 was a Thursday: day 3 was a Sunday.
        case .week: ((day - 3) % 7 + 7) % 7 == 0
        case .month: Time.civilFromDays(day + 1).day == 1
        }
    }

    static func point(date: Int64, level: [String: Int64], flows: [String: Int64]) -> Point {
        var point = Point(date: format(date))
        for (source, isStock) in [(level, true), (flows, false)] {
            for (key, value) in source {
                let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
                guard let kind = MetricKind(rawValue: String(parts[0])), kind.isStock == isStock else { continue }
                let currency = parts.count > 1 ? String(parts[1]) : ""
                let money = Double(value) / 1000
                switch kind {
                case .activeSubscriptions: point.activeSubscriptions += value
                case .activeTrials: point.activeTrials += value
                case .inGracePeriod: point.inGracePeriod += value
                case .inBillingRetry: point.inBillingRetry += value
                case .newSubscriptions: point.newSubscriptions += value
                case .renewals: point.renewals += value
                case .churned: point.churned += value
                case .refunds: point.refunds += value
                case .conversions: point.conversions += value
                case .recoveries: point.recoveries += value
                case .mrr: if value != 0 { point.mrr[currency] = money }
                case .revenue: if value != 0 { point.revenue[currency] = money }
                case .refundAmount: if value != 0 { point.refundAmount[currency] = money }
                }
            }
        }
        return point
    }

    static func format(_ day: Int64) -> String {
        let (y, m, d) = Time.civilFromDays(day)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(y)-\(two(m))-\(two(d))"
    }

    /// `YYYY-MM-DD` (years 2000…2199, a real date) as days since the epoch.
    static func parseDay(_ text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let y = Int64(parts[0]), let m = Int64(parts[1]), let d = Int64(parts[2]),
              (2000...2199).contains(y), (1...12).contains(m), (1...31).contains(d)
        else { return nil }
        let day = Time.daysFromCivil(year: y, month: m, day: d)
        guard Time.civilFromDays(day) == (y, m, d) else { return nil }  // 2023-02-30 is no date
        return day
    }
}

/// `GET /v1/console/customers`.
struct CustomerSearchBody: Encodable {
    /// A customer, or an unlinked subscription: `appUserId` and `appAccountToken` null, its
    /// `originalTransactionId` set.
    struct Item: Encodable {
        var appUserId: String?
        var appAccountToken: String?
        var originalTransactionId: String?
        var createdAt: String

        init(_ match: CustomerMatch) {
            let unlinked = UnlinkedSubscription.originalTransactionId(match.appUserId)
            appUserId = unlinked == nil ? match.appUserId : nil
            appAccountToken = unlinked == nil ? match.appAccountToken : nil
            originalTransactionId = unlinked
            createdAt = ISO8601.format(milliseconds: match.createdAt)
        }

        enum CodingKeys: CodingKey { case appUserId, appAccountToken, originalTransactionId, createdAt }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(appUserId, forKey: .appUserId)
            try c.encode(appAccountToken, forKey: .appAccountToken)
            if let originalTransactionId { try c.encode(originalTransactionId, forKey: .originalTransactionId) }
            try c.encode(createdAt, forKey: .createdAt)
        }
    }

    var customers: [Item]
    /// Pass as `after` for the next page; null on the last.
    var nextAfter: String?

    enum CodingKeys: CodingKey { case customers, nextAfter }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(customers, forKey: .customers)
        try c.encode(nextAfter, forKey: .nextAfter)
    }
}

/// `GET /v1/console/customers/{appUserId}/timeline`.
struct TimelineBody: Encodable {
    var appUserId: String
    /// Newest first.
    var events: [ConsoleTimeline.Event]
    /// The newest webhook deliveries of this customer's events (empty without webhooks).
    var deliveries: [DeliveryBody]
    /// The newest support actions about this customer (order and refund lookups, extensions).
    var supportActions: [SupportActionBody]
}

/// `GET /v1/console/health`.
struct HealthBody: Encodable {
    struct Hour: Encodable {
        var hour: String
        var accepted: Int64
        var rejected: Int64
    }
    struct Rejection: Encodable {
        var code: String
        var count: Int64
    }
    struct Latest: Encodable {
        var bundleId: String
        var environment: String
        var receivedAt: String
    }
    struct Reconciliation: Encodable {
        var bundleId: String
        var environment: String
        var watermark: String?
        var leased: Bool
    }

    var serverTime: String
    var windowHours: Int
    var hours: [Hour]
    var rejections: [Rejection]
    var lastNotifications: [Latest]
    var reconciledApps: [String]
    var reconciliation: [Reconciliation]
    struct Webhook: Encodable {
        var endpoint: String
        var pending: Int
        var failed: Int
        var lastDeliveredAt: String?
    }
    /// Each configured endpoint's deliveries (empty without webhooks).
    var webhooks: [Webhook]
    struct Export: Encodable {
        var destination: String
        var watermark: String?
        var nextRunAt: String?
        var failures: Int
        var lastSuccessAt: String?
        var lastError: String?
        var running: Bool
    }
    /// Each configured export's state (empty without exports); one that never ran has no row yet.
    var exports: [Export] = []
    /// Google Play purchases 48 to 72 hours old not yet acknowledged; nil without a Play app.
    var playUnacknowledged: Int?
    /// Google Play refund reviews 18 to 24 hours old not yet answered; nil without a Play app.
    var playRefundReviewsNearDeadline: Int?

    init(health: IngestHealth, now: Int64, reconciledApps: Set<String>, webhooks: [WebhookEndpointStatus]) {
        self.webhooks = webhooks.map {
            Webhook(endpoint: $0.endpoint, pending: $0.pending, failed: $0.failed,
                    lastDeliveredAt: $0.lastDeliveredAt.map(ISO8601.format(milliseconds:)))
        }
        serverTime = ISO8601.format(milliseconds: now)
        windowHours = Int(ConsoleRoutes.healthWindow / 3_600_000)
        hours = health.hours.map { Hour(hour: ISO8601.format(milliseconds: $0.hour * 3_600_000), accepted: $0.accepted, rejected: $0.rejected) }
        rejections = health.rejections.map { Rejection(code: $0.code, count: $0.count) }
        lastNotifications = health.latest.map {
            Latest(bundleId: $0.bundleId, environment: $0.environment, receivedAt: ISO8601.format(milliseconds: $0.receivedAt))
        }
        self.reconciledApps = reconciledApps.sorted()
        reconciliation = health.reconciliation.map {
            Reconciliation(
                bundleId: $0.bundleId, environment: $0.environment, watermark: $0.watermark.map(ISO8601.format(milliseconds:)),
                leased: $0.leased)
        }
    }

    enum CodingKeys: CodingKey {
        case serverTime, windowHours, hours, rejections, lastNotifications, reconciledApps, reconciliation, webhooks, exports, playUnacknowledged,
            playRefundReviewsNearDeadline
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(serverTime, forKey: .serverTime)
        try c.encode(windowHours, forKey: .windowHours)
        try c.encode(hours, forKey: .hours)
        try c.encode(rejections, forKey: .rejections)
        try c.encode(lastNotifications, forKey: .lastNotifications)
        try c.encode(reconciledApps, forKey: .reconciledApps)
        try c.encode(reconciliation, forKey: .reconciliation)
        try c.encode(webhooks, forKey: .webhooks)
        try c.encode(exports, forKey: .exports)
        try c.encodeIfPresent(playUnacknowledged, forKey: .playUnacknowledged)
        try c.encodeIfPresent(playRefundReviewsNearDeadline, forKey: .playRefundReviewsNearDeadline)
    }

    /// The configured exports (by destination, in configuration order) with their stored states.
    static func exports(_ destinations: [String], statuses: [ExportStatus]) -> [Export] {
        destinations.map { destination in
            let status = statuses.first { $0.export == destination }
            return Export(
                destination: destination, watermark: status?.watermark.map(ISO8601.format(milliseconds:)),
                nextRunAt: status.map { ISO8601.format(milliseconds: $0.nextRunAt) }, failures: status?.failures ?? 0,
                lastSuccessAt: status?.lastSuccessAt.map(ISO8601.format(milliseconds:)), lastError: status?.lastError,
                running: status?.running ?? false)
        }
    }
}
