import CastProtocol
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Why `eureka_info` could not be read from a device.
public struct EurekaFetchError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Nothing listens (connection refused, host unreachable).
        case refused
        /// No complete answer before the deadline.
        case timeout
        /// The TLS handshake failed.
        case tls
        /// An HTTP status other than 200 (after the empty-`Host` retry of a 403).
        case httpStatus = "http_status"
        /// The body is larger than the limit.
        case tooLarge = "too_large"
        /// Not an HTTP response, or the connection closed before it was complete.
        case invalidResponse = "invalid_response"
        /// A complete answer whose body is not `eureka_info` JSON (see `EurekaParseError`).
        case invalidBody = "invalid_body"
    }

    public var code: Code
    /// Plain words for the log: what failed, over which transport.
    public var message: String
    /// The HTTP status, for `httpStatus`.
    public var status: Int?

    public init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// Whether the plain-HTTP fallback is worth trying after this failure over TLS: yes when
    /// the TLS port did not give an answer (refused, TLS, a timeout, an HTTP error); no when it
    /// answered with a body that is too large or not JSON (the device would say the same again).
    var tryPlainAfterwards: Bool { code != .tooLarge && code != .invalidBody }
}

/// Reads a device's `eureka_info` (name, model, manufacturer, id, its groups) the way real senders
/// do: HTTPS on port 8443 without certificate verification first, plain HTTP on 8008 when that
/// gives no answer; a 403 is asked again with an empty `Host` header (devices refuse requests
/// that name them by host name). Bounded: the answer may have at most `maximumResponseBytes`
/// of body and the whole fetch takes at most `timeout` (the TLS attempt gets half of it, the
/// plain one what is left). Never blocks: the result is a future on the chosen event loop; a
/// failure is an `EurekaFetchError`.
public struct EurekaInfoFetcher: Sendable {
    public struct Configuration: Sendable {
        public var timeout: TimeAmount = .seconds(4)
        public var maximumResponseBytes = EurekaInfo.maximumSize
        public var httpsPort = 8443
        public var httpPort = 8008
        public var path = EurekaInfo.requestPath

        public init() {}
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let tls: NIOSSLContext
    private let logger: Logger

    public init(group: any EventLoopGroup, configuration: Configuration = Configuration(),
                logger: Logger = Logger(label: "cast2mqtt.eureka")) throws {
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.certificateVerification = .none  // devices have self-signed certificates
        self.tls = try NIOSSLContext(configuration: tlsConfiguration)
        self.group = group
        self.configuration = configuration
        self.logger = logger
    }

    /// Fetches and parses `eureka_info` of `host` (an IP literal or a name). The future
    /// completes on `eventLoop` (default: the next loop of the group) within `timeout`.
    public func fetch(host: String, on eventLoop: (any EventLoop)? = nil) -> EventLoopFuture<EurekaInfo> {
        let loop = eventLoop ?? group.next()
        let start = NIODeadline.now()
        let overall = start + configuration.timeout
        let tlsDeadline = start + .nanoseconds(configuration.timeout.nanoseconds / 2)
        return exchange(host: host, port: configuration.httpsPort, tls: true, deadline: tlsDeadline, on: loop)
            .flatMapError { (error: any Error) -> EventLoopFuture<[UInt8]> in
                let failure = Self.fetchError(error)
                guard failure.tryPlainAfterwards else { return loop.makeFailedFuture(failure) }
                self.logger.debug("eureka_info of \(host) over TLS: \(failure); trying plain HTTP")
                return self.exchange(host: host, port: self.configuration.httpPort, tls: false, deadline: overall, on: loop)
                    .flatMapErrorThrowing { error in
                        let plain = Self.fetchError(error)
                        throw EurekaFetchError(plain.code, "\(plain.message) (TLS on \(self.configuration.httpsPort): \(failure.message))",
                                               status: plain.status)
                    }
            }
            .flatMapThrowing { body in
                switch EurekaInfo.parse(body) {
                case .success(let info): return info
                case .failure(let error): throw EurekaFetchError(.invalidBody, "\(host): \(error.description)")
                }
            }
    }

    /// `fetch(host:)` for async code; throws `EurekaFetchError`.
    public func fetch(host: String) async throws -> EurekaInfo {
        try await fetch(host: host, on: nil).get()
    }

    /// One transport: a request, and on 403 one more with an empty `Host`. The body of a 200.
    private func exchange(host: String, port: Int, tls: Bool, deadline: NIODeadline,
                          on loop: any EventLoop) -> EventLoopFuture<[UInt8]> {
        let scheme = tls ? "https" : "http"
        let named = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        return request(host: host, port: port, tls: tls, hostHeader: named, deadline: deadline, on: loop)
            .flatMap { response -> EventLoopFuture<EurekaResponse> in
                guard response.status == 403 else { return loop.makeSucceededFuture(response) }
                return self.request(host: host, port: port, tls: tls, hostHeader: "", deadline: deadline, on: loop)
            }
            .flatMapThrowing { response in
                guard response.status == 200 else {
                    throw EurekaFetchError(.httpStatus, "\(scheme)://\(named) answered HTTP \(response.status)",
                                           status: response.status)
                }
                return response.body
            }
    }

    /// One HTTP request on a new connection, bounded by `deadline`.
    private func request(host: String, port: Int, tls: Bool, hostHeader: String, deadline: NIODeadline,
                         on loop: any EventLoop) -> EventLoopFuture<EurekaResponse> {
        let promise = loop.makePromise(of: EurekaResponse.self)
        let remaining = deadline - .now()
        guard remaining > .zero else {
            promise.fail(EurekaFetchError(.timeout, "no time left for \(host):\(port)"))
            return promise.futureResult
        }
        let once = OncePromise(promise, eventLoop: loop)
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: configuration.path, headers: [
            "Host": hostHeader, "Accept": "application/json", "User-Agent": "cast2mqtt", "Connection": "close",
        ])
        let limit = configuration.maximumResponseBytes
        let context = self.tls
        let where_ = "\(tls ? "https" : "http")://\(host):\(port)"
        let connected = ClientBootstrap(group: loop)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(remaining)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if tls { try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil)) }
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(EurekaResponseHandler(request: head, limit: limit, target: where_, once: once))
                }
            }
            .connect(host: host, port: port)
        let timeout = loop.scheduleTask(deadline: deadline) {
            once.fail(EurekaFetchError(.timeout, "\(where_) gave no complete answer in time"))
        }
        connected.whenComplete { result in
            switch result {
            case .success(let channel):
                // Whatever ends the request (answer, error, deadline) closes the connection.
                promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
            case .failure(let error):
                once.fail(Self.fetchError(error, target: where_))
            }
        }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        return promise.futureResult
    }

    /// An error as an `EurekaFetchError` (those pass through).
    static func fetchError(_ error: any Error, target: String = "") -> EurekaFetchError {
        if let fetch = error as? EurekaFetchError { return fetch }
        if let channel = error as? ChannelError, case .connectTimeout = channel {
            return EurekaFetchError(.timeout, "\(target): connect timed out")
        }
        if error is NIOSSLError || error is BoringSSLError {
            return EurekaFetchError(.tls, "\(target): TLS failed: \(error)")
        }
        if error is HTTPParserError {
            return EurekaFetchError(.invalidResponse, "\(target): not an HTTP response (\(error))")
        }
        return EurekaFetchError(.refused, "\(target): \(error)")
    }
}

/// A status and a body.
struct EurekaResponse: Sendable {
    var status: Int
    var body: [UInt8]
}

/// Completes a promise once; later attempts (a deadline after the answer, an error after a
/// failure) are ignored. Bound to the promise's event loop.
final class OncePromise: Sendable {
    private let promise: EventLoopPromise<EurekaResponse>
    private let done: NIOLoopBoundBox<Bool>

    init(_ promise: EventLoopPromise<EurekaResponse>, eventLoop: any EventLoop) {
        self.promise = promise
        self.done = .makeBoxSendingValue(false, eventLoop: eventLoop)
    }

    func succeed(_ response: EurekaResponse) {
        guard !done.value else { return }
        done.value = true
        promise.succeed(response)
    }

    func fail(_ error: EurekaFetchError) {
        guard !done.value else { return }
        done.value = true
        promise.fail(error)
    }
}

/// Sends the request once the connection is up and collects the answer, at most `limit` bytes
/// of body.
final class EurekaResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let request: HTTPRequestHead
    private let limit: Int
    private let target: String
    private let once: OncePromise
    private var status: Int?
    private var body: [UInt8] = []

    init(request: HTTPRequestHead, limit: Int, target: String, once: OncePromise) {
        self.request = request
        self.limit = limit
        self.target = target
        self.once = once
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(request)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > limit {
                tooLarge(context, "announces \(length) bytes")
            }
        case .body(var buffer):
            guard body.count + buffer.readableBytes <= limit else {
                tooLarge(context, "sent more than \(limit) bytes")
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            once.succeed(EurekaResponse(status: status ?? 0, body: body))
            context.close(promise: nil)
        }
    }

    private func tooLarge(_ context: ChannelHandlerContext, _ what: String) {
        once.fail(EurekaFetchError(.tooLarge, "\(target) \(what) (at most \(limit))"))
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        once.fail(EurekaInfoFetcher.fetchError(error, target: target))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        once.fail(EurekaFetchError(.invalidResponse, "\(target) closed the connection before the answer was complete"))
        context.fireChannelInactive()
    }
}
