import Foundation

/// `bench api`'s reads reference: nginx serving a customer's answer as a static file under the
/// same wrk load as the customer reads, so the reads' rate and tail read against what a static
/// server reaches on the same machine in the same run.
extension APIBenchmark {
    /// wrk with `arguments` (the reads' own, the URL last) against nginx serving `answer` for every
    /// path, or nil (having said so) when nginx is not installed.
    static func nginxReference(answer: [UInt8], folder: URL, wrk: String, arguments: (String) -> [String]) async throws -> WrkReport? {
        guard let nginx = Executable.find("nginx") else {
            print("nginx not installed: no reads reference (apt-get install nginx, or scripts/install-deps.sh --bench)")
            return nil
        }
        let prefix = folder.appendingPathComponent("nginx")
        try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true)
        try Data(answer).write(to: prefix.appendingPathComponent("answer.json"))
        let port = try ServerChild.freePort()
        let config = prefix.appendingPathComponent("nginx.conf")
        try Data(nginxConfiguration(prefix: prefix.path, port: port).utf8).write(to: config)
        let child = try await ServerChild.start(
            executable: nginx, arguments: ["-p", prefix.path, "-c", config.path, "-e", prefix.appendingPathComponent("error.log").path],
            port: port, log: prefix.appendingPathComponent("output.log"))
        do {
            let output = try await Executable.run(wrk, arguments("http://127.0.0.1:\(port)"))
            await child.stop()
            guard let report = WrkReport(parsing: output) else { throw BenchmarkError("could not read wrk's output:\n\(output)") }
            return report
        } catch {
            await child.stop()
            throw error
        }
    }

    /// A minimal nginx configuration: in the foreground, one worker per core, every path under
    /// `prefix` answered with `answer.json` as `application/json`, no access log, every temporary
    /// folder under `prefix` (the defaults are the system's, not writable by everyone), and
    /// keep-alive connections never closed by a request count (the server under test closes none).
    static func nginxConfiguration(prefix: String, port: Int) -> String {
        """
        daemon off;
        worker_processes auto;
        pid \(prefix)/nginx.pid;
        error_log \(prefix)/error.log warn;
        events { worker_connections 1024; }
        http {
          access_log off;
          client_body_temp_path \(prefix)/client_body;
          proxy_temp_path \(prefix)/proxy;
          fastcgi_temp_path \(prefix)/fastcgi;
          uwsgi_temp_path \(prefix)/uwsgi;
          scgi_temp_path \(prefix)/scgi;
          keepalive_requests 100000000;
          keepalive_timeout 75s;
          server {
            listen 127.0.0.1:\(port);
            root \(prefix);
            location / {
              default_type application/json;
              try_files /answer.json =404;
            }
          }
        }

        """
    }
}
