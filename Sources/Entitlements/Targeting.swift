// Which offering a customer's paywall shows: ordered targeting rules over what the app says about
// the customer (storefront, app version, locale, platform, attributes) and the customer's state.

/// A customer's state as targeting sees it, derived from the engine's ``CustomerState``.
public enum AudienceState: String, Hashable, Sendable, Codable, CaseIterable {
    /// Never subscribed nor bought anything (``CustomerClass/new``).
    case new
    /// Has access now (``CustomerClass/active``).
    case active
    /// Had access, has none now (``CustomerClass/inactive``).
    case inactive
    /// Used an introductory offer's chance in some subscription group: Apple gives one per group,
    /// so that group's products no longer offer it.
    case trialUsed
    /// A subscription is in billing retry (Apple keeps trying to charge; no access).
    case billingRetry

    /// Every state `state` is in: its class, and `trialUsed` and `billingRetry` when they hold.
    public static func of(_ state: CustomerState) -> Set<AudienceState> {
        let base: AudienceState =
            switch state.customerClass {
            case .new: .new
            case .active: .active
            case .inactive: .inactive
            }
        var states: Set<AudienceState> = [base]
        if state.subscriptionGroups.contains(where: { !$0.introOfferEligible }) { states.insert(.trialUsed) }
        if state.subscriptionGroups.contains(where: { $0.current?.status == .billingRetry })
            || state.entitlements.contains(where: { $0.status == .billingRetry })
        {
            states.insert(.billingRetry)
        }
        return states
    }
}

/// What a targeting decision knows about the customer and the app asking.
public struct Audience: Hashable, Sendable {
    /// ISO 3166-1 alpha-3, uppercased.
    public var storefront: String?
    /// The app's version (`CFBundleShortVersionString`).
    public var appVersion: String?
    /// A locale identifier (`en_US`, `pt-BR`).
    public var locale: String?
    /// `ios`, `macos`, `android`, …: lowercased.
    public var platform: String?
    /// The customer's attributes by name.
    public var attributes: [String: String]
    /// The states the customer is in (``AudienceState/of(_:)``).
    public var states: Set<AudienceState>

    public init(
        storefront: String? = nil, appVersion: String? = nil, locale: String? = nil, platform: String? = nil,
        attributes: [String: String] = [:], states: Set<AudienceState> = [.new]
    ) {
        self.storefront = storefront
        self.appVersion = appVersion
        self.locale = locale
        self.platform = platform
        self.attributes = attributes
        self.states = states
    }
}

/// A rule's conditions: each one given must hold (a list holds when the customer's value is one
/// of it); none given matches every customer.
public struct TargetingConditions: Hashable, Sendable, Codable {
    /// Storefronts (alpha-3), compared case-insensitively.
    public var storefronts: [String]?
    /// Attribute values the customer must have, exactly.
    public var attributes: [String: String]?
    /// States the customer must be in one of.
    public var states: [AudienceState]?
    /// The lowest app version (semantic comparison, ``SemanticVersion``); an app version that
    /// does not parse, or none, does not match.
    public var minAppVersion: String?
    /// The highest app version, inclusive.
    public var maxAppVersion: String?
    /// Locales: `en` matches `en_US` and `en-GB`; `en_US` matches `en-US` and `en_US` only.
    public var locales: [String]?
    /// Platforms, compared case-insensitively.
    public var platforms: [String]?

    public init(
        storefronts: [String]? = nil, attributes: [String: String]? = nil, states: [AudienceState]? = nil,
        minAppVersion: String? = nil, maxAppVersion: String? = nil, locales: [String]? = nil, platforms: [String]? = nil
    ) {
        self.storefronts = storefronts
        self.attributes = attributes
        self.states = states
        self.minAppVersion = minAppVersion
        self.maxAppVersion = maxAppVersion
        self.locales = locales
        self.platforms = platforms
    }

    /// Whether every condition given holds for `audience`.
    public func matches(_ audience: Audience) -> Bool {
        if let storefronts {
            guard let storefront = audience.storefront?.uppercased(), storefronts.contains(where: { $0.uppercased() == storefront })
            else { return false }
        }
        if let attributes, !attributes.allSatisfy({ audience.attributes[$0.key] == $0.value }) { return false }
        if let states, !states.contains(where: audience.states.contains) { return false }
        if minAppVersion != nil || maxAppVersion != nil {
            guard let version = audience.appVersion.flatMap(SemanticVersion.init) else { return false }
            if let minimum = minAppVersion.flatMap(SemanticVersion.init), version < minimum { return false }
            if let maximum = maxAppVersion.flatMap(SemanticVersion.init), version > maximum { return false }
        }
        if let locales {
            guard let locale = audience.locale, locales.contains(where: { Self.locale(locale, isIn: $0) }) else { return false }
        }
        if let platforms {
            guard let platform = audience.platform?.lowercased(), platforms.contains(where: { $0.lowercased() == platform })
            else { return false }
        }
        return true
    }

    /// Whether `locale` is `pattern` or a more specific locale of it (`-` and `_` alike, any case).
    static func locale(_ locale: String, isIn pattern: String) -> Bool {
        func parts(_ text: String) -> [Substring] { text.lowercased().split(whereSeparator: { $0 == "_" || $0 == "-" }) }
        let asked = parts(locale)
        let wanted = parts(pattern)
        return !wanted.isEmpty && asked.starts(with: wanted)
    }
}

/// One targeting rule: customers matching ``conditions`` see ``offeringId``.
public struct TargetingRule: Hashable, Sendable, Codable {
    public var id: String
    public var conditions: TargetingConditions
    public var offeringId: String

    public init(id: String, conditions: TargetingConditions, offeringId: String) {
        self.id = id
        self.conditions = conditions
        self.offeringId = offeringId
    }
}

/// The offering a customer sees and why.
public struct OfferingChoice: Hashable, Sendable {
    public var offeringId: String
    /// The rule that chose it; nil when it is the current offering.
    public var ruleId: String?

    public init(offeringId: String, ruleId: String?) {
        self.offeringId = offeringId
        self.ruleId = ruleId
    }
}

/// The offering `audience` sees: the first rule (in order) whose conditions hold, else the
/// current offering; nil when no rule matches and none is current.
public func chooseOffering(rules: [TargetingRule], current: String?, audience: Audience) -> OfferingChoice? {
    if let rule = rules.first(where: { $0.conditions.matches(audience) }) {
        return OfferingChoice(offeringId: rule.offeringId, ruleId: rule.id)
    }
    return current.map { OfferingChoice(offeringId: $0, ruleId: nil) }
}

/// A version as apps number them: dot-separated numbers (`2`, `2.4`, `2.4.1`, up to six parts;
/// missing parts are 0), optionally `-` and a pre-release tag, which sorts before the version
/// without one (`2.0-beta` < `2.0`); `+` and build metadata are ignored.
public struct SemanticVersion: Comparable, Hashable, Sendable {
    public var parts: [Int]
    public var preRelease: String?

    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        let withoutBuild = text.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let pieces = withoutBuild.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let numbers = pieces[0].split(separator: ".", omittingEmptySubsequences: false)
        guard (1...6).contains(numbers.count) else { return nil }
        var parts: [Int] = []
        for number in numbers {
            guard (1...9).contains(number.count), number.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(number) else {
                return nil
            }
            parts.append(value)
        }
        while parts.count > 1 && parts.last == 0 { parts.removeLast() }
        self.parts = parts
        if pieces.count == 2 {
            guard !pieces[1].isEmpty else { return nil }
            preRelease = String(pieces[1])
        } else {
            preRelease = nil
        }
    }

    public static func < (a: SemanticVersion, b: SemanticVersion) -> Bool {
        for index in 0..<max(a.parts.count, b.parts.count) {
            let x = index < a.parts.count ? a.parts[index] : 0
            let y = index < b.parts.count ? b.parts[index] : 0
            if x != y { return x < y }
        }
        switch (a.preRelease, b.preRelease) {
        case (nil, nil), (nil, _?): return false
        case (_?, nil): return true
        case (let x?, let y?): return x < y
        }
    }
}
