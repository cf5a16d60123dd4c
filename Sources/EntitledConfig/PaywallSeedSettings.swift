import Foundation

/// Offerings, the current one and the targeting rules to start a database with (`paywall`): they
/// are stored once, when the database has never had an offering; from then on the admin API
/// changes them and this section is not read again. The server checks each document by the API's
/// own rules when it starts (a bad one stops it).
public struct PaywallSeed: Sendable, Equatable {
    /// One offering: its id and its JSON (the body of `PUT /v1/offerings/{offeringId}`).
    public struct Offering: Sendable, Equatable {
        public var id: String
        public var json: [UInt8]

        public init(id: String, json: [UInt8]) {
            self.id = id
            self.json = json
        }
    }

    public var offerings: [Offering]
    public var currentOffering: String?
    /// The body of `PUT /v1/targeting` (`{"rules": […]}`), when rules are given.
    public var targeting: [UInt8]?

    public init(offerings: [Offering] = [], currentOffering: String? = nil, targeting: [UInt8]? = nil) {
        self.offerings = offerings
        self.currentOffering = currentOffering
        self.targeting = targeting
    }
}

extension ConfigurationLoader {
    func paywallSeed(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> PaywallSeed {
        var object = try node.object()
        var seed = PaywallSeed()
        object.read("offerings", problems) { node throws(ConfigurationError) in
            for entry in try node.array() {
                _ = try entry.object()
                guard let id = (entry.value as? [String: Any])?["id"] as? String, !id.isEmpty else {
                    throw ConfigurationError(path: entry.path + ".id", message: "required: the offering's id")
                }
                guard !seed.offerings.contains(where: { $0.id == id }) else {
                    throw ConfigurationError(path: entry.path + ".id", message: "duplicate offering id '\(id)'")
                }
                seed.offerings.append(PaywallSeed.Offering(id: id, json: try Self.json(entry)))
            }
        }
        object.read("currentOffering", problems) { node throws(ConfigurationError) in
            let id = try node.string()
            guard seed.offerings.contains(where: { $0.id == id }) else {
                throw ConfigurationError(path: node.path, message: "no offering '\(id)' in paywall.offerings")
            }
            seed.currentOffering = id
        }
        object.read("targeting", problems) { node throws(ConfigurationError) in
            _ = try node.array()
            seed.targeting = try Self.json(Node(["rules": node.value], path: node.path))
        }
        object.finish(problems)
        return seed
    }

    /// A node's value as JSON text.
    static func json(_ node: Node) throws(ConfigurationError) -> [UInt8] {
        guard let data = try? JSONSerialization.data(withJSONObject: node.value, options: [.sortedKeys]) else {
            throw ConfigurationError(path: node.path, message: "not JSON")
        }
        return Array(data)
    }
}
