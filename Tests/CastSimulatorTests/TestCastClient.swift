import CastProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import TestSupport

/// A raw Cast sender for tests: TLS without verification, CastFrameDecoder inbound, frames
/// written as bytes (so tests can also send garbage). Collects everything it receives.
final class TestCastClient: Sendable {
    struct Inbox {
        var messages: [CastMessage] = []
        var errors: [any Error] = []
        var closed = false
    }

    let channel: any Channel
    private let inbox: NIOLockedValueBox<Inbox>

    private init(channel: any Channel, inbox: NIOLockedValueBox<Inbox>) {
        self.channel = channel
        self.inbox = inbox
    }

    static func connect(host: String = "127.0.0.1", port: Int, group: any EventLoopGroup) async throws -> TestCastClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        let context = try NIOSSLContext(configuration: tls)
        let inbox = NIOLockedValueBox(Inbox())
        let channel = try await ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(3))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                    try sync.addHandler(ByteToMessageHandler(CastFrameDecoder()))
                    try sync.addHandler(Collector(inbox: inbox))
                }
            }
            .connect(host: host, port: port).get()
        return TestCastClient(channel: channel, inbox: inbox)
    }

    final class Collector: ChannelInboundHandler {
        typealias InboundIn = CastMessage
        let inbox: NIOLockedValueBox<Inbox>
        init(inbox: NIOLockedValueBox<Inbox>) { self.inbox = inbox }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let message = unwrapInboundIn(data)
            inbox.withLockedValue { $0.messages.append(message) }
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            inbox.withLockedValue { $0.errors.append(error) }
            context.close(promise: nil)
        }
        func channelInactive(context: ChannelHandlerContext) {
            inbox.withLockedValue { $0.closed = true }
        }
    }

    var messages: [CastMessage] { inbox.withLockedValue { $0.messages } }
    /// Forgets the messages received so far (a test then waits for what comes next).
    func forget() { inbox.withLockedValue { $0.messages.removeAll() } }
    var errors: [any Error] { inbox.withLockedValue { $0.errors } }
    var isClosed: Bool { inbox.withLockedValue { $0.closed } }

    func send(_ message: CastMessage) async throws {
        try await sendRaw(CastFraming.frame(message))
    }

    func sendRaw(_ bytes: [UInt8]) async throws {
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        try await channel.writeAndFlush(buffer)
    }

    func send(_ namespace: String, to destination: String, _ json: String, from source: String = "sender-0") async throws {
        try await send(CastMessage(source: source, destination: destination, namespace: namespace, json: json))
    }

    func connect(to endpoint: String, from source: String = "sender-0") async throws {
        try await send(CastNamespace.connection, to: endpoint, ConnectionMessage.connect(
            userAgent: "test", connType: nil, senderInfo: nil, protocolVersions: nil).json(), from: source)
    }

    /// The first received message matching `predicate`, waiting up to `timeout`.
    func waitFor(timeout: Duration = .seconds(30),
                 _ predicate: @Sendable (CastMessage) -> Bool) async -> CastMessage? {
        var found: CastMessage?
        _ = await waitUntil(timeout: timeout, interval: .milliseconds(5)) {
            found = messages.first(where: predicate)
            return found != nil
        }
        return found
    }

    /// The first message of `type` on `namespace` (optionally with `requestId`).
    func waitFor(namespace: String, type: String, requestId: Int? = nil, timeout: Duration = .seconds(30),
                 where extra: @escaping @Sendable (JSONValue) -> Bool = { _ in true }) async -> JSONValue? {
        let message = await waitFor(timeout: timeout) { m in
            guard m.namespace == namespace, let json = m.json, json["type"]?.stringValue == type else { return false }
            if let requestId, json["requestId"]?.intValue != requestId { return false }
            return extra(json)
        }
        return message?.json
    }

    func close() async { try? await channel.close() }
}

extension CastMessage {
    var json: JSONValue? {
        guard let text = payload.text else { return nil }
        return try? CastJSON.decode(JSONValue.self, from: text)
    }
}
