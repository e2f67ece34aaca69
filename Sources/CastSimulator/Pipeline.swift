import CastProtocol
import NIOCore

/// Sits between TLS and the Cast codec so fault injection can write raw bytes (garbage and
/// oversized frames) that bypass `CastFrameEncoder`. Passes everything else through.
final class RawBytesInjector: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes `bytes` straight to TLS. Must be called on the channel's event loop.
    func writeRaw(_ bytes: [UInt8]) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}

/// The last handler of a sender connection: hands decoded messages to the device and closes the
/// connection on any error (garbage from a client must never hurt the device).
final class SenderChannelHandler: ChannelInboundHandler {
    typealias InboundIn = CastMessage

    private let device: SimulatedDevice
    private let connection: SenderConnection

    init(device: SimulatedDevice, connection: SenderConnection) {
        self.device = device
        self.connection = connection
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        device.received(unwrapInboundIn(data), on: connection)
    }

    func channelInactive(context: ChannelHandlerContext) {
        device.connectionClosed(connection)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        device.logger.debug("closing sender connection \(connection.number): \(error)")
        context.close(promise: nil)
    }
}

/// One TCP connection from a sender. Its mutable state and its injector are bound to the
/// device's event loop (`NIOLoopBoundBox` / `NIOLoopBound`: every access is checked to be there).
final class SenderConnection: Sendable {
    struct State {
        /// Virtual connections: source id -> endpoints it CONNECTed to.
        var virtualConnections: [String: Set<String>] = [:]
        /// The last request (a message with a requestId > 0) per namespace and source id, for the
        /// hostile class `broken_replies`.
        var lastRequests: [String: HostileRequest] = [:]
        /// Messages lost to the `swallowFirstMessages` fault on this connection so far.
        var swallowed = 0
    }

    let number: Int
    let channel: any Channel
    private let boundInjector: NIOLoopBound<RawBytesInjector>
    private let state: NIOLoopBoundBox<State>

    /// Must be called on the channel's event loop (the device's).
    init(number: Int, channel: any Channel, injector: RawBytesInjector) {
        self.number = number
        self.channel = channel
        self.boundInjector = NIOLoopBound(injector, eventLoop: channel.eventLoop)
        self.state = NIOLoopBoundBox(State(), eventLoop: channel.eventLoop)
    }

    var injector: RawBytesInjector { boundInjector.value }

    var virtualConnections: [String: Set<String>] {
        get { state.value.virtualConnections }
        set { state.value.virtualConnections = newValue }
    }

    var lastRequests: [String: HostileRequest] {
        get { state.value.lastRequests }
        set { state.value.lastRequests = newValue }
    }

    var swallowed: Int {
        get { state.value.swallowed }
        set { state.value.swallowed = newValue }
    }

    func isConnected(source: String, to endpoint: String) -> Bool {
        virtualConnections[source]?.contains(endpoint) == true
    }

    /// Source ids with a virtual connection to `endpoint`.
    func sources(connectedTo endpoint: String) -> [String] {
        virtualConnections.filter { $0.value.contains(endpoint) }.map(\.key).sorted()
    }
}
