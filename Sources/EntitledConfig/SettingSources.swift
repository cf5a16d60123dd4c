import Foundation

/// Where a setting's value came from. Precedence, highest first: a command-line flag, the
/// environment, the configuration file, the built-in default.
public enum SettingSource: Sendable, Equatable, CustomStringConvertible {
    /// A command-line flag (its name, e.g. `--database`).
    case flag(String)
    /// An environment variable (its name, e.g. `ENTITLED_DATABASE`).
    case environment(String)
    /// The configuration file.
    case file
    /// The built-in default.
    case `default`

    /// `flag --database`, `environment ENTITLED_DATABASE`, `file` or `default`.
    public var description: String {
        switch self {
        case .flag(let name): "flag \(name)"
        case .environment(let name): "environment \(name)"
        case .file: "file"
        case .default: "default"
        }
    }
}

/// Where the settings that a flag or the environment can replace came from, so that the start-up
/// line can name each one's source and a file's value replaced by the environment is not silent.
public struct SettingSources: Sendable, Equatable {
    /// The source of `listen`.
    public var listen: SettingSource = .default
    /// The source of `database`.
    public var database: SettingSource = .default
    /// One sentence per value written in the file that the environment replaced (warnings at start).
    public var fileValuesReplacedByEnvironment: [String] = []

    public init() {}
}

extension ConfigurationLoader {
    /// Applies `ENTITLED_LISTEN` / `ENTITLED_DATABASE`, then the flags' values, to `configuration`
    /// and records where each value came from. Paths in these values are relative to the working
    /// directory (those in the file, to the file's folder).
    func applyOverrides(
        to configuration: inout Configuration, listen: String?, database: String?, _ problems: Problems
    ) {
        if let value = environment["ENTITLED_LISTEN"] {
            problems.check { () throws(ConfigurationError) in
                configuration.listen = try Self.listenAddress(value, path: "ENTITLED_LISTEN")
                replaced(&configuration, "listen", by: .environment("ENTITLED_LISTEN"), source: \.listen)
            }
        }
        if let value = environment["ENTITLED_DATABASE"] {
            problems.check { () throws(ConfigurationError) in
                // Replaces the whole `database` of the file, replicas included.
                configuration.database = try Self.databaseURL(value, path: "ENTITLED_DATABASE")
                configuration.databaseReplicas = []
                configuration.databaseReadYourWrites = .allServers
                replaced(&configuration, "database", by: .environment("ENTITLED_DATABASE"), source: \.database)
            }
        }
        if let listen {
            problems.check { () throws(ConfigurationError) in
                configuration.listen = try Self.listenAddress(listen, path: "--listen")
                configuration.sources.listen = .flag("--listen")
            }
        }
        if let database {
            problems.check { () throws(ConfigurationError) in
                configuration.database = try Self.databaseURL(database, path: "--database")
                configuration.databaseReplicas = []
                configuration.databaseReadYourWrites = .allServers
                configuration.sources.database = .flag("--database")
            }
        }
    }

    private func replaced(
        _ configuration: inout Configuration, _ key: String, by source: SettingSource,
        source keyPath: WritableKeyPath<SettingSources, SettingSource>
    ) {
        if configuration.sources[keyPath: keyPath] == .file {
            configuration.sources.fileValuesReplacedByEnvironment.append(
                "the file's \(key) is replaced by \(source): unset the variable to use the file's value")
        }
        configuration.sources[keyPath: keyPath] = source
    }
}
