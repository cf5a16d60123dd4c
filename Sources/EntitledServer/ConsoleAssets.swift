import HTTPServer

/// The console's page: HTML, script and style served from the binary (no network, no CDN) under
/// a Content-Security-Policy that allows only this server's own script, style and API.
enum ConsoleAssets {
    static let csp =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static func register(on router: inout Router) {
        func serve(_ path: String, _ type: String, _ text: String) {
            let body = Array(text.utf8)
            router.add(.get, path, .inline { _ in
                Response(
                    status: 200,
                    headers: [
                        "Content-Type": type, "Cache-Control": "no-cache", "Content-Security-Policy": csp,
                        "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
                    ],
                    body: body)
            })
        }
        serve("/console", "text/html; charset=utf-8", ConsolePage.html)
        serve("/console/console.js", "text/javascript; charset=utf-8", ConsoleScript.js)
        serve("/console/console.css", "text/css; charset=utf-8", ConsolePage.css)
    }
}
