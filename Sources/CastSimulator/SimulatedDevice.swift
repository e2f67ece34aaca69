import CastProtocol
import Foundation
import Logging
import Synchronization
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
    /// `other`: an app the simulator only shows (started by `remoteLaunch` with a display name,
    /// e.g. a timer or an Assistant answer); it speaks no namespace.
    enum Kind: Sendable { case media, echo, backdrop, dashCast, lovelace, other }
    var appId: String
    var kind: Kind
    var displayName: String
    var namespaces: [String]
    var sessionId: String
    var launchedFromCloud: Bool
    /// RECEIVER_STATUS `statusText` (apps may change it while they run).
    var statusText: String
    /// The app sets the receiver platform's `disableIdleTimeout` (the page timeout spares it).
    var disablesIdleTimeout = false
    /// `clock` time of the launch or of the last media load (the display timeout counts from it).
    var lastActivity: Double = 0
    /// `clock` time since when the app has had no media and no sender (the page timeout).
    var idleSince: Double?
    /// The Lovelace receiver's placeholder image: when it was last loaded, and its title.
    var lovelaceImage: (at: Double, title: String)?
    /// The display apps' own state (SimulatedDevice+Display.swift).
    var dashCast: DashCastState?
    var lovelace: LovelaceState?

    var transportId: String { sessionId }

    init(appId: String, kind: Kind, displayName: String, namespaces: [String], sessionId: String,
         launchedFromCloud: Bool, statusText: String? = nil) {
        self.appId = appId
        self.kind = kind
        self.displayName = displayName
        self.namespaces = namespaces
        self.sessionId = sessionId
        self.launchedFromCloud = launchedFromCloud
        self.statusText = statusText ?? (kind == .backdrop ? "" : displayName)
    }

    static func make(appId: String, launchedFromCloud: Bool = false) -> RunningApp? {
        let session = UUID().uuidString.lowercased()
        switch appId {
        case SimulatedAppID.defaultMediaReceiver:
            return RunningApp(
                appId: appId, kind: .media, displayName: "Default Media Receiver",
                namespaces: ["urn:x-cast:com.google.cast.cac", "urn:x-cast:com.google.cast.debugoverlay",
                             "urn:x-cast:com.google.cast.broadcast", CastNamespace.media],
                sessionId: session, launchedFromCloud: launchedFromCloud)
        case SimulatedAppID.music:
            return RunningApp(appId: appId, kind: .media, displayName: "Sim Music",
                              namespaces: [CastNamespace.media, "urn:x-cast:com.cast2mqtt.music"], sessionId: session,
                              launchedFromCloud: launchedFromCloud)
        case SimulatedAppID.echo:
            return RunningApp(appId: appId, kind: .echo, displayName: "cast2mqtt Echo",
                              namespaces: [SimulatedAppID.echoNamespace], sessionId: session,
                              launchedFromCloud: launchedFromCloud)
        case SimulatedAppID.backdrop:
            return RunningApp(appId: appId, kind: .backdrop, displayName: "Backdrop",
                              namespaces: ["urn:x-cast:com.google.cast.debugoverlay"], sessionId: session,
                              launchedFromCloud: false)
        case SimulatedAppID.dashCast:
            // A receiver page of the old (v2) SDK: no media namespace; its status text is the one
            // it starts with until its page is ready.
            var app = RunningApp(appId: appId, kind: .dashCast, displayName: "DashCast",
                                 namespaces: ["urn:x-cast:com.google.cast.cac", "urn:x-cast:com.google.cast.debugoverlay",
                                              "urn:x-cast:com.google.cast.broadcast", SimulatedAppID.dashCastNamespace],
                                 sessionId: session, launchedFromCloud: launchedFromCloud,
                                 statusText: DashCastState.startingText)
            app.dashCast = DashCastState()
            return app
        case SimulatedAppID.lovelace:
            var app = RunningApp(appId: appId, kind: .lovelace, displayName: "Home Assistant Lovelace",
                                 namespaces: ["urn:x-cast:com.google.cast.cac", "urn:x-cast:com.google.cast.debugoverlay",
                                              SimulatedAppID.lovelaceNamespace, "urn:x-cast:com.google.cast.broadcast",
                                              CastNamespace.media],
                                 sessionId: session, launchedFromCloud: launchedFromCloud)
            app.disablesIdleTimeout = true
            app.lovelace = LovelaceState()
            return app
        default:
            return nil
        }
    }

    var receiverApplication: ReceiverApplication {
        ReceiverApplication(
            appId: appId, appType: "WEB", displayName: displayName, iconUrl: "",
            isIdleScreen: kind == .backdrop, launchedFromCloud: launchedFromCloud, namespaces: namespaces,
            sessionId: sessionId, statusText: statusText, transportId: transportId,
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
    /// The DER of the TLS certificate the device presents (signed in its AuthResponse).
    let tlsCertificateDER: [UInt8]
    /// Where the Cast channel listens: the configured address and port (the port the kernel
    /// picked for port 0); a group's endpoint moves with its leader.
    let addressBox: Mutex<BoundAddress>
    let listeningBox = Mutex(false)
    /// The device state, confined to `eventLoop` (see `DeviceLoopState`; the properties of the
    /// same names in `SimulatedDevice+LoopState.swift` forward to it).
    let loop: NIOLoopBoundBox<DeviceLoopState>

    /// True for a group's endpoint (`CastSimulator.addGroup`).
    public let isGroup: Bool

    public var id: String { configuration.id }
    public var name: String { configuration.name }
    /// The bound TCP port (stays the same across `restart`).
    public var port: Int { addressBox.withLock { $0.port } }
    /// The address the Cast channel listens on (`configuration.host`; for a group, its leader's).
    public var host: String { addressBox.withLock { $0.host } }
    /// False while the listener is closed (during a restart's refusal window, or after shutdown).
    public var isListening: Bool { listeningBox.withLock { $0 } }

    init(configuration: SimulatedDeviceConfiguration, eventLoop: any EventLoop, logger: Logger,
         group: GroupState? = nil) throws {
        self.configuration = configuration
        self.isGroup = group != nil
        self.eventLoop = eventLoop
        var logger = logger
        logger[metadataKey: "cast.device"] = "\(configuration.name)"
        self.logger = logger
        let identity = try SelfSignedIdentity.generate(commonName: configuration.id)
        self.sslContext = try identity.serverContext()
        self.tlsCertificateDER = identity.certificateDER
        self.addressBox = Mutex(BoundAddress(host: configuration.host, port: configuration.port))
        let volume = ReceiverVolume(
            controlType: configuration.volumeControlType, level: configuration.initialVolumeLevel, muted: false,
            stepInterval: configuration.volumeStepInterval)
        var state = DeviceLoopState(volume: volume, display: DisplaySettings(configuration))
        state.group = group
        self.loop = .makeBoxSendingValue(state, eventLoop: eventLoop)
    }

    // MARK: - Sending

    func send(_ message: CastMessage, on connection: SenderConnection) {
        eventLoop.assertInEventLoop()
        guard !shutDown, connection.channel.isActive else { return }
        if silenced {
            recorder.count { $0.withheldWhileSilenced += 1 }
            return
        }
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
        case CastNamespace.deviceAuth:
            // Transport-level, answered before any CONNECT (SimulatedDevice+DeviceAuth.swift).
            recorder.record(message, connection: connection.number, delivered: true)
            answerChallenge(message, on: connection)
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
        let known = destination == CastEndpoint.receiver || destination == app?.transportId || isReplayTransport(destination)
        let deliver = known && connection.isConnected(source: message.sourceID, to: destination)
        recorder.record(message, connection: connection.number, delivered: deliver)
        guard deliver else {
            logger.debug("not delivered (no virtual connection): \(message.namespace) \(message.sourceID)->\(destination)")
            return
        }
        noteRequest(message, on: connection)
        if answerFromReplay(message, on: connection) { return }
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
        case (.media, CastNamespace.media), (.lovelace, CastNamespace.media): handleMedia(message, on: connection)
        case (.dashCast, SimulatedAppID.dashCastNamespace): handleDashCast(message, on: connection)
        case (.lovelace, SimulatedAppID.lovelaceNamespace): handleLovelace(message, on: connection)
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
            let allowed = endpoint == CastEndpoint.receiver || isReplayTransport(endpoint)
                || (endpoint == app?.transportId && !refusingAppConnections)
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
                id: self.id, name: self.name, host: self.host, port: self.port, listening: self.isListening,
                silenced: self.silenced, connections: self.connections.count, receiverStatus: self.receiverStatus(),
                mediaStatus: self.media?.status(at: now), counters: self.counters,
                group: self.loop.value.group.map(self.groupSummary), memberOf: self.loop.value.memberships.keys.sorted(),
                followedGroup: self.loop.value.followedGroup, dashCast: self.app?.dashCast,
                lovelace: self.app?.lovelace, pageTimeout: self.display.pageTimeout,
                displayTimeout: self.display.displayTimeout)
        }.get()
    }

}
