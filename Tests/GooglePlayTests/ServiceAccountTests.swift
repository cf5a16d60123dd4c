import AppStore
import EntitledCrypto
import Foundation
import GooglePlay
import HTTPClient
import Testing

@Suite struct ServiceAccountTests {
    static let tokenURI = "https://oauth2.googleapis.com/token"

    static func keyFile(_ changes: [String: String?] = [:]) throws -> [UInt8] {
        var members: [String: String] = [
            "type": "service_account", "project_id": "p", "private_key_id": "abc123", "private_key": try TestKeys.serviceAccount.pkcs8PEM(),
            "client_email": "entitled@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI,
        ]
        for (key, value) in changes { members[key] = value }
        return PlayJSON.encode(members)
    }

    @Test func keyFileIsRead() throws {
        let key = try ServiceAccountKey(json: Self.keyFile())
        #expect(key.clientEmail == "entitled@p.iam.gserviceaccount.com")
        #expect(key.privateKeyId == "abc123")
        #expect(key.tokenURI.absoluteString == Self.tokenURI)
    }

    @Test(arguments: ["client_email", "private_key", "token_uri"])
    func missingMembersAreNamed(member: String) throws {
        let error = #expect(throws: GooglePlayError(.invalidServiceAccount, "")) { try ServiceAccountKey(json: Self.keyFile([member: nil])) }
        #expect(error?.message.contains(member) == true)
    }

    @Test func badKeyFilesAreRefused() throws {
        for changes: [String: String?] in [
            ["type": "authorized_user"], ["private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"],
            ["private_key": try P256PrivateKey().pkcs8PEM()], ["token_uri": "http://oauth2.googleapis.com/token"], ["token_uri": "::"],
        ] {
            #expect(throws: GooglePlayError(.invalidServiceAccount, "")) { try ServiceAccountKey(json: Self.keyFile(changes)) }
        }
        #expect(throws: GooglePlayError(.invalidServiceAccount, "")) { try ServiceAccountKey(json: json("[]")) }
        #expect(throws: GooglePlayError(.invalidServiceAccount, "")) { try ServiceAccountKey(contentsOf: "/nonexistent/key.json") }
    }

    /// A token endpoint that checks the assertion and counts exchanges.
    static func endpoint(clock: TestClock, expiresIn: Int64 = 3600, delayMilliseconds: UInt64 = 0) -> ScriptedTransport {
        ScriptedTransport { request in
            if delayMilliseconds > 0 { try? await Task.sleep(nanoseconds: delayMilliseconds * 1_000_000) }
            let form = String(decoding: request.body ?? [], as: UTF8.self)
            guard request.method == "POST", request.headers["Content-Type"] == "application/x-www-form-urlencoded",
                form.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="),
                let assertion = form.split(separator: "=").last.map(String.init),
                let parsed = try? RS256JWT.parse(assertion),
                (try? TestKeys.serviceAccount.publicKey.isValidRS256Signature(parsed.signature, for: parsed.signingInput)) == true
            else { return OutboundResponse(status: 400, body: json(#"{"error":"invalid_grant"}"#)) }
            let count = clock.seconds
            return OutboundResponse(status: 200, body: json(#"{"access_token":"ya29.\#(count)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#))
        }
    }

    @Test func assertionCarriesGooglesClaims() throws {
        let clock = TestClock()
        let provider = AccessTokenProvider(account: try ServiceAccountKey(json: Self.keyFile()), transport: Self.endpoint(clock: clock), clock: clock)
        let parsed = try RS256JWT.parse(try provider.assertion(now: clock.seconds))
        #expect(parsed.headerString("alg") == "RS256")
        #expect(parsed.headerString("kid") == "abc123")
        #expect(parsed.claimString("iss") == "entitled@p.iam.gserviceaccount.com")
        #expect(parsed.claimString("scope") == "https://www.googleapis.com/auth/androidpublisher")
        #expect(parsed.claimString("aud") == Self.tokenURI)
        #expect(parsed.claimInteger("iat") == clock.seconds)
        #expect(parsed.claimInteger("exp") == clock.seconds + 3600)
        #expect(try TestKeys.serviceAccount.publicKey.isValidRS256Signature(parsed.signature, for: parsed.signingInput))
    }

    @Test func accessTokenIsCachedUntilShortlyBeforeExpiry() async throws {
        let clock = TestClock()
        let transport = Self.endpoint(clock: clock)
        let provider = AccessTokenProvider(account: try ServiceAccountKey(json: Self.keyFile()), transport: transport, clock: clock)
        let first = try await provider.accessToken()
        clock.advance(seconds: 3600 - 301)
        #expect(try await provider.accessToken() == first)
        #expect(transport.requests.count == 1)
        clock.advance(seconds: 2)
        let second = try await provider.accessToken()
        #expect(second != first)
        #expect(transport.requests.count == 2)
        provider.invalidate()
        _ = try await provider.accessToken()
        #expect(transport.requests.count == 3)
    }

    @Test func concurrentCallersShareOneExchange() async throws {
        let clock = TestClock()
        let transport = Self.endpoint(clock: clock, delayMilliseconds: 50)
        let provider = AccessTokenProvider(account: try ServiceAccountKey(json: Self.keyFile()), transport: transport, clock: clock)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10 { group.addTask { try await provider.accessToken() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(transport.requests.count == 1)
    }

    @Test func refusedExchangeIsTyped() async throws {
        let clock = TestClock()
        // Signed with a key the endpoint does not know.
        let other = try ServiceAccountKey(json: Self.keyFile(["private_key": try TestKeys.other.pkcs8PEM()]))
        let provider = AccessTokenProvider(account: other, transport: Self.endpoint(clock: clock), clock: clock)
        let error = await #expect(throws: GooglePlayError(.tokenExchangeFailed, "")) { try await provider.accessToken() }
        #expect(error?.status == 400)
        #expect(error?.message.contains("invalid_grant") == true)
        #expect(error?.isRetryable == false)
        // After a failure the next call tries again rather than repeating a cached failure.
        let good = AccessTokenProvider(account: try ServiceAccountKey(json: Self.keyFile()), transport: Self.endpoint(clock: clock), clock: clock)
        _ = try await good.accessToken()
        let empty = ScriptedTransport { _ in OutboundResponse(status: 200, body: json(#"{"access_token":"","expires_in":3600}"#)) }
        let broken = AccessTokenProvider(account: try ServiceAccountKey(json: Self.keyFile()), transport: empty, clock: clock)
        await #expect(throws: GooglePlayError(.tokenExchangeFailed, "")) { try await broken.accessToken() }
    }
}
