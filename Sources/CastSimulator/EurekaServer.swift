import CastProtocol
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The two ways a real device serves `eureka_info`: plain HTTP (port 8008) and TLS with its
/// self-signed certificate (port 8443).
public enum EurekaTransport: String, Sendable, Hashable, CaseIterable {
    case http, https
}

/// How a simulated device answers `GET /setup/eureka_info` (the `eureka` control action), for
/// tests of a client that must survive any answer.
public struct EurekaBehaviour: Sendable, Hashable {
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// The device's facts as JSON (200).
        case normal
        /// 500 with a short text body.
        case fail
        /// 200 with 4 KiB of bytes that are not JSON.
        case garbage
        /// 200 with a 1 MiB JSON body, chunked (no Content-Length).
        case oversized
        /// 403 unless the `Host` header is empty, as real devices answer a request that names
        /// them by host name; with an empty `Host` the normal answer.
        case forbiddenHost = "forbidden_host"
    }

    public var mode: Mode
    /// Every answer waits this long first (a slow device; the connection stays open).
    public var delay: TimeAmount
    /// Whether the HTTP (8008) and HTTPS (8443) listeners are open; a closed one refuses
    /// connections (TLS-only, plain-only or no `eureka_info` at all).
    public var listening: Set<EurekaTransport>

    public init(mode: Mode = .normal, delay: TimeAmount = .zero,
                listening: Set<EurekaTransport> = Set(EurekaTransport.allCases)) {
        self.mode = mode
        self.delay = delay
        self.listening = listening
    }
}

extension SimulatedDevice {
    /// The configured port of `transport`, nil when the device has no such server.
    func eurekaPort(_ transport: EurekaTransport) -> Int? {
        switch transport {
        case .http: return configuration.eurekaHTTPPort
        case .https: return configuration.eurekaHTTPSPort
        }
    }

    /// Binds every configured `eureka_info` listener that is on and not bound yet.
    func bindEurekaListeners() -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        let wanted = EurekaTransport.allCases.filter {
            eurekaPort($0) != nil && loop.value.eurekaBehaviour.listening.contains($0)
                && loop.value.eurekaListeners[$0] == nil
        }
        let host = self.host
        let binds = wanted.map { transport -> EventLoopFuture<Void> in
            let port = eurekaPort(transport) ?? 0
            let tls = transport == .https ? sslContext : nil
            return ServerBootstrap(group: eventLoop)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
                        try sync.configureHTTPServerPipeline(withErrorHandling: true)
                        try sync.addHandler(EurekaHTTPHandler(device: self))
                    }
                }
                .bind(host: host, port: port)
                .map { channel in
                    guard !self.shutDown else {
                        channel.close(promise: nil)
                        return
                    }
                    self.loop.value.eurekaListeners[transport] = channel
                    self.logger.debug("eureka_info (\(transport.rawValue)) on \(host):\(channel.localAddress?.port ?? port)")
                }
        }
        return EventLoopFuture.andAllSucceed(binds, on: eventLoop)
    }

    /// The bound port of the `eureka_info` listener of `transport` (nil while it is closed).
    public func eurekaBoundPort(_ transport: EurekaTransport) async -> Int? {
        try? await eventLoop.submit { self.loop.value.eurekaListeners[transport]?.localAddress?.port }.get()
    }

    /// Changes how `eureka_info` answers; listeners turned off close, turned on listen again.
    public func setEurekaBehaviour(_ behaviour: EurekaBehaviour) async throws {
        try await eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.loop.value.eurekaBehaviour = behaviour
            var closes: [EventLoopFuture<Void>] = []
            for (transport, channel) in self.loop.value.eurekaListeners where !behaviour.listening.contains(transport) {
                closes.append(channel.close())
                self.loop.value.eurekaListeners[transport] = nil
            }
            return EventLoopFuture.andAllComplete(closes, on: self.eventLoop).flatMap {
                self.isListening ? self.bindEurekaListeners() : self.eventLoop.makeSucceededVoidFuture()
            }
        }.get()
    }

    /// The answer to one `eureka_info` request: status, content type and body (nil: streamed
    /// oversized body).
    func eurekaAnswer(uri: String, hostHeader: String?) -> (HTTPResponseStatus, String, [UInt8]?) {
        eventLoop.assertInEventLoop()
        recorder.count { $0.eurekaRequests += 1 }
        let components = URLComponents(string: uri)
        guard components?.path == "/setup/eureka_info" else { return (.notFound, "text/plain", Array("not found\n".utf8)) }
        let behaviour = loop.value.eurekaBehaviour
        switch behaviour.mode {
        case .fail:
            return (.internalServerError, "text/plain", Array("internal error\n".utf8))
        case .garbage:
            var random = SeededRandom(seed: 0xE0E0)
            let bytes = [0x00, 0xFF, 0x7B, 0x7B] + (0..<4092).map { _ in UInt8.random(in: 0...255, using: &random) }
            return (.ok, "application/json", bytes)
        case .oversized:
            return (.ok, "application/json", nil)
        case .forbiddenHost:
            if let hostHeader, !hostHeader.isEmpty {
                return (.forbidden, "text/plain", Array("forbidden\n".utf8))
            }
        case .normal:
            break
        }
        let params = components?.queryItems?.first { $0.name == "params" }?.value
            .map { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }
        let body = (try? CastJSON.encode(eurekaInfo(params: params))) ?? "{}"
        return (.ok, "application/json", Array(body.utf8))
    }
}

/// Serves `GET /setup/eureka_info` for one device, on the device's event loop. Every answer
/// closes the connection (`Connection: close`).
final class EurekaHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let device: SimulatedDevice
    private var head: HTTPRequestHead?
    private var answered = false

    init(device: SimulatedDevice) { self.device = device }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break  // a GET has none; anything sent is ignored
        case .end:
            guard let head, !answered else { return }
            answered = true
            let delay = device.loop.value.eurekaBehaviour.delay
            let answer = device.eurekaAnswer(uri: head.uri, hostHeader: head.headers.first(name: "Host"))
            if delay > .zero {
                context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                    self.write(answer, context: context)
                }
            } else {
                write(answer, context: context)
            }
        }
    }

    private func write(_ answer: (HTTPResponseStatus, String, [UInt8]?), context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let (status, contentType, body) = answer
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Connection", value: "close")
        if let body { headers.add(name: "Content-Length", value: String(body.count)) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                      promise: nil)
        if let body {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        } else {
            // Oversized: a JSON object whose one string is 1 MiB long, in 16 KiB chunks.
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "{\"name\":\"")))),
                          promise: nil)
            let chunk = context.channel.allocator.buffer(repeating: UInt8(ascii: "a"), count: 16_384)
            for _ in 0..<64 { context.write(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil) }
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "\"}")))),
                          promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
