import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The request context: Hummingbird's core storage plus the peer's address (rate limiting).
struct WebRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let remote: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remote = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// Every HTTP route: the page's files, login and logout, `/metrics`, `/healthz`, and the answer
/// to a `/ws` request that was not upgraded.
struct WebResponder: HTTPResponder {
    typealias Context = WebRequestContext
    let server: WebServer

    func respond(to request: Request, context: Context) async throws -> Response {
        let headers = WebServer.authHeaders(request.head, remote: context.remote)
        var response = try await answer(request, headers, context)
        // Home Assistant shows an add-on's ingress page in a frame of its own origin (the proxy's):
        // what comes through the proxy may be framed by that origin, and only by it.
        if server.auth.fromIngress(headers) { Self.allowSameOriginFrames(&response.headers) }
        return response
    }

    private func answer(_ request: Request, _ headers: WebAuth.Headers, _ context: Context) async throws -> Response {
        let auth = server.auth
        let path = request.uri.path
        switch (request.method, path) {
        case (.get, "/healthz"), (.head, "/healthz"):
            if let refused = guarded(headers, open: auth.metricsPublic) { return refused }
            let health = server.metrics.health()
            var json = JSONText()
            json.raw(#"{"healthy":"#)
            json.bool(health.healthy)
            json.raw(#","mqtt_connected":"#)
            json.bool(health.mqttConnected)
            json.raw(#","loop_age_seconds":"#)
            if let age = health.loopAge { json.number((age * 1000).rounded() / 1000) } else { json.raw("null") }
            json.raw("}\n")
            return Self.response(health.healthy ? .ok : .serviceUnavailable, "application/json", json.bytes)
        case (.get, "/metrics"):
            if let refused = guarded(headers, open: auth.metricsPublic) { return refused }
            return Self.response(.ok, "text/plain; version=0.0.4; charset=utf-8", server.metrics.exposition())
        case (.get, "/api/session"):
            if case .forbidden(let why) = auth.check(headers, stateChanging: false) { return Self.error(.forbidden, why) }
            var json = JSONText()
            json.raw(#"{"auth_required":"#)
            json.bool(auth.required)
            json.raw(#","authenticated":"#)
            json.bool(auth.authenticated(headers))
            json.raw("}")
            return Self.response(.ok, "application/json", json.bytes)
        case (.post, "/api/login"):
            return try await login(request, headers: headers, remote: context.remote)
        case (.post, "/api/logout"):
            if case .forbidden(let why) = auth.check(headers, stateChanging: true) { return Self.error(.forbidden, why) }
            var response = Self.response(.noContent, nil, [])
            response.headers[.setCookie] = auth.logoutCookie
            return response
        case (.get, "/ws"):
            switch auth.check(headers, stateChanging: true) {
            case .forbidden(let why): return Self.error(.forbidden, why)
            case .unauthenticated: return Self.error(.unauthorized, "log in first")
            case .allowed: return Self.error(.badRequest, "this is the page's WebSocket: send an upgrade request")
            }
        case (.get, _), (.head, _):
            if case .forbidden(let why) = auth.check(headers, stateChanging: false) { return Self.error(.forbidden, why) }
            guard var file = WebAssets.file(path) else { return Self.error(.notFound, "no such page") }
            // Under Home Assistant's ingress the page's base is the proxy's path (every URL in
            // the page is relative to it).
            if file.isPage, let base = WebAssets.ingressBase(request.headers[WebAssets.ingressPathHeader]) {
                file = WebAssets.page(base: base)
            }
            if let match = request.headers[.ifNoneMatch], match == file.etag {
                var response = Self.response(.notModified, nil, [])
                response.headers[.eTag] = file.etag
                return response
            }
            var response = Response(status: .ok, headers: Self.securityHeaders(file.contentType), body: .init(byteBuffer: file.buffer))
            response.headers[.eTag] = file.etag
            response.headers[.cacheControl] = "no-cache"
            return response
        default:
            return Self.error(.methodNotAllowed, "\(request.method) is not served here")
        }
    }

    /// `/metrics` and `/healthz`: open with `metrics_public`, else like the page.
    func guarded(_ headers: WebAuth.Headers, open: Bool) -> Response? {
        if open { return nil }
        switch server.auth.check(headers, stateChanging: false) {
        case .allowed: return nil
        case .forbidden(let why): return Self.error(.forbidden, why)
        case .unauthenticated:
            var response = Self.error(.unauthorized, "send Authorization: Bearer <web.token>, or set web.metrics_public")
            response.headers[.wwwAuthenticate] = #"Bearer realm="cast2mqtt""#
            return response
        }
    }

    /// `POST /api/login {"token"}`: the session cookie, or 401; 429 after too many failures.
    func login(_ request: Request, headers: WebAuth.Headers, remote: String) async throws -> Response {
        let auth = server.auth
        if case .forbidden(let why) = auth.check(headers, stateChanging: true) { return Self.error(.forbidden, why) }
        guard auth.required else { return Self.response(.noContent, nil, []) }
        if let wait = server.limiter.retryAfter(remote) {
            var response = Self.error(.tooManyRequests, "too many failed logins from this address; try again in \(wait) s")
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        var request = request
        guard let body = try? await request.collectBody(upTo: 4096),
              let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
              let candidate = object["token"] as? String else {
            return Self.error(.badRequest, #"send {"token": "..."}"#)
        }
        if let cookie = auth.login(candidate) {
            var response = Self.response(.noContent, nil, [])
            response.headers[.setCookie] = cookie
            return response
        }
        server.metrics.loginFailures.increment()
        if server.limiter.failed(remote) {
            server.logger.warning("web login failed (further failures from this address are counted, not logged)",
                                  metadata: ["web.source": "\(remote)"])
        }
        return Self.error(.unauthorized, "wrong token")
    }

    static func securityHeaders(_ contentType: String?) -> HTTPFields {
        var headers = HTTPFields()
        if let contentType { headers[.contentType] = contentType }
        headers[.contentSecurityPolicy] = "default-src 'self'; img-src 'self' http: https: data:; style-src 'self'; "
            + "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return headers
    }

    /// `frame-ancestors 'self'` and `X-Frame-Options: SAMEORIGIN` instead of forbidding frames.
    static func allowSameOriginFrames(_ headers: inout HTTPFields) {
        if let policy = headers[.contentSecurityPolicy] {
            headers[.contentSecurityPolicy] = policy.replacingOccurrences(of: "frame-ancestors 'none'", with: "frame-ancestors 'self'")
        }
        if headers[HTTPField.Name("X-Frame-Options")!] != nil { headers[HTTPField.Name("X-Frame-Options")!] = "SAMEORIGIN" }
    }

    static func response(_ status: HTTPResponse.Status, _ contentType: String?, _ body: [UInt8]) -> Response {
        var headers = securityHeaders(contentType)
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: body.isEmpty ? .init() : .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var json = JSONText()
        json.raw(#"{"error":"#)
        json.string(message)
        json.raw("}\n")
        return response(status, "application/json", json.bytes)
    }
}
