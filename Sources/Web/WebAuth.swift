import Crypto
import Foundation
import Synchronization

/// Who may use the page. Without a token (loopback only; the configuration refuses anything
/// else) every request from this machine is let in, but only with a loopback `Host` (a web page
/// elsewhere cannot reach the bridge by pointing a name of its own at 127.0.0.1). With a token,
/// a request needs the session cookie the login sets (HttpOnly, SameSite=Strict; its value is
/// an HMAC of the token, so it survives restarts and dies with a new token) or
/// `Authorization: Bearer <token>`. WebSocket upgrades and POSTs also need a same-origin
/// `Origin` when they carry one (browsers always do).
public struct WebAuth: Sendable {
    public let token: String?
    public let cookieName: String
    /// `/metrics` and `/healthz` without the token.
    public let metricsPublic: Bool
    /// Requests from this address (Home Assistant's ingress proxy, which has already logged its
    /// user in) need neither the token nor a loopback host nor a same-origin `Origin`.
    public let ingressAddress: String?
    private let sessionValue: String?

    public init(token: String?, port: Int, metricsPublic: Bool, ingressAddress: String? = nil) {
        self.token = token
        self.ingressAddress = ingressAddress.map { $0.lowercased() }
        self.cookieName = "cast2mqtt_session_\(port)"
        self.metricsPublic = metricsPublic
        self.sessionValue = token.map(Self.sessionValue(for:))
    }

    public var required: Bool { token != nil }

    /// The cookie value for a token.
    static func sessionValue(for token: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("cast2mqtt web session v1".utf8),
                                                  using: SymmetricKey(data: Array(token.utf8)))
        return mac.map { String(UInt16($0) | 0x100, radix: 16).dropFirst() }.joined()
    }

    /// The request's headers, as far as authentication cares.
    public struct Headers: Sendable {
        public var host: String?
        public var origin: String?
        public var cookie: [String]
        public var authorization: String?
        /// The peer's IP address (nil: unknown).
        public var remote: String?
        public init(host: String?, origin: String?, cookie: [String], authorization: String?, remote: String? = nil) {
            self.remote = remote
            self.host = host
            self.origin = origin
            self.cookie = cookie
            self.authorization = authorization
        }
    }

    public enum Decision: Sendable, Equatable {
        case allowed
        /// 401: log in first.
        case unauthenticated
        /// 403 with the reason.
        case forbidden(String)
    }

    /// May this request read the page's data (and, with `stateChanging`, act)?
    public func check(_ headers: Headers, stateChanging: Bool) -> Decision {
        if fromIngress(headers) { return .allowed }
        if token == nil, !Self.isLoopbackHost(headers.host) {
            return .forbidden("the page answers only to a loopback host name (localhost, 127.0.0.1, [::1]) without web.token")
        }
        if stateChanging, let origin = headers.origin, !Self.sameOrigin(origin, host: headers.host) {
            return .forbidden("cross-origin request refused (Origin \(origin.prefix(100)))")
        }
        return authenticated(headers) ? .allowed : .unauthenticated
    }

    /// True when no token is needed or the request carries the session cookie or the bearer token.
    public func authenticated(_ headers: Headers) -> Bool {
        guard let token, let sessionValue else { return true }
        if fromIngress(headers) { return true }
        if let value = Self.cookie(cookieName, in: headers.cookie), Self.constantTimeEqual(value, sessionValue) { return true }
        if let bearer = bearerToken(headers) { return Self.constantTimeEqual(bearer, token) }
        return false
    }

    /// Does the request come from the ingress proxy's address? (An IPv4-mapped IPv6 peer counts
    /// as its IPv4 address.)
    public func fromIngress(_ headers: Headers) -> Bool {
        guard let ingressAddress, var remote = headers.remote?.lowercased() else { return false }
        if remote.hasPrefix("::ffff:"), remote.contains(".") { remote.removeFirst("::ffff:".count) }
        return remote == ingressAddress
    }

    /// The token of `Authorization: Bearer <token>`, if any.
    public func bearerToken(_ headers: Headers) -> String? {
        guard let value = headers.authorization, value.count > 7, value.prefix(7).lowercased() == "bearer " else { return nil }
        return String(value.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    /// A login attempt: the `Set-Cookie` value when the token is right.
    public func login(_ candidate: String) -> String? {
        guard let token, let sessionValue, Self.constantTimeEqual(candidate, token) else { return nil }
        return "\(cookieName)=\(sessionValue); Path=/; Max-Age=31536000; HttpOnly; SameSite=Strict"
    }

    public var logoutCookie: String { "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" }

    // MARK: - Pieces

    static func cookie(_ name: String, in headers: [String]) -> String? {
        for header in headers {
            for part in header.split(separator: ";") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                guard let eq = pair.firstIndex(of: "=") else { continue }
                if pair[..<eq] == name { return String(pair[pair.index(after: eq)...]) }
            }
        }
        return nil
    }

    /// Compares without an early exit, so the time taken does not tell how much of a guess was right.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(SHA256.hash(data: Array(a.utf8))), y = Array(SHA256.hash(data: Array(b.utf8)))
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    /// `Origin: http://host:port` names the same host and port as `Host: host:port`.
    static func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let scheme = origin.range(of: "://") else { return false }
        let authority = origin[scheme.upperBound...].lowercased()
        let isHTTPS = origin.lowercased().hasPrefix("https://")
        func normalized(_ s: String) -> String {
            let defaultPort = isHTTPS ? ":443" : ":80"
            return s.hasSuffix(defaultPort) ? String(s.dropLast(defaultPort.count)) : s
        }
        return normalized(authority) == normalized(host.lowercased())
    }

    /// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
    static func isLoopbackHost(_ host: String?) -> Bool {
        guard var name = host?.lowercased() else { return false }
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            return name[name.index(after: name.startIndex)..<close] == "::1"
        }
        if let colon = name.lastIndex(of: ":") { name = String(name[..<colon]) }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { p in p.allSatisfy(\.isNumber) && (Int(p) ?? 256) < 256 }
    }
}

/// Failed logins per source address: five a minute, then `429` until the minute is over. The
/// first failure of a source is logged (once per source while it is remembered); the rest are
/// counted. At most `capacity` sources are remembered (the stalest go first).
public final class LoginLimiter: Sendable {
    public static let attemptsPerWindow = 5
    public static let window: Duration = .seconds(60)

    struct Source {
        var windowStart: ContinuousClock.Instant
        var failures: Int
    }

    private let sources = Mutex<[String: Source]>([:])
    private let capacity: Int

    public init(capacity: Int = 1024) { self.capacity = capacity }

    /// Nil when `source` may try now, else how many seconds until it may.
    public func retryAfter(_ source: String, now: ContinuousClock.Instant = .now) -> Int? {
        sources.withLock { all -> Int? in
            guard let entry = all[source], entry.failures >= Self.attemptsPerWindow else { return nil }
            let end = entry.windowStart + Self.window
            guard now < end else { return nil }
            return max(1, Int((end - now).components.seconds) + 1)
        }
    }

    /// Records a failure; true when it is the first one remembered for `source` (log it).
    public func failed(_ source: String, now: ContinuousClock.Instant = .now) -> Bool {
        sources.withLock { all in
            if var entry = all[source] {
                if now >= entry.windowStart + Self.window { entry = Source(windowStart: now, failures: 0) }
                entry.failures += 1
                all[source] = entry
                return false
            }
            if all.count >= capacity, let stalest = all.min(by: { $0.value.windowStart < $1.value.windowStart })?.key {
                all[stalest] = nil
            }
            all[source] = Source(windowStart: now, failures: 1)
            return true
        }
    }
}
