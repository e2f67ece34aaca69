import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// The web page, `/metrics` and `/healthz` on one Hummingbird server, on the daemon's event loops.
public final class WebServer: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// Nil: no login (only allowed on loopback).
        public var token: String?
        public var metricsPublic: Bool
        public var version: String
        /// The effective configuration, secrets masked, for the bridge page.
        public var configurationText: String
        /// Home Assistant's ingress proxy: no token asked of it (`web.ingress_address`).
        public var ingressAddress: String?

        public init(host: String, port: Int, token: String?, metricsPublic: Bool, version: String, configurationText: String,
                    ingressAddress: String? = nil) {
            self.ingressAddress = ingressAddress
            self.host = host
            self.port = port
            self.token = token
            self.metricsPublic = metricsPublic
            self.version = version
            self.configurationText = configurationText
        }
    }

    public let configuration: Configuration
    public let hub: WebHub
    public let metrics: BridgeMetrics
    let auth: WebAuth
    let limiter = LoginLimiter()
    let logger: Logger
    /// The bridge's live counters as a JSON object (for the bridge page).
    let stats: @Sendable () -> [UInt8]
    /// Pages open at once; one more is refused (each holds a snapshot's worth of memory).
    let maxPages: Int

    public init(configuration: Configuration, hub: WebHub, metrics: BridgeMetrics, logger: Logger, maxPages: Int = 32,
                stats: @escaping @Sendable () -> [UInt8]) {
        self.configuration = configuration
        self.maxPages = maxPages
        self.hub = hub
        self.metrics = metrics
        self.logger = logger
        self.stats = stats
        self.auth = WebAuth(token: configuration.token, port: configuration.port, metricsPublic: configuration.metricsPublic,
                            ingressAddress: configuration.ingressAddress)
    }

    /// Serves until the calling task is cancelled or the process shuts down gracefully. An address
    /// that cannot be bound (a port in use) is logged once and the call returns: the bridge goes
    /// on without its page. `onListening` gets the bound port.
    public func run(group: any EventLoopGroup, onListening: @escaping @Sendable (Int) -> Void = { _ in }) async {
        // Hummingbird's own lines (each request at debug, an accept loop cancelled at shutdown as
        // an error) are not for operators; this type logs what matters (listening, a port in use).
        var quiet = logger
        quiet.logLevel = .critical
        let address = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let app = Application(
            responder: WebResponder(server: self),
            server: .http1WebSocketUpgrade(
                configuration: .init(http1: .init(idleTimeout: .seconds(120)),
                                     ws: .init(maxFrameSize: WebSocketSession.maxMessage, autoPing: .enabled(timePeriod: .seconds(30)))),
                shouldUpgrade: { [self] request, channel, _ in try self.shouldUpgrade(request, channel: channel) }),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { [logger] channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("web page listening", metadata: ["web.url": "http://\(address):\(port)/"])
                onListening(port)
            },
            eventLoopGroupProvider: .shared(group),
            logger: quiet)
        do {
            try await app.run()
        } catch is CancellationError {
        } catch {
            if Task.isCancelled { return }
            logger.error("the web page is off: cannot listen; the bridge carries on without it",
                         metadata: ["web.listen": "\(address):\(configuration.port)", "web.error": "\(error)"])
        }
    }

    // MARK: - WebSocket

    func shouldUpgrade(_ request: HTTPRequest, channel: any Channel) throws
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        guard request.path.map({ $0.split(separator: "?", maxSplits: 1).first == "/ws" }) ?? false,
              auth.check(Self.authHeaders(request, remote: channel.remoteAddress?.ipAddress), stateChanging: true) == .allowed,
              hub.clientCount < maxPages else { return .dontUpgrade }
        return .upgrade([:]) { [self] inbound, outbound, _ in
            await WebSocketSession(server: self).run(inbound: inbound, outbound: outbound)
        }
    }

    static func authHeaders(_ request: HTTPRequest, remote: String?) -> WebAuth.Headers {
        let fields = request.headerFields
        return WebAuth.Headers(host: request.authority, origin: fields[.origin],
                               cookie: fields[values: .cookie], authorization: fields[.authorization], remote: remote)
    }

    /// `{"base_topic","version","auth_required","configuration"}` for the page.
    var meta: [UInt8] {
        var json = JSONText(capacity: 2048)
        json.raw(#"{"base_topic":"#)
        json.string(hub.baseTopic)
        json.raw(#","version":"#)
        json.string(configuration.version)
        json.raw(#","auth_required":"#)
        json.bool(auth.required)
        json.raw(#","configuration":"#)
        json.string(configuration.configurationText)
        json.raw("}")
        return json.bytes
    }

    /// `{"type":"stats", ...}`: the bridge's counters and its health.
    func statsMessage() -> [UInt8] {
        let health = metrics.health()
        var json = JSONText(capacity: 1024)
        json.raw(#"{"type":"stats","healthy":"#)
        json.bool(health.healthy)
        json.raw(#","web_clients":"#)
        json.number(hub.clientCount)
        json.raw(#","bridge":"#)
        json.raw(stats())
        json.raw("}")
        return json.bytes
    }
}
