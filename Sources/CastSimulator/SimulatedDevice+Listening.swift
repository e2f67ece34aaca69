import CastProtocol
import NIOCore
import NIOPosix
import NIOSSL

/// Where a device's Cast channel listens.
struct BoundAddress: Sendable, Hashable {
    var host: String
    var port: Int
}

// Listeners of a simulated device: the Cast channel (TLS) on its address and port, and its
// `eureka_info` servers (HTTP and HTTPS) when the configuration gives them ports.
extension SimulatedDevice {
    /// Binds the listeners and starts the heartbeat and media clock.
    func start() async throws {
        try await eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.resetApplications()
            self.startTimers()
            return self.bindListeners()
        }.get()
    }

    func startTimers() {
        if let interval = configuration.heartbeatInterval, interval > .zero {
            heartbeatTask = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
                self.sendPings()
            }
        }
        tickTask = eventLoop.scheduleRepeatedTask(initialDelay: configuration.tickInterval,
                                                 delay: configuration.tickInterval) { _ in
            self.tick()
            self.checkAppTimeouts()
        }
    }

    /// The Cast listener on the current address, then the `eureka_info` listeners that are on.
    func bindListeners() -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        let address = addressBox.withLock { $0 }
        return bindCast(host: address.host, port: address.port).flatMap {
            self.bindEurekaListeners()
        }
    }

    func bindCast(host: String, port: Int) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try self.setUp(channel) }
            }
        return bootstrap.bind(host: host, port: port).map { channel in
            self.listener = channel
            let bound = BoundAddress(host: host, port: channel.localAddress?.port ?? port)
            self.addressBox.withLock { $0 = bound }
            self.listeningBox.withLock { $0 = true }
            self.logger.debug("listening on \(host):\(bound.port)")
        }
    }

    func setUp(_ channel: any Channel) throws {
        eventLoop.assertInEventLoop()
        guard !shutDown, listener != nil else {
            channel.close(promise: nil)
            return
        }
        connectionCounter += 1
        let injector = RawBytesInjector()
        let connection = SenderConnection(number: connectionCounter, channel: channel, injector: injector)
        connections[connection.number] = connection
        recorder.count { $0.connectionsAccepted += 1 }
        countOpenConnections()
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(NIOSSLServerHandler(context: sslContext))
        try sync.addHandler(injector)
        try sync.addHandler(ByteToMessageHandler(CastFrameDecoder()))
        try sync.addHandler(MessageToByteHandler(CastFrameEncoder()))
        try sync.addHandler(SenderChannelHandler(device: self, connection: connection))
    }

    func connectionClosed(_ connection: SenderConnection) {
        eventLoop.assertInEventLoop()
        connections[connection.number] = nil
        countOpenConnections()
    }

    /// Updates the open-connection counters and times an overlap (two or more open at once).
    func countOpenConnections() {
        let open = connections.count
        var overlap: Int?
        if open >= 2 {
            if loop.value.overlapSince == nil { loop.value.overlapSince = .now() }
        } else if let since = loop.value.overlapSince {
            loop.value.overlapSince = nil
            overlap = Int((NIODeadline.now() - since).nanoseconds / 1_000_000)
        }
        let ended = overlap
        recorder.count { c in
            c.openConnections = open
            c.maxOpenConnections = max(c.maxOpenConnections, open)
            if let ended { c.longestOverlapMilliseconds = max(c.longestOverlapMilliseconds, ended) }
        }
    }

    /// Closes every sender connection and every listener (Cast and `eureka_info`); returns when
    /// all are closed.
    func closeEverything() -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        listeningBox.withLock { $0 = false }
        let closes = connections.values.map { $0.channel.close() } + [listener?.close()].compactMap { $0 }
            + loop.value.eurekaListeners.values.map { $0.close() }
        connections.removeAll()
        countOpenConnections()
        listener = nil
        loop.value.eurekaListeners.removeAll()
        return EventLoopFuture.andAllComplete(closes, on: eventLoop)
    }

    /// Closes the listeners and every connection and stops the timers.
    func shutdown() async {
        let future = eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.shutDown = true
            self.heartbeatTask?.cancel()
            self.tickTask?.cancel()
            self.rebind?.cancel()
            self.hostileTask?.cancel()
            self.loop.value.group = nil
            self.loop.value.memberships.removeAll()
            return self.closeEverything()
        }
        try? await future.get()
    }
}
