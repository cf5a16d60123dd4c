extension Schema {
    /// Version 31: the subject time of each unfinished Play acknowledgement job, from its subject
    /// (`subscription|product <purchase time ms> <productId> <purchaseToken>`). A subject of
    /// another shape keeps no time.
    static func dateAcknowledgementJobs(_ session: any SQLSession) throws {
        let jobs = try session.rows(
            "SELECT id, subject FROM jobs WHERE kind = 'playAcknowledge' AND status <> 'done'", as: JobSubject.self)
        let updates: [SQLQuery] = jobs.compactMap { job in
            let words = job.subject.split(separator: " ", omittingEmptySubsequences: false)
            guard words.count == 4, let time = Int64(words[1]) else { return nil }
            return "UPDATE jobs SET subject_time = \(time) WHERE id = \(job.id)"
        }
        if !updates.isEmpty { try session.pipeline(updates) }
    }

    private struct JobSubject: Decodable {
        var id: Int64
        var subject: String
    }
}
