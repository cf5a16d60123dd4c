import HTTPServer

extension HTTPServer {
    /// A started server on a free loopback port, without logs.
    static func quietLoopback(_ routes: Router) throws -> HTTPServer {
        var settings = HTTPServer.Configuration()
        (settings.host, settings.port, settings.accessLog, settings.errorLog) = ("127.0.0.1", 0, nil, nil)
        let server = HTTPServer(configuration: settings, router: routes)
        try server.start()
        return server
    }
}
