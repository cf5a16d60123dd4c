import EntitledConfig
import Foundation

/// The plain line `entitled serve` prints at start (on standard error, beside the JSON logs) when
/// its configuration lets nobody ask anything: no API keys and no apps, as with no configuration
/// file at all (`scripts/run`). It says what to do next.
public enum StartupHint {
    /// The line for a server listening at `address`, or nil when the configuration has keys or apps.
    public static func line(for configuration: Configuration, address: String) -> String? {
        guard configuration.apiKeys.isEmpty && configuration.apps.isEmpty else { return nil }
        return "entitled: listening on http://\(address) with no API keys and no apps, so it can answer nothing yet."
            + " Next: copy examples/entitled.json (every key explained, docs/configuration.md) and start with"
            + " --config FILE, or run 'scripts/run dev' for a server with a simulated App Store and a dashboard."
    }

    /// Prints the line, if any, on standard error.
    static func print(for configuration: Configuration, address: String) {
        guard let line = line(for: configuration, address: address) else { return }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
