import AppStoreSimulator
import EntitledServer
import Foundation

/// What `entitled dev` saves to continue after a restart: the simulator's state (its store and
/// virtual time, so that no transaction id is issued twice and time never runs backwards), the
/// charts' day 0 and the seeded scenario's actions still to come.
struct DevState: Sendable, Codable, Equatable {
    /// An action to run when the virtual clock passes `at`.
    struct Scheduled: Sendable, Codable, Equatable {
        var at: Int64
        var request: ActionRequest
    }

    static let currentVersion = 1

    var version = currentVersion
    /// Virtual time when this data folder was first used: day 0 of the charts.
    var origin: Int64
    var scheduled: [Scheduled]
    var simulator: SimulatorState
    /// The fake Google Play's purchases (absent in a state saved without one).
    var play: DevPlay.Saved?
}

/// `entitled dev`'s data folder: the database (`entitled.sqlite`), the simulator's CA
/// (`simulator/`, its root in `simulator-root.der`), the fake Google Play's service-account key
/// (`play-service-account.json`) and the saved ``DevState`` (`dev-state.json`).
/// Only these names are ever removed (`--reset`), so pointing `--data` at a folder that holds
/// anything else never loses it.
struct DevDataFolder: Sendable {
    let url: URL

    var database: URL { url.appendingPathComponent("entitled.sqlite") }
    var stateFile: URL { url.appendingPathComponent("dev-state.json") }
    var caFolder: URL { url.appendingPathComponent("simulator") }
    var rootFile: URL { url.appendingPathComponent("simulator-root.der") }
    /// The fake Google Play's service-account key file, made afresh at each start.
    var playKeyFile: URL { url.appendingPathComponent("play-service-account.json") }

    /// Every name `entitled dev` creates here (SQLite's companions of the database included).
    var entries: [URL] {
        [stateFile, caFolder, rootFile, playKeyFile] + ["", "-wal", "-shm", "-journal"].map { URL(fileURLWithPath: database.path + $0) }
    }

    /// Removes what `entitled dev` keeps here and nothing else.
    func reset() throws(StartupError) {
        for entry in entries where FileManager.default.fileExists(atPath: entry.path) {
            do {
                try FileManager.default.removeItem(at: entry)
            } catch {
                throw .runtime("--reset: cannot remove \(entry.path): \(error.localizedDescription)")
            }
        }
    }

    /// Removes what `entitled dev` put here after a start that failed, and the folder itself when
    /// this start created it and nothing else is in it; errors are ignored (it is already failing).
    func discard(removingFolder: Bool) {
        for entry in entries { try? FileManager.default.removeItem(at: entry) }
        if removingFolder, (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.isEmpty == true {
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// The saved state; nil for a new folder. A database without a saved state (or the other way
    /// round) is refused: the simulator would start its ids and clock over and mix its new state
    /// with the old.
    func load() throws(StartupError) -> DevState? {
        let hasDatabase = FileManager.default.fileExists(atPath: database.path)
        guard FileManager.default.fileExists(atPath: stateFile.path) else {
            guard !hasDatabase else {
                throw .configuration(
                    "\(url.path) holds a database but no saved simulator state (\(stateFile.lastPathComponent)), so the "
                        + "simulator cannot continue it; start afresh with --reset, or choose another --data folder")
            }
            return nil
        }
        let state: DevState
        do {
            state = try JSONDecoder().decode(DevState.self, from: Data(contentsOf: stateFile))
        } catch {
            throw .configuration("\(stateFile.path) cannot be read (\(error)); start afresh with --reset")
        }
        guard state.version == DevState.currentVersion else {
            throw .configuration("\(stateFile.path) is of version \(state.version), not \(DevState.currentVersion); start afresh with --reset")
        }
        guard hasDatabase else {
            throw .configuration("\(url.path) holds a saved simulator state but no database; start afresh with --reset")
        }
        return state
    }

    /// Writes `state` (atomically: a crash leaves the previous one).
    func save(_ state: DevState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(state).write(to: stateFile, options: .atomic)
    }
}
