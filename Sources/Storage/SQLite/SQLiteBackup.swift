import Foundation

// `entitled backup`: a consistent copy of a live SQLite database.

extension SQLiteStore {
    func backup(to path: String) async throws -> BackupReport {
        guard SQLiteFileState(path: path) == .missing else {
            throw StorageError(.invalidArgument, "\(path) already exists: a backup never overwrites a file")
        }
        let partial = path + ".partial"
        // A leftover from an interrupted backup is no copy of anything.
        unlink(partial)
        // The copy holds every customer's data: readable by its owner only, whatever the umask.
        // VACUUM INTO accepts an empty file and keeps its mode.
        let created = Foundation.open(partial, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard created >= 0 else {
            throw StorageError(.unavailable, "cannot create \(partial): \(String(cString: strerror(errno)))")
        }
        _ = fchmod(created, 0o600)
        _ = Foundation.close(created)
        let copy: @Sendable (any SQLSession) throws -> Void = { session in
            // One read transaction: the copy is the database as of one instant, while the writer
            // goes on committing (WAL). SQLite does not fsync the file it writes: done below.
            try session.query("VACUUM INTO \(partial)")
        }
        do {
            switch location {
            case .memory:
                try await read(copy)
            case .file(let source):
                // A connection of its own, as for the integrity check: the copy may take a while.
                // Read-only, but not `query_only` (the read pool's setting), which refuses VACUUM INTO.
                let connection = try SQLiteConnection(path: source, readOnly: true)
                try connection.execute("PRAGMA busy_timeout = \(max(0, configuration.sqliteBusyTimeoutMilliseconds))")
                try copy(connection)
            }
            try Self.fsync(path: partial)
            guard rename(partial, path) == 0 else {
                throw StorageError(.unavailable, "cannot rename \(partial) to \(path): \(String(cString: strerror(errno)))")
            }
            try Self.fsync(path: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        } catch {
            unlink(partial)
            throw error
        }
        guard case .existing(let bytes) = SQLiteFileState(path: path) else {
            throw StorageError(.internal, "the backup at \(path) is missing after it was written")
        }
        return BackupReport(path: path, bytes: bytes)
    }

    /// Flushes a file (or a folder's entries) to stable storage.
    static func fsync(path: String) throws {
        let descriptor = Foundation.open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw StorageError(.unavailable, "cannot open \(path) to sync it: \(String(cString: strerror(errno)))")
        }
        defer { _ = Foundation.close(descriptor) }
        guard Foundation.fsync(descriptor) == 0 else {
            throw StorageError(.unavailable, "cannot sync \(path): \(String(cString: strerror(errno)))")
        }
    }
}
