import Foundation

/// A customer's answer as it arrived: its bytes, how long the server lets it be served without
/// asking again (`Cache-Control: max-age`), and where it sits on the local clocks.
struct CachedAnswer: Codable, Sendable {
    /// The customer and the environment asked for (``AnswerCache/key(appUserId:environment:)``).
    var key: String
    var body: Data
    var maxAgeSeconds: Int
    var anchor: TimeAnchor

    /// Decoded once per load.
    var answer: CustomerAnswer { get throws { try CustomerAnswer.decode(body) } }
}

/// Answers in memory and, when given a directory (an app group container, so an extension sees
/// what the app fetched), on disk: one file per customer, written atomically. The disk copy lets
/// a relaunched app that is offline keep its access, within the answer's own validity.
struct AnswerCache {
    private let directory: URL?
    private var memory: [String: (entry: CachedAnswer, answer: CustomerAnswer)] = [:]
    /// The latest trusted time this device has reached (persisted): after a relaunch, the wall
    /// clock cannot rewind below it.
    private(set) var latestTrustedTime: Date?
    private var persistedTrustedTime: Date?

    init(directory: URL?) {
        self.directory = directory
        if let directory, let data = try? Data(contentsOf: directory.appendingPathComponent("trusted-time.json")),
            let seconds = try? JSONDecoder().decode(Double.self, from: data)
        {
            latestTrustedTime = Date(timeIntervalSince1970: seconds)
            persistedTrustedTime = latestTrustedTime
        }
    }

    /// One customer's answers in one environment (a Sandbox build and a Production build may share
    /// an app group container).
    static func key(appUserId: String, environment: String?) -> String { "\(environment ?? "")/\(appUserId)" }

    /// The cached answer under `key`, from memory or else from disk.
    mutating func entry(for key: String) -> (entry: CachedAnswer, answer: CustomerAnswer)? {
        if let hit = memory[key] { return hit }
        guard let url = fileURL(key), let data = try? Data(contentsOf: url),
            let entry = try? JSONDecoder().decode(CachedAnswer.self, from: data), entry.key == key,
            let answer = try? entry.answer
        else { return nil }
        memory[key] = (entry, answer)
        return (entry, answer)
    }

    /// Keeps `entry` unless the cache already holds a newer answer (by server time): a slow
    /// background refresh must not overwrite what a purchase just returned.
    mutating func store(_ entry: CachedAnswer, answer: CustomerAnswer) {
        if let held = memory[entry.key], held.answer.serverTime > answer.serverTime { return }
        memory[entry.key] = (entry, answer)
        if let url = fileURL(entry.key), let data = try? JSONEncoder().encode(entry) {
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? data.write(to: url, options: Self.writeOptions)
        }
        observe(trustedTime: answer.serverTime)
    }

    /// Records that trusted time has reached `time`. Written to disk when it is a minute past what
    /// was last written: an app asking often must not write a file each time, and a floor a
    /// minute behind costs nothing.
    mutating func observe(trustedTime time: Date) {
        guard latestTrustedTime.map({ time > $0 }) ?? true else { return }
        latestTrustedTime = time
        guard persistedTrustedTime.map({ time.timeIntervalSince($0) >= 60 }) ?? true else { return }
        persistedTrustedTime = time
        if let directory, let data = try? JSONEncoder().encode(time.timeIntervalSince1970) {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try? data.write(to: directory.appendingPathComponent("trusted-time.json"), options: Self.writeOptions)
        }
    }

    /// Atomic; on Apple platforms readable once the device was first unlocked (a widget or a
    /// background refresh may run while it is locked), encrypted before that.
    #if canImport(Darwin)
        static let writeOptions: Data.WritingOptions = [.atomic, .completeFileProtectionUntilFirstUserAuthentication]
    #else
        static let writeOptions: Data.WritingOptions = [.atomic]
    #endif

    /// `customer-<FNV-1a 64 of the key>.json`: ids may be long or hold any character; the file
    /// repeats the key, which is checked on load, so a hash collision reads as a miss.
    private func fileURL(_ key: String) -> URL? {
        guard let directory else { return nil }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return directory.appendingPathComponent("customer-\(String(repeating: "0", count: 16 - hex.count) + hex).json")
    }
}
