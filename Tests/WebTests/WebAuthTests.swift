import Testing
@testable import Web

func headers(host: String? = "127.0.0.1:8199", origin: String? = nil, cookie: [String] = [], authorization: String? = nil) -> WebAuth.Headers {
    WebAuth.Headers(host: host, origin: origin, cookie: cookie, authorization: authorization)
}

@Suite struct WebAuthTests {
    @Test func withoutATokenOnlyLoopbackHostNamesAreServed() {
        let auth = WebAuth(token: nil, port: 8199, metricsPublic: false)
        #expect(!auth.required)
        for host in ["127.0.0.1:8199", "localhost:8199", "LOCALHOST", "[::1]:8199", "127.1.2.3"] {
            #expect(auth.check(headers(host: host), stateChanging: false) == .allowed, "\(host)")
        }
        // A name of someone else's that resolves to 127.0.0.1 (DNS rebinding) is refused.
        for host in ["evil.example:8199", "192.0.2.1:8199", "127.0.0.1.evil.example", nil] {
            guard case .forbidden = auth.check(headers(host: host), stateChanging: false) else {
                Issue.record("served \(host ?? "no host")")
                continue
            }
        }
    }

    @Test func aForeignOriginCannotChangeAnything() {
        let auth = WebAuth(token: nil, port: 8199, metricsPublic: false)
        #expect(auth.check(headers(origin: "http://127.0.0.1:8199"), stateChanging: true) == .allowed)
        #expect(auth.check(headers(origin: nil), stateChanging: true) == .allowed, "scripts send no Origin")
        // The scheme is not compared: behind a TLS proxy the page's origin is https:// on the same host.
        #expect(auth.check(headers(origin: "https://127.0.0.1:8199"), stateChanging: true) == .allowed)
        for origin in ["http://evil.example", "http://127.0.0.1:8200", "null", "http://127.0.0.1"] {
            guard case .forbidden = auth.check(headers(origin: origin), stateChanging: true) else {
                Issue.record("allowed \(origin)")
                continue
            }
        }
        #expect(auth.check(headers(origin: "http://evil.example"), stateChanging: false) == .allowed, "reading a file is harmless")
        #expect(WebAuth.sameOrigin("http://bridge.lan", host: "bridge.lan:80"))
    }

    @Test func aTokenIsNeededAndTheLoginSetsASessionCookie() throws {
        let auth = WebAuth(token: "correct horse", port: 8199, metricsPublic: false)
        #expect(auth.required)
        let host = "192.0.2.1:8199"
        #expect(auth.check(headers(host: host), stateChanging: false) == .unauthenticated)
        #expect(auth.login("wrong") == nil)
        #expect(auth.login("correct horse ") == nil)
        let cookie = try #require(auth.login("correct horse"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.hasPrefix("cast2mqtt_session_8199="))
        #expect(!cookie.contains("correct horse"), "the cookie is not the token")
        let value = String(cookie.split(separator: ";")[0])
        #expect(auth.check(headers(host: host, cookie: ["theme=dark; " + value]), stateChanging: false) == .allowed)
        #expect(auth.check(headers(host: host, cookie: [value + "0"]), stateChanging: false) == .unauthenticated)
        #expect(auth.check(headers(host: host, authorization: "Bearer correct horse"), stateChanging: false) == .allowed)
        #expect(auth.check(headers(host: host, authorization: "Bearer nope"), stateChanging: false) == .unauthenticated)
        // Another token, another cookie: a new token logs every browser out.
        #expect(WebAuth.sessionValue(for: "other") != WebAuth.sessionValue(for: "correct horse"))
        guard case .forbidden = auth.check(headers(host: host, origin: "http://evil.example", cookie: [value]), stateChanging: true) else {
            Issue.record("a foreign origin with the cookie was allowed")
            return
        }
    }

    @Test func failedLoginsAreLimitedPerSourceAndLoggedOnce() {
        let limiter = LoginLimiter(capacity: 2)
        let t0 = ContinuousClock.now
        #expect(limiter.retryAfter("a", now: t0) == nil)
        #expect(limiter.failed("a", now: t0), "the first failure is logged")
        for n in 2...LoginLimiter.attemptsPerWindow {
            #expect(limiter.retryAfter("a", now: t0) == nil, "attempt \(n) is allowed")
            #expect(!limiter.failed("a", now: t0), "and not logged again")
        }
        #expect(limiter.retryAfter("a", now: t0 + .seconds(1)) == 60)
        #expect(limiter.retryAfter("b", now: t0) == nil, "another source is not affected")
        #expect(limiter.retryAfter("a", now: t0 + LoginLimiter.window) == nil, "after the window it may try again")
        #expect(!limiter.failed("a", now: t0 + LoginLimiter.window), "still not logged twice")
        #expect(limiter.failed("b", now: t0 + .seconds(2)))
        #expect(limiter.failed("c", now: t0 + .seconds(3)), "a full table forgets its stalest source")
    }
}
