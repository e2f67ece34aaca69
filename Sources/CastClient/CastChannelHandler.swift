import CastProtocol
import NIOCore
import NIOTLS
import StageTrace

/// Last handler of a device channel: hands decoded messages, TLS readiness, errors and closure
/// to the `DeviceConnection` that owns the channel. Runs on the connection's event loop.
final class CastChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = CastMessage

    private let connection: DeviceConnection
    private let generation: Int

    init(connection: DeviceConnection, generation: Int) {
        self.connection = connection
        self.generation = generation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        StageTrace.mark(.castDecoded)
        connection.received(unwrapInboundIn(data), generation: generation)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls {
            connection.tlsReady(channel: context.channel, generation: generation)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connection.failed(error, generation: generation)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.closed(generation: generation)
        context.fireChannelInactive()
    }
}

/// First handler of a device channel when stage tracing is on: marks bytes read before TLS.
final class StageTraceTap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        StageTrace.mark(.castRead)
        context.fireChannelRead(data)
    }
}
