import Synchronization

/// Keeps a file store's WAL from growing without end under sustained writes.
///
/// The checkpointer's `PASSIVE` checkpoints copy the WAL into the database file beside the writer,
/// but SQLite starts the WAL over only once a checkpoint has copied all of it and no reader still
/// reads from it. Under a steady stream of group commits that never happens by itself: each group
/// appends before the checkpointer catches up. A `RESTART` checkpoint must hold the write lock,
/// and one run from another connection waits for it in vain: the writer takes the lock again
/// within microseconds of each commit while the busy handler polls every few milliseconds, so
/// under load such a checkpoint ends its whole busy timeout without the lock, and the WAL keeps
/// growing (docs/storage.md gives the figures).
///
/// So the checkpointer only measures (``note(frames:)``) and the writer, which holds the write lock
/// whenever anyone does, restarts the WAL itself between two groups (``afterCommit(on:)``). What is
/// left to copy then is what the writer appended since the checkpointer's last pass. A reader in
/// the middle of a read (microseconds) is waited for briefly; one that reads for longer (a backup,
/// an export) makes the try fail, and the next comes after the checkpointer's next pass, not
/// after every commit, so the writer does not copy frames at each group while it lasts.
final class WALRestart: Sendable {
    /// WAL frames (pages) past which the writer restarts the WAL.
    let pages: Int64
    /// How long a try waits for a reader to leave the WAL or the checkpointer's pass to end.
    static let waitMilliseconds: Int32 = 2
    private let wanted = Atomic<Bool>(false)

    init(pages: Int64) {
        self.pages = max(1, pages)
    }

    /// The checkpointer's count of frames in the WAL after its pass.
    func note(frames: Int64) {
        if frames >= pages { wanted.store(true, ordering: .releasing) }
    }

    /// On the writer's `connection`, outside any transaction: one try at restarting the WAL when
    /// the checkpointer's last pass found it past ``pages``. Returns whether it restarted.
    func afterCommit(on connection: SQLiteConnection) -> Bool {
        guard wanted.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        return connection.restartWAL(waitMilliseconds: Self.waitMilliseconds)
    }
}
