import CastProtocol
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Errors of the simulator API.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A running application on a simulated device.
struct RunningApp: Sendable {
    enum Kind: Sendable { case media, echo, backdrop }
    var appId: String
    var kind: Kind
    var displayName: String
    var namespaces: [String]
    var sessionId: String
    var launchedFromCloud: Bool

    var transportId: String { sessionId }

    static func make(appId: String, launchedFromCloud: Bool = false) -> RunningApp? {
        let session = UUID().uuidString.lowercased()
        switch appId {
        case SimulatedAppID.defaultMediaReceiver:
            return RunningApp(
                appId: appId, kind: .media, displayName: "Default Media Receiver",
                namespaces: ["urn:x-cast:com.google.cast.cac", "urn:x-cast:com.google.cast.debugoverlay",
                             "urn:x-cast:com.google.cast.broadcast", CastNamespace.media],
                sessionId: session, launchedFromCloud: launchedFromCloud)
        case SimulatedAppID.echo:
            return RunningApp(appId: appId, kind: .echo, displayName: "cast2mqtt Echo",
                              namespaces: [SimulatedAppID.echoNamespace], sessionId: session,
                              launchedFromCloud: launchedFromCloud)
        case SimulatedAppID.backdrop:
            return RunningApp(appId: appId, kind: .backdrop, displayName: "Backdrop",
                              namespaces: ["urn:x-cast:com.google.cast.debugoverlay"], sessionId: session,
                              launchedFromCloud: false)
        default:
            return nil
        }
    }

    var receiverApplication: ReceiverApplication {
        ReceiverApplication(
            appId: appId, appType: "WEB", displayName: displayName, iconUrl: "",
            isIdleScreen: kind == .backdrop, launchedFromCloud: launchedFromCloud, namespaces: namespaces,
            sessionId: sessionId, statusText: kind == .backdrop ? "" : displayName, transportId: transportId,
            universalAppId: appId)
    }
}

/// What a stream transfer carries from the source device to the target.
public struct TransferredSession: Sendable, Hashable {
    public var appId: String
    /// The `LoadRequestData` snapshot (nil when the app had no media session).
    public var loadRequest: JSONValue?
}

/// One simulated Cast device: a TLS server speaking Cast v2 (on 127.0.0.1 and a port of its own,
/// or on an address of its own, see `SimulatedDeviceConfiguration.host`).
///
/// Every piece of mutable device state lives on `eventLoop` (all connections of the device are
/// accepted onto that same loop) in a `NIOLoopBoundBox` (`DeviceLoopState`): every access checks
/// that it runs on the loop, in release builds too. The public API hops there. Only the
/// recording, counters and the bound address are read from other threads, behind locks.
public final class SimulatedDevice: Sendable {
    public let configuration: SimulatedDeviceConfiguration
    public let eventLoop: any EventLoop
    let logger: Logger
    let recorder = Recorder()
    let sslContext: NIOSSLContext
    let portBox: NIOLockedValueBox<Int>
    let listeningBox = NIOLockedValueBox(false)
    /// The device state, confined to `eventLoop` (see `DeviceLoopState`; the properties of the
    /// same names in `SimulatedDevice+LoopState.swift` forward to it).
    let loop: NIOLoopBoundBox<DeviceLoopState>

    public var id: String { configuration.id }
    public var name: String { configuration.name }
    /// The bound TCP port (stays the same across `restart`).
    public var port: Int { portBox.withLockedValue { $0 } }
    /// False while the listener is closed (during a restart's refusal window, or after shutdown).
    public var isListening: Bool { listeningBox.withLockedValue { $0 } }

    init(configuration: SimulatedDeviceConfiguration, eventLoop: any EventLoop, logger: Logger) throws {
        self.configuration = configuration
        self.eventLoop = eventLoop
        var logger = logger
        logger[metadataKey: "cast.device"] = "\(configuration.name)"
        self.logger = logger
        self.sslContext = try SelfSignedIdentity.generate(commonName: configuration.id).serverContext()
        self.portBox = NIOLockedValueBox(configuration.port)
        let volume = ReceiverVolume(
            controlType: configuration.volumeControlType, level: configuration.initialVolumeLevel, muted: false,
            stepInterval: configuration.volumeStepInterval)
        self.loop = .makeBoxSendingValue(DeviceLoopState(volume: volume), eventLoop: eventLoop)
    }

    // MARK: - Lifecycle

    /// Binds the listener and starts the heartbeat and media clock.
    func start() async throws {
        try await eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.resetApplications()
            self.startTimers()
            return self.bind(port: self.configuration.port)
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
        }
    }

    func bind(port: Int) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try self.setUp(channel) }
            }
        return bootstrap.bind(host: "127.0.0.1", port: port).map { channel in
            self.listener = channel
            self.portBox.withLockedValue { $0 = channel.localAddress?.port ?? port }
            self.listeningBox.withLockedValue { $0 = true }
            self.logger.debug("listening on 127.0.0.1:\(self.port)")
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
    }

    /// Closes the listener and every connection and stops the timers.
    func shutdown() async {
        let future = eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.shutDown = true
            self.heartbeatTask?.cancel()
            self.tickTask?.cancel()
            self.rebind?.cancel()
            self.hostileTask?.cancel()
            self.listeningBox.withLockedValue { $0 = false }
            let closes = self.connections.values.map { $0.channel.close() } + [self.listener?.close()].compactMap { $0 }
            self.connections.removeAll()
            self.listener = nil
            return EventLoopFuture.andAllComplete(closes, on: self.eventLoop)
        }
        try? await future.get()
    }

    // MARK: - Sending

    func send(_ message: CastMessage, on connection: SenderConnection) {
        eventLoop.assertInEventLoop()
        guard !silenced, !shutDown, connection.channel.isActive else { return }
        connection.channel.writeAndFlush(message, promise: nil)
    }

    /// Sends `json` from `endpoint` to every connection with a virtual connection to it
    /// (destination `*`, once per TCP connection).
    func broadcast(from endpoint: String, namespace: String, json: String) {
        for connection in connections.values.sorted(by: { $0.number < $1.number })
        where !connection.sources(connectedTo: endpoint).isEmpty {
            send(CastMessage(source: endpoint, destination: CastEndpoint.broadcast, namespace: namespace, json: json),
                 on: connection)
        }
    }

    /// Runs `body` on the loop after `delay` (the simulated processing time).
    func later(_ delay: TimeAmount, _ body: @escaping @Sendable () -> Void) {
        if delay <= .zero {
            body()
        } else {
            eventLoop.scheduleTask(in: delay, body)
        }
    }

    /// Replies to one sender after the reply latency.
    func reply(_ json: String, from endpoint: String, namespace: String, to source: String,
                       on connection: SenderConnection, thenBroadcast broadcastJSON: String? = nil) {
        later(replyDelay) {
            self.send(CastMessage(source: endpoint, destination: source, namespace: namespace, json: json),
                      on: connection)
            if let broadcastJSON { self.broadcast(from: endpoint, namespace: namespace, json: broadcastJSON) }
        }
    }

    // MARK: - Receiving

    func received(_ message: CastMessage, on connection: SenderConnection) {
        eventLoop.assertInEventLoop()
        if silenced || shutDown {
            recorder.record(message, connection: connection.number, delivered: false)
            return
        }
        if connection.swallowed < swallowFirstMessages {
            connection.swallowed += 1
            recorder.record(message, connection: connection.number, delivered: false)
            return
        }
        if answeringPingsOnly, message.namespace != CastNamespace.heartbeat {
            recorder.record(message, connection: connection.number, delivered: false)
            return
        }
        switch message.namespace {
        case CastNamespace.connection:
            recorder.record(message, connection: connection.number, delivered: true)
            handleConnection(message, on: connection)
            return
        case CastNamespace.heartbeat:
            // Transport-level: answered without a virtual connection.
            recorder.record(message, connection: connection.number, delivered: true)
            if HeartbeatMessage.parse(message.payload) == .ping {
                send(CastMessage(source: message.destinationID, destination: message.sourceID,
                                 namespace: CastNamespace.heartbeat, json: HeartbeatMessage.pong.json()),
                     on: connection)
            }
            return
        default:
            break
        }
        let destination = message.destinationID
        let known = destination == CastEndpoint.receiver || destination == app?.transportId
        let deliver = known && connection.isConnected(source: message.sourceID, to: destination)
        recorder.record(message, connection: connection.number, delivered: deliver)
        guard deliver else {
            logger.debug("not delivered (no virtual connection): \(message.namespace) \(message.sourceID)->\(destination)")
            return
        }
        noteRequest(message, on: connection)
        if destination == CastEndpoint.receiver {
            switch message.namespace {
            case CastNamespace.receiver: handleReceiver(message, on: connection)
            case CastNamespace.multizone: handleMultizone(message, on: connection)
            default: break
            }
            return
        }
        guard let app, app.namespaces.contains(message.namespace) else { return }
        switch (app.kind, message.namespace) {
        case (.media, CastNamespace.media): handleMedia(message, on: connection)
        case (.echo, SimulatedAppID.echoNamespace):
            let echo = CastMessage(sourceID: app.transportId, destinationID: message.sourceID,
                                   namespace: message.namespace, payload: message.payload)
            later(replyDelay) { self.send(echo, on: connection) }
        default: break
        }
    }

    func handleConnection(_ message: CastMessage, on connection: SenderConnection) {
        guard let parsed = ConnectionMessage.parse(message.payload) else { return }
        let source = message.sourceID
        let endpoint = message.destinationID
        switch parsed {
        case .connect(_, _, _, let versions):
            let allowed = endpoint == CastEndpoint.receiver || (endpoint == app?.transportId && !refusingAppConnections)
            guard allowed else {
                // Refusal of a connection to an endpoint that does not exist (Open Screen does this).
                send(CastMessage(source: endpoint, destination: source, namespace: CastNamespace.connection,
                                 json: ConnectionMessage.close(reasonCode: nil).json()), on: connection)
                return
            }
            connection.virtualConnections[source, default: []].insert(endpoint)
            if let versions, !versions.isEmpty {
                // CONNECTED only when the sender announced protocol versions (Open Screen behaviour).
                let version = versions.filter { $0 >= 0 && $0 <= 3 }.max() ?? 0
                send(CastMessage(source: endpoint, destination: source, namespace: CastNamespace.connection,
                                 json: ConnectionMessage.connected(protocolVersion: version).json()), on: connection)
            }
        case .close:
            connection.virtualConnections[source]?.remove(endpoint)
        case .connected:
            break
        }
    }

    // MARK: - Public API: state and recording

    /// Every message this device received so far, in order, optionally filtered.
    public func received(namespace: String? = nil, type: String? = nil) -> [RecordedMessage] {
        recorder.messages(namespace: namespace, type: type)
    }

    /// Forgets the recorded messages (counters stay).
    public func clearReceived() { recorder.clear() }

    public var counters: SimulatorCounters { recorder.counters }

    /// A snapshot of the device state.
    public func state() async throws -> SimulatedDeviceState {
        try await eventLoop.submit {
            let now = self.configuration.clock.now()
            return SimulatedDeviceState(
                id: self.id, name: self.name, port: self.port, listening: self.isListening, silenced: self.silenced,
                connections: self.connections.count, receiverStatus: self.receiverStatus(),
                mediaStatus: self.media?.status(at: now), counters: self.counters)
        }.get()
    }

}
