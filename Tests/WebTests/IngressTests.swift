import Foundation
import HTTPTypes
import Testing
@testable import Web

/// Home Assistant's ingress: the proxy's address needs no token, and the page's base follows
/// `X-Ingress-Path`.
@Suite struct IngressTests {
    func request(host: String? = "172.30.33.5:8199", origin: String? = nil, remote: String?) -> WebAuth.Headers {
        WebAuth.Headers(host: host, origin: origin, cookie: [], authorization: nil, remote: remote)
    }

    @Test func theIngressProxyNeedsNoToken() {
        let auth = WebAuth(token: "secret", port: 8199, metricsPublic: false, ingressAddress: "172.30.32.2")
        #expect(auth.check(request(origin: "http://homeassistant.local:8123", remote: "172.30.32.2"), stateChanging: true) == .allowed)
        #expect(auth.authenticated(request(remote: "::ffff:172.30.32.2")))
        // Everyone else keeps the token rules.
        for remote in ["172.30.32.1", "172.30.32.20", "127.0.0.1", "::1", "", nil] {
            #expect(auth.check(request(remote: remote), stateChanging: false) == .unauthenticated, "\(remote ?? "nil")")
        }
        #expect(auth.check(request(origin: "http://evil.example", remote: "192.0.2.7"), stateChanging: true) != .allowed)
    }

    @Test func withoutAnIngressAddressNothingChanges() {
        let auth = WebAuth(token: nil, port: 8199, metricsPublic: false)
        guard case .forbidden = auth.check(request(remote: "172.30.32.2"), stateChanging: false) else {
            Issue.record("a non-loopback host was served without web.token")
            return
        }
        let tokened = WebAuth(token: "secret", port: 8199, metricsPublic: false)
        #expect(tokened.check(request(remote: "172.30.32.2"), stateChanging: false) == .unauthenticated)
    }

    @Test func theIngressPathHeader() {
        #expect(WebAssets.ingressBase("/api/hassio_ingress/AbC-12_x") == "/api/hassio_ingress/AbC-12_x/")
        #expect(WebAssets.ingressBase("/api/hassio_ingress/tok/") == "/api/hassio_ingress/tok/")
        for bad: String? in [nil, "", "/", "api/x", "/a/../b", "/a\"><script>", "/a b", "/ä", "//evil.example", String(repeating: "/a", count: 300)] {
            #expect(WebAssets.ingressBase(bad) == nil, "\(bad ?? "nil")")
        }
    }

    /// Home Assistant frames the ingress page in its own origin: the proxy's answers may be
    /// framed by that origin (the others keep forbidding every frame).
    @Test func throughTheProxyTheSameOriginMayFrameThePage() {
        var headers = WebResponder.securityHeaders("text/html")
        #expect(headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
        WebResponder.allowSameOriginFrames(&headers)
        #expect(headers[.contentSecurityPolicy]?.contains("frame-ancestors 'self'") == true)
        #expect(headers[.contentSecurityPolicy]?.contains("'none'") == false)
        #expect(headers[HTTPField.Name("X-Frame-Options")!] == "SAMEORIGIN")
    }

    @Test func thePageGetsTheIngressBase() {
        let page = WebAssets.page(base: "/api/hassio_ingress/tok/")
        let text = String(decoding: page.buffer.readableBytesView, as: UTF8.self)
        #expect(text.contains(#"<base href="/api/hassio_ingress/tok/">"#))
        #expect(!text.contains(#"<base href="/">"#))
        #expect(page.etag != WebAssets.files["/"]?.etag)
        let plain = String(decoding: WebAssets.files["/"].map { Array($0.buffer.readableBytesView) } ?? [], as: UTF8.self)
        #expect(plain.contains(#"<base href="/">"#))
        // Every URL in the page is relative (to the base).
        for attribute in [#"href="/"#, #"src="/"#] {
            #expect(!plain.replacingOccurrences(of: #"<base href="/">"#, with: "").contains(attribute), "\(attribute)")
        }
    }
}
