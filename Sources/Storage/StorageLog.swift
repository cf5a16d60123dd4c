/// Where Storage reports what it has to say — today the SQLite writer's and syncer's counters at
/// close — as an event name and its fields. The opener passes it in ``StoreConfiguration/log``
/// (the server its log writer, the benchmarks a printer); without one Storage says nothing.
/// Storage never prints and reads no environment variable. Called on Storage's own threads;
/// the fields never hold stored data or secrets.
public typealias StorageLog = @Sendable (_ event: String, _ fields: [String: String]) -> Void
