/// Writer-thread counters, reported at close to ``StoreConfiguration/log`` (benchmarks print them).
struct WriterStats {
    var groups = 0
    var jobs = 0
    /// Nanoseconds running jobs (from BEGIN to just before COMMIT).
    var work: UInt64 = 0
    /// Nanoseconds in COMMIT (mostly the fsync).
    var commit: UInt64 = 0
    /// Nanoseconds waiting for a first job, and waiting for a group to fill.
    var idle: UInt64 = 0
    var gather: UInt64 = 0
    /// Nanoseconds resuming callers after commits.
    var resume: UInt64 = 0
    /// Groups run again, with savepoints, after a job failed.
    var retries = 0
    /// Times the writer started the WAL over (``WALRestart``).
    var walRestarts = 0

    /// One `sqlite writer` event: counts, and times in milliseconds (per job and commit in µs).
    func report(to log: StorageLog) {
        guard groups > 0 else { return }
        log(
            "sqlite writer",
            [
                "jobs": "\(jobs)", "groups": "\(groups)", "averageGroup": "\(jobs / groups)",
                "microsecondsPerJob": "\(jobs > 0 ? work / UInt64(jobs) / 1000 : 0)",
                "microsecondsPerCommit": "\(commit / UInt64(groups) / 1000)", "idleMs": "\(idle / 1_000_000)",
                "gatheringMs": "\(gather / 1_000_000)", "workingMs": "\(work / 1_000_000)",
                "committingMs": "\(commit / 1_000_000)", "resumingMs": "\(resume / 1_000_000)", "retried": "\(retries)",
                "walRestarts": "\(walRestarts)",
            ])
    }
}
