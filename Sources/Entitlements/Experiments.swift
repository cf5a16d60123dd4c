// Experiments: an audience split between offerings by weight. Each customer's variant is a pure
// function of the experiment's id and the customer's id (a SHA-256 bucket), the same on every
// server; once recorded (the customer's first exposure) the enrolment is what counts.

/// Where an experiment stands.
public enum ExperimentStatus: String, Hashable, Sendable, Codable, CaseIterable {
    /// Enrols the customers of its audience and shows each one their variant.
    case running
    /// Enrols no one more; customers already enrolled keep seeing their variant.
    case paused
    /// Shows nothing to anyone (its results stay readable). Final.
    case ended
}

/// One arm of an experiment: the offering it shows and its share of the audience.
public struct ExperimentVariant: Hashable, Sendable, Codable {
    public var offeringId: String
    /// A positive integer; the variant's share is its weight over the sum of the weights.
    public var weight: Int

    public init(offeringId: String, weight: Int) {
        self.offeringId = offeringId
        self.weight = weight
    }
}

/// An experiment: who may be enrolled (``audience``, the targeting rules' conditions) and how
/// they are split (``variants``, in order).
public struct Experiment: Hashable, Sendable, Codable {
    public var id: String
    public var variants: [ExperimentVariant]
    public var audience: TargetingConditions
    public var status: ExperimentStatus

    public init(id: String, variants: [ExperimentVariant], audience: TargetingConditions = TargetingConditions(), status: ExperimentStatus) {
        self.id = id
        self.variants = variants
        self.audience = audience
        self.status = status
    }
}

/// A customer's recorded enrolment in an experiment (their first exposure).
public struct ExperimentEnrolment: Hashable, Sendable {
    public var experimentId: String
    /// The variant's index in the experiment's ``Experiment/variants``.
    public var variant: Int
    public var offeringId: String
    /// When it was recorded (epoch ms).
    public var enrolledAt: Int64

    public init(experimentId: String, variant: Int, offeringId: String, enrolledAt: Int64) {
        self.experimentId = experimentId
        self.variant = variant
        self.offeringId = offeringId
        self.enrolledAt = enrolledAt
    }
}

/// The experiment variant a customer sees.
public struct ExperimentAssignment: Hashable, Sendable {
    public var experimentId: String
    public var variant: Int
    public var offeringId: String
    /// Whether this exposure enrols the customer (no enrolment was recorded yet): the caller
    /// records it.
    public var enrols: Bool

    public init(experimentId: String, variant: Int, offeringId: String, enrols: Bool) {
        self.experimentId = experimentId
        self.variant = variant
        self.offeringId = offeringId
        self.enrols = enrols
    }
}

/// The deterministic split: `SHA-256(experimentId ‖ 0x1F ‖ appUserId)` (UTF-8), its first 8 bytes
/// as a big-endian unsigned integer `u`, so `u / 2^64` is uniform in [0, 1); the variant is the
/// first whose cumulative weight exceeds `u / 2^64 × total`, computed exactly as
/// `⌊u × total / 2^64⌋ < cumulative`. Any system can recompute a customer's variant.
public enum ExperimentBucketing {
    /// The bytes hashed for `appUserId` in `experimentId`.
    public static func key(experimentId: String, appUserId: String) -> [UInt8] {
        Array(experimentId.utf8) + [0x1F] + Array(appUserId.utf8)
    }

    /// The first 8 bytes of `digest`, big-endian: the customer's point, as `u` of `u / 2^64`.
    public static func point(digest: [UInt8]) -> UInt64 {
        digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The index of the variant `point` falls in, by `weights` (each positive).
    public static func variant(point: UInt64, weights: [Int]) -> Int {
        let total = weights.reduce(0, +)
        guard total > 0 else { return 0 }
        let slot = Int(point.multipliedFullWidth(by: UInt64(total)).high)
        var cumulative = 0
        for (index, weight) in weights.enumerated() {
            cumulative += weight
            if slot < cumulative { return index }
        }
        return weights.count - 1
    }

    /// The variant of `appUserId` in `experiment`; `sha256` is SHA-256 (the core links no
    /// cryptography library: the caller passes its own).
    public static func variant(of appUserId: String, in experiment: Experiment, sha256: ([UInt8]) -> [UInt8]) -> Int {
        variant(point: point(digest: sha256(key(experimentId: experiment.id, appUserId: appUserId))), weights: experiment.variants.map(\.weight))
    }
}

/// The experiment variant `appUserId` sees now, if any:
/// - enrolled in an experiment that is running or paused (the earliest such enrolment): its
///   recorded variant, whatever the audience says now (a customer stays in their arm);
/// - else the first running experiment (by id) whose ``Experiment/audience`` holds for `audience`
///   enrols them in their bucket's variant (``ExperimentBucketing``);
/// - else none (targeting decides). An ended experiment shows nothing.
public func assignExperiment(
    experiments: [Experiment], enrolments: [ExperimentEnrolment], appUserId: String, audience: Audience,
    sha256: ([UInt8]) -> [UInt8]
) -> ExperimentAssignment? {
    let byId = Dictionary(experiments.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    let live = enrolments.filter { enrolment in
        guard let experiment = byId[enrolment.experimentId], experiment.status != .ended else { return false }
        return experiment.variants.indices.contains(enrolment.variant)
            && experiment.variants[enrolment.variant].offeringId == enrolment.offeringId
    }
    if let kept = live.min(by: { ($0.enrolledAt, $0.experimentId) < ($1.enrolledAt, $1.experimentId) }) {
        return ExperimentAssignment(experimentId: kept.experimentId, variant: kept.variant, offeringId: kept.offeringId, enrols: false)
    }
    let enrolled = Set(enrolments.map(\.experimentId))
    for experiment in experiments.sorted(by: { $0.id < $1.id })
    where experiment.status == .running && !experiment.variants.isEmpty && !enrolled.contains(experiment.id)
        && experiment.audience.matches(audience)
    {
        let variant = ExperimentBucketing.variant(of: appUserId, in: experiment, sha256: sha256)
        return ExperimentAssignment(
            experimentId: experiment.id, variant: variant, offeringId: experiment.variants[variant].offeringId, enrols: true)
    }
    return nil
}
