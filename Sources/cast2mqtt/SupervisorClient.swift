import Bridge
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The daemon's side of running as a Home Assistant add-on: reading `/data/options.json` and
/// asking the Supervisor for the MQTT broker (`GET /services/mqtt` with the add-on's bearer
/// token). What the bytes mean is decided in Bridge/Configuration/Supervisor.swift.
enum SupervisorClient {
    /// The add-on's options, or none when the file does not exist.
    static func options(_ environment: [String: String]) throws -> AddonOptions {
        let path = environment[Supervisor.optionsVariable] ?? Supervisor.defaultOptionsPath
        guard FileManager.default.fileExists(atPath: path) else { return AddonOptions() }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError(path: "", message: "cannot read the add-on options \(path)")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: AddonOptions.maximumBytes + 1)) ?? Data()
        do {
            return try AddonOptions.parse(Array(data))
        } catch {
            throw ConfigurationError(path: "", message: "the add-on options \(path): \(error)")
        }
    }

    /// A random web token (32 hex digits) for a page that listens beyond loopback without one.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16).leftPadded }.joined()
    }

    /// Asks for the broker until it answers, at most `attempts` times (1 s doubling to 8 s
    /// between them); every failure is logged, the password never.
    static func broker(environment: [String: String], token: String, logger: Logger, attempts: Int = 10,
                       timeout: TimeAmount = .seconds(5)) async throws -> SupervisorMQTTService {
        let endpoint = try Supervisor.Endpoint(environment[Supervisor.urlVariable] ?? Supervisor.defaultURL)
        var delay = 1.0
        var lastError: any Error = SupervisorError.unavailable("not asked")
        for attempt in 1...max(1, attempts) {
            do {
                let (status, body) = try await get(endpoint, path: endpoint.prefix + "/services/mqtt", token: token, timeout: timeout)
                // A wrong token is answered 401 or 403 (the body is not logged: it may echo the request).
                guard status == 200 else { throw SupervisorError.unavailable("HTTP status \(status)") }
                return try SupervisorMQTTService.parse(body)
            } catch {
                lastError = error
                logger.warning("asking the Supervisor for the MQTT broker failed",
                               metadata: ["supervisor.url": "http://\(endpoint.host):\(endpoint.port)\(endpoint.prefix)/services/mqtt",
                                          "attempt": "\(attempt)/\(attempts)", "error": "\(error)"])
                if attempt < attempts {
                    try await Task.sleep(for: .seconds(delay))
                    delay = min(delay * 2, 8)
                }
            }
        }
        throw lastError
    }

    /// One `GET` with `Authorization: Bearer`: the status and at most 64 KiB of body.
    static func get(_ endpoint: Supervisor.Endpoint, path: String, token: String,
                    timeout: TimeAmount) async throws -> (Int, [UInt8]) {
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: (Int, [UInt8]).self)
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path.isEmpty ? "/" : path)
        head.headers.add(name: "Host", value: endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host)
        head.headers.add(name: "Authorization", value: "Bearer \(token)")
        head.headers.add(name: "Accept", value: "application/json")
        head.headers.add(name: "Connection", value: "close")
        let request = head
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(timeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(
                            AnswerHandler(request: request, limit: SupervisorMQTTService.maximumBytes, promise: promise))
                    }
                }
                .connect(host: endpoint.host, port: endpoint.port).get()
        } catch {
            promise.fail(SupervisorError.unavailable("cannot connect to \(endpoint.host):\(endpoint.port): \(error)"))
            return try await promise.futureResult.get()
        }
        let deadline = channel.eventLoop.scheduleTask(in: timeout) {
            promise.fail(SupervisorError.unavailable("no answer within \(timeout.nanoseconds / 1_000_000_000) s"))
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        return try await promise.futureResult.get()
    }
}

/// Sends the request once active; collects the status and the body up to `limit` bytes.
private final class AnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let request: HTTPRequestHead
    private let limit: Int
    private let promise: EventLoopPromise<(Int, [UInt8])>
    private var status = 0
    private var body: [UInt8] = []
    private var done = false

    init(request: HTTPRequestHead, limit: Int, promise: EventLoopPromise<(Int, [UInt8])>) {
        self.request = request
        self.limit = limit
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(request)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
        case .body(var buffer):
            guard body.count + buffer.readableBytes <= limit else {
                finish(context, .failure(SupervisorError.tooLarge(what: "the Supervisor's answer", limit: limit)))
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            finish(context, .success((status, body)))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(context, .failure(SupervisorError.unavailable("\(error)")))
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(SupervisorError.unavailable("the connection closed before the answer was complete"))
        }
        context.fireChannelInactive()
    }

    private func finish(_ context: ChannelHandlerContext, _ result: Result<(Int, [UInt8]), any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
        context.close(promise: nil)
    }
}

private extension String {
    var leftPadded: String { count < 2 ? "0" + self : self }
}
