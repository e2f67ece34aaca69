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

/// One simulated Cast device: a TLS server on 127.0.0.1 speaking Cast v2.
///
/// Every piece of mutable device state lives on `eventLoop` (all connections of the device are
/// accepted onto that same loop), so no locks are needed for it; the public API hops there.
/// Only the recording, counters and the bound port are read from other threads, behind locks.
public final class SimulatedDevice: @unchecked Sendable {
    public let configuration: SimulatedDeviceConfiguration
    public let eventLoop: any EventLoop
    let logger: Logger
    let recorder = Recorder()
    private let sslContext: NIOSSLContext
    private let portBox: NIOLockedValueBox<Int>
    private let listeningBox = NIOLockedValueBox(false)

    // --- Confined to eventLoop ---
    private var listener: (any Channel)?
    private var connections: [Int: SenderConnection] = [:]
    private var connectionCounter = 0
    private var silenced = false
    private var shutDown = false
    private var app: RunningApp?
    private var volume: ReceiverVolume
    private var media: MediaSession?
    private var mediaSessionCounter = 0
    private var heartbeatTask: RepeatedTask?
    private var tickTask: RepeatedTask?
    private var rebind: Scheduled<Void>?

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
        self.volume = ReceiverVolume(
            controlType: configuration.volumeControlType, level: configuration.initialVolumeLevel, muted: false,
            stepInterval: configuration.volumeStepInterval)
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

    private func startTimers() {
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

    private func bind(port: Int) -> EventLoopFuture<Void> {
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

    private func setUp(_ channel: any Channel) throws {
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
            self.listeningBox.withLockedValue { $0 = false }
            let closes = self.connections.values.map { $0.channel.close() } + [self.listener?.close()].compactMap { $0 }
            self.connections.removeAll()
            self.listener = nil
            return EventLoopFuture.andAllComplete(closes, on: self.eventLoop)
        }
        try? await future.get()
    }

    // MARK: - Sending

    private func send(_ message: CastMessage, on connection: SenderConnection) {
        eventLoop.assertInEventLoop()
        guard !silenced, !shutDown, connection.channel.isActive else { return }
        connection.channel.writeAndFlush(message, promise: nil)
    }

    /// Sends `json` from `endpoint` to every connection with a virtual connection to it
    /// (destination `*`, once per TCP connection).
    private func broadcast(from endpoint: String, namespace: String, json: String) {
        for connection in connections.values.sorted(by: { $0.number < $1.number })
        where !connection.sources(connectedTo: endpoint).isEmpty {
            send(CastMessage(source: endpoint, destination: CastEndpoint.broadcast, namespace: namespace, json: json),
                 on: connection)
        }
    }

    /// Runs `body` on the loop after `delay` (the simulated processing time).
    private func later(_ delay: TimeAmount, _ body: @escaping @Sendable () -> Void) {
        if delay <= .zero {
            body()
        } else {
            eventLoop.scheduleTask(in: delay, body)
        }
    }

    /// Replies to one sender after the reply latency.
    private func reply(_ json: String, from endpoint: String, namespace: String, to source: String,
                       on connection: SenderConnection, thenBroadcast broadcastJSON: String? = nil) {
        later(configuration.replyLatency) {
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
            later(configuration.replyLatency) { self.send(echo, on: connection) }
        default: break
        }
    }

    private func handleConnection(_ message: CastMessage, on connection: SenderConnection) {
        guard let parsed = ConnectionMessage.parse(message.payload) else { return }
        let source = message.sourceID
        let endpoint = message.destinationID
        switch parsed {
        case .connect(_, _, _, let versions):
            guard endpoint == CastEndpoint.receiver || endpoint == app?.transportId else {
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

    // MARK: - Receiver namespace

    private func receiverStatus() -> ReceiverStatus {
        let video = configuration.castType == .video
        return ReceiverStatus(
            applications: app.map { [$0.receiverApplication] } ?? [], volume: volume,
            isActiveInput: video ? true : nil, isStandBy: video ? false : nil)
    }

    private func receiverStatusJSON(requestId: Int) -> String {
        ReceiverResponse.status(requestId: requestId, receiverStatus()).json()
    }

    private func broadcastReceiverStatus() {
        broadcast(from: CastEndpoint.receiver, namespace: CastNamespace.receiver, json: receiverStatusJSON(requestId: 0))
    }

    private func handleReceiver(_ message: CastMessage, on connection: SenderConnection) {
        guard let json = Self.parseJSON(message.payload), let type = json["type"]?.stringValue,
              let requestId = json["requestId"]?.intValue
        else { return }  // the reference receiver ignores requests without requestId
        let source = message.sourceID
        func answer(_ response: ReceiverResponse, broadcastStatus: Bool = false) {
            reply(response.json(), from: CastEndpoint.receiver, namespace: CastNamespace.receiver, to: source,
                  on: connection, thenBroadcast: broadcastStatus ? receiverStatusJSON(requestId: 0) : nil)
        }
        switch type {
        case "GET_STATUS":
            answer(.status(requestId: requestId, receiverStatus()))
        case "LAUNCH":
            guard let appId = json["appId"]?.stringValue, !appId.isEmpty else {
                answer(.launchError(requestId: requestId, reason: "BAD_PARAMETER", extendedError: nil))
                return
            }
            guard RunningApp.make(appId: appId) != nil else {
                answer(.launchError(requestId: requestId, reason: "NOT_FOUND", extendedError: nil))
                return
            }
            recorder.count { $0.launches += 1 }
            if let app, app.appId == appId, app.kind != .backdrop {
                answer(.status(requestId: requestId, receiverStatus()))  // already running: same session
                return
            }
            later(configuration.launchLatency) {
                guard !self.shutDown else { return }
                self.launch(appId: appId, launchedFromCloud: false)
                self.send(CastMessage(source: CastEndpoint.receiver, destination: source,
                                      namespace: CastNamespace.receiver, json: self.receiverStatusJSON(requestId: requestId)),
                          on: connection)
                self.broadcastReceiverStatus()
            }
        case "STOP":
            let sessionId = json["sessionId"]?.stringValue
            if let sessionId, sessionId != app?.sessionId {
                answer(.invalidRequest(requestId: requestId, reason: "INVALID_SESSION_ID"))
                return
            }
            // Like a real device, the app takes a moment to go away. (It also keeps pychromecast,
            // which writes to its socket from two threads without a lock, from having its STOP
            // write overlap the CLOSE it sends back when the app transport closes.)
            later(configuration.stopLatency) {
                guard !self.shutDown else { return }
                self.stopApp(mediaIdleReason: nil)
                self.send(CastMessage(source: CastEndpoint.receiver, destination: source,
                                      namespace: CastNamespace.receiver, json: self.receiverStatusJSON(requestId: requestId)),
                          on: connection)
                self.broadcastReceiverStatus()
            }
        case "SET_VOLUME":
            guard let body = json["volume"]?.objectValue,
                  body["level"]?.doubleValue != nil || body["muted"]?.boolValue != nil
            else {
                answer(.invalidRequest(requestId: requestId, reason: "INVALID_PARAMS"))
                return
            }
            applyVolume(level: body["level"]?.doubleValue, muted: body["muted"]?.boolValue)
            answer(.status(requestId: requestId, receiverStatus()), broadcastStatus: true)
        case "GET_APP_AVAILABILITY":
            let ids = json["appId"]?.arrayValue?.compactMap(\.stringValue) ?? json["appId"]?.stringValue.map { [$0] } ?? []
            var availability: [String: String] = [:]
            for id in ids { availability[id] = RunningApp.make(appId: id) == nil ? "APP_UNAVAILABLE" : "APP_AVAILABLE" }
            answer(.appAvailability(requestId: requestId, availability: availability))
        default:
            answer(.invalidRequest(requestId: requestId, reason: "INVALID_COMMAND"))
        }
    }

    private func applyVolume(level: Double?, muted: Bool?) {
        if let level, level.isFinite, volume.controlType != "fixed" {
            volume.level = min(max(level, 0), 1)
        }
        if let muted { volume.muted = muted }
    }

    /// The idle state: Backdrop (new session) or no application at all.
    private func resetApplications() {
        app = configuration.idleScreen ? RunningApp.make(appId: SimulatedAppID.backdrop) : nil
        media = nil
    }

    /// Replaces the running app with a new session of `appId` (CLOSE for the old one).
    private func launch(appId: String, launchedFromCloud: Bool) {
        stopApp(mediaIdleReason: nil)
        if appId == SimulatedAppID.backdrop { return }
        app = RunningApp.make(appId: appId, launchedFromCloud: launchedFromCloud)
        media = nil
    }

    /// Stops the running app (unless it is the idle screen): optional IDLE media broadcast, CLOSE
    /// from its transportId to every sender connected to it, then the idle state.
    private func stopApp(mediaIdleReason: String?) {
        guard let running = app, running.kind != .backdrop else { return }
        if let reason = mediaIdleReason, let session = media {
            let status = session.idleStatus(reason: reason, at: configuration.clock.now())
            broadcast(from: running.transportId, namespace: CastNamespace.media,
                      json: MediaResponse.status(requestId: 0, [status]).json())
        }
        for connection in connections.values.sorted(by: { $0.number < $1.number }) {
            for source in connection.sources(connectedTo: running.transportId) {
                send(CastMessage(source: running.transportId, destination: source, namespace: CastNamespace.connection,
                                 json: ConnectionMessage.close(reasonCode: nil).json()), on: connection)
                connection.virtualConnections[source]?.remove(running.transportId)
            }
        }
        resetApplications()
    }

    // MARK: - Multizone

    private func handleMultizone(_ message: CastMessage, on connection: SenderConnection) {
        guard let json = Self.parseJSON(message.payload), json["type"]?.stringValue == "GET_STATUS" else { return }
        let requestId = json["requestId"]?.intValue ?? 0
        let response = MultizoneMessage.status(requestId: requestId, devices: configuration.multizoneMembers,
                                               isMultichannel: false, playbackSession: nil)
        reply(response.json(), from: CastEndpoint.receiver, namespace: CastNamespace.multizone,
              to: message.sourceID, on: connection)
    }

    // MARK: - Media namespace

    private func handleMedia(_ message: CastMessage, on connection: SenderConnection) {
        guard let running = app, let json = Self.parseJSON(message.payload), let type = json["type"]?.stringValue
        else { return }
        let requestId = json["requestId"]?.intValue ?? 0
        let endpoint = running.transportId
        let source = message.sourceID
        let now = configuration.clock.now()

        func error(_ type: String, _ reason: String?, detailed: Int? = nil, itemId: Int? = nil) {
            let body = MediaResponse.error(MediaError(type: type, requestId: requestId, reason: reason,
                                                      detailedErrorCode: detailed, itemId: itemId)).json()
            reply(body, from: endpoint, namespace: CastNamespace.media, to: source, on: connection)
        }
        func status(broadcast: Bool = true) {
            let statuses = media.map { [$0.status(at: now)] } ?? []
            reply(MediaResponse.status(requestId: requestId, statuses).json(), from: endpoint,
                  namespace: CastNamespace.media, to: source, on: connection,
                  thenBroadcast: broadcast ? MediaResponse.status(requestId: 0, statuses).json() : nil)
        }
        func finalStatus(_ ended: MediaStatus) {
            reply(MediaResponse.status(requestId: requestId, [ended]).json(), from: endpoint,
                  namespace: CastNamespace.media, to: source, on: connection,
                  thenBroadcast: MediaResponse.status(requestId: 0, [ended]).json())
        }

        switch type {
        case "GET_STATUS":
            status(broadcast: false)
            return
        case "LOAD", "QUEUE_LOAD", "RESUME_SESSION":
            if type == "LOAD" { recorder.count { $0.loads += 1 } }
            var request = json
            if type == "RESUME_SESSION" {
                guard let data = json["sessionState"]?["loadRequestData"] else {
                    error("INVALID_REQUEST", "INVALID_PARAMS")
                    return
                }
                request = data
            }
            switch load(request, queue: type == "QUEUE_LOAD", at: now) {
            case .success:
                status()
            case .failure(let failure):
                if let idle = failure.idleStatus {
                    let body = MediaResponse.error(failure.error(requestId: requestId)).json()
                    reply(body, from: endpoint, namespace: CastNamespace.media, to: source, on: connection,
                          thenBroadcast: MediaResponse.status(requestId: 0, [idle]).json())
                } else {
                    error(failure.type, failure.reason)
                }
            }
            return
        default:
            break
        }

        guard var session = media else {
            let known: Set<String> = ["PLAY", "PAUSE", "STOP", "SEEK", "SET_PLAYBACK_RATE", "SET_VOLUME", "QUEUE_NEXT",
                                      "QUEUE_PREV", "QUEUE_UPDATE", "SKIP_AD", "STORE_SESSION", "EDIT_TRACKS_INFO"]
            if known.contains(type) { error("INVALID_PLAYER_STATE", nil) } else { error("INVALID_REQUEST", "INVALID_COMMAND") }
            return
        }
        if let id = json["mediaSessionId"]?.intValue, id != session.mediaSessionId {
            error("INVALID_REQUEST", "INVALID_MEDIA_SESSION_ID")
            return
        }
        switch type {
        case "PLAY": session.setPlaying(true, at: now)
        case "PAUSE": session.setPlaying(false, at: now)
        case "STOP":
            media = nil
            finalStatus(session.idleStatus(reason: "CANCELLED", at: now))
            return
        case "SEEK":
            let target: Double
            if let relative = json["relativeTime"]?.doubleValue {
                target = session.position(at: now) + relative
            } else if let absolute = json["currentTime"]?.doubleValue {
                target = absolute
            } else {
                target = session.position(at: now)
            }
            session.seek(to: target, at: now)
            switch json["resumeState"]?.stringValue {
            case "PLAYBACK_START": session.setPlaying(true, at: now)
            case "PLAYBACK_PAUSE": session.setPlaying(false, at: now)
            default: break
            }
        case "SET_PLAYBACK_RATE":
            let rate = json["playbackRate"]?.doubleValue
                ?? json["relativePlaybackRate"]?.doubleValue.map { $0 * session.playbackRate }
            guard let rate, rate.isFinite, rate > 0, rate <= 16 else {
                error("INVALID_REQUEST", "INVALID_PARAMS")
                return
            }
            session.setRate(rate, at: now)
        case "SET_VOLUME":
            guard let body = json["volume"]?.objectValue else {
                error("INVALID_REQUEST", "INVALID_PARAMS")
                return
            }
            if let level = body["level"]?.doubleValue, level.isFinite { session.volume.level = min(max(level, 0), 1) }
            if let muted = body["muted"]?.boolValue { session.volume.muted = muted }
        case "QUEUE_NEXT", "QUEUE_PREV", "QUEUE_UPDATE":
            if let mode = json["repeatMode"]?.stringValue { session.repeatMode = mode }
            var targetIndex: Int?
            if type == "QUEUE_NEXT" {
                targetIndex = session.index(jumpingBy: 1)
            } else if type == "QUEUE_PREV" {
                targetIndex = session.index(jumpingBy: -1)
            } else if let itemId = json["currentItemId"]?.intValue {
                targetIndex = session.items.firstIndex { $0.itemId == itemId }
            } else if let jump = json["jump"]?.intValue {
                targetIndex = session.index(jumpingBy: jump)
            } else {
                media = session  // e.g. only a repeatMode change
                status()
                return
            }
            guard let index = targetIndex else {
                error("INVALID_REQUEST", "END_OF_QUEUE")
                return
            }
            let playing = session.playerState == "PLAYING"
            session.start(index: index, position: json["currentTime"]?.doubleValue ?? 0, playing: playing, at: now)
        case "SKIP_AD": session.skipAd(at: now)
        case "EDIT_TRACKS_INFO":
            if let ids = json["activeTrackIds"]?.arrayValue { session.activeTrackIds = ids.compactMap(\.intValue) }
        case "STORE_SESSION":
            let state = JSONValue.object(["loadRequestData": session.loadRequestSnapshot(at: now)])
            reply(MediaResponse.sessionState(requestId: requestId, state).json(), from: endpoint,
                  namespace: CastNamespace.media, to: source, on: connection)
            return
        default:
            error("INVALID_REQUEST", "INVALID_COMMAND")
            return
        }
        media = session
        status()
    }

    struct LoadFailure: Error {
        var type: String
        var reason: String?
        var detailedErrorCode: Int?
        var itemId: Int?
        var idleStatus: MediaStatus?

        func error(requestId: Int) -> MediaError {
            MediaError(type: type, requestId: requestId, reason: reason, detailedErrorCode: detailedErrorCode,
                       itemId: itemId)
        }
    }

    /// The failing-URL rule: a contentId/contentUrl containing `fail` (any case) cannot be
    /// loaded; `fail-<code>` picks the `detailedErrorCode` (default 104 MEDIA_SRC_NOT_SUPPORTED).
    static func failureCode(for media: MediaInformation) -> Int? {
        for text in [media.contentId, media.contentUrl ?? ""] {
            let lower = text.lowercased()
            guard let range = lower.range(of: "fail") else { continue }
            let rest = lower[range.upperBound...]
            if rest.hasPrefix("-") {
                let digits = rest.dropFirst().prefix { $0.isNumber }
                if let code = Int(digits), code > 0 { return code }
            }
            return 104
        }
        return nil
    }

    /// Starts a new media session from a LOAD / QUEUE_LOAD / RESUME_SESSION request body.
    private func load(_ request: JSONValue, queue: Bool, at now: Double) -> Result<Void, LoadFailure> {
        var items: [QueueItem]
        var startIndex = 0
        var repeatMode = "REPEAT_OFF"
        var isQueue = queue
        let queueSource = queue ? request : request["queueData"]
        if let rawItems = queueSource?["items"], let decoded = MediaSession.decode([QueueItem].self, from: rawItems),
           !decoded.isEmpty {
            items = decoded
            isQueue = true
            startIndex = queueSource?["startIndex"]?.intValue ?? 0
            repeatMode = queueSource?["repeatMode"]?.stringValue ?? request["repeatMode"]?.stringValue ?? "REPEAT_OFF"
        } else if queue {
            return .failure(LoadFailure(type: "INVALID_REQUEST", reason: "INVALID_PARAMS"))
        } else {
            guard let media = MediaSession.decode(MediaInformation.self, from: request["media"]),
                  !media.contentId.isEmpty || media.contentUrl != nil
            else {
                return .failure(LoadFailure(type: "INVALID_REQUEST", reason: "INVALID_PARAMS"))
            }
            items = [QueueItem(media: media, autoplay: request["autoplay"]?.boolValue ?? true)]
        }
        guard items.indices.contains(startIndex), items.allSatisfy({ $0.media != nil }) else {
            return .failure(LoadFailure(type: "INVALID_REQUEST", reason: "INVALID_PARAMS"))
        }
        for index in items.indices { items[index].itemId = index + 1 }
        mediaSessionCounter += 1
        let autoplay = request["autoplay"]?.boolValue ?? items[startIndex].autoplay ?? true
        var session = MediaSession(
            mediaSessionId: mediaSessionCounter, items: items, currentIndex: startIndex, isQueue: isQueue,
            repeatMode: repeatMode, playerState: "PLAYING", basePosition: 0, anchor: now,
            playbackRate: request["playbackRate"]?.doubleValue.flatMap { $0 > 0 && $0 <= 16 ? $0 : nil } ?? 1,
            customData: request["customData"], activeTrackIds: request["activeTrackIds"]?.arrayValue?.compactMap(\.intValue),
            supportedMediaCommands: configuration.supportedMediaCommands)
        if let media = session.media, let code = Self.failureCode(for: media) {
            let itemId = session.currentItem?.itemId ?? 1
            let idle = session.idleStatus(reason: "ERROR", at: now)
            self.media = nil
            return .failure(LoadFailure(type: "LOAD_FAILED", reason: nil, detailedErrorCode: code, itemId: itemId,
                                        idleStatus: idle))
        }
        let start = request["currentTime"]?.doubleValue ?? items[startIndex].startTime ?? 0
        session.start(index: startIndex, position: start, playing: autoplay, at: now)
        media = session
        return .success(())
    }

    // MARK: - Media clock

    private func tick() {
        guard var session = media, let running = app else { return }
        let now = configuration.clock.now()
        switch session.tick(at: now) {
        case .none:
            return
        case .changed:
            media = session
        case .itemEnded:
            if let next = session.indexAfterEnd {
                session.start(index: next, position: 0, playing: true, at: now)
                media = session
            } else {
                media = nil
                var ended = session.idleStatus(reason: "FINISHED", at: now)
                ended.currentTime = session.duration ?? ended.currentTime
                broadcast(from: running.transportId, namespace: CastNamespace.media,
                          json: MediaResponse.status(requestId: 0, [ended]).json())
                return
            }
        }
        broadcast(from: running.transportId, namespace: CastNamespace.media,
                  json: MediaResponse.status(requestId: 0, [session.status(at: now)]).json())
    }

    private func sendPings() {
        guard !silenced else { return }
        for connection in connections.values {
            for source in connection.sources(connectedTo: CastEndpoint.receiver) {
                send(CastMessage(source: CastEndpoint.receiver, destination: source, namespace: CastNamespace.heartbeat,
                                 json: HeartbeatMessage.ping.json()), on: connection)
            }
        }
    }

    static func parseJSON(_ payload: CastPayload) -> JSONValue? {
        guard let text = payload.text, let value = try? CastJSON.decode(JSONValue.self, from: text),
              value.objectValue != nil
        else { return nil }
        return value
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

    // MARK: - Public API: faults

    /// Closes every sender connection (TCP close); the device keeps listening.
    public func dropConnections() async {
        let future = eventLoop.flatSubmit {
            EventLoopFuture.andAllComplete(self.connections.values.map { $0.channel.close() }, on: self.eventLoop)
        }
        try? await future.get()
    }

    /// Stops answering anything and stops pinging; sockets stay open. `resume()` ends it.
    public func silence() async { try? await eventLoop.submit { self.silenced = true }.get() }

    /// Ends `silence()`.
    public func resume() async { try? await eventLoop.submit { self.silenced = false }.get() }

    /// Simulates a reboot: every connection and app session is dropped, the listener closes, and
    /// after `refuseFor` the device listens again on the same port (with no app running).
    /// Returns once the listener is closed (or, with a zero refusal, listening again).
    public func restart(refuseFor: TimeAmount = .zero) async throws {
        let future = eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.recorder.count { $0.restarts += 1 }
            self.rebind?.cancel()
            self.listeningBox.withLockedValue { $0 = false }
            self.silenced = false
            let closes = self.connections.values.map { $0.channel.close() }
            let listenerClose = self.listener?.close() ?? self.eventLoop.makeSucceededVoidFuture()
            self.listener = nil
            self.connections.removeAll()
            self.resetApplications()
            return EventLoopFuture.andAllComplete(closes + [listenerClose], on: self.eventLoop).flatMap {
                if refuseFor <= .zero { return self.rebindWithRetry(attempts: 50) }
                self.rebind = self.eventLoop.scheduleTask(in: refuseFor) {
                    self.rebindWithRetry(attempts: 50).whenFailure { error in
                        self.logger.error("could not listen again on port \(self.port): \(error)")
                    }
                }
                return self.eventLoop.makeSucceededVoidFuture()
            }
        }
        try await future.get()
    }

    private func rebindWithRetry(attempts: Int) -> EventLoopFuture<Void> {
        guard !shutDown else { return eventLoop.makeSucceededVoidFuture() }
        return bind(port: port).flatMapError { error in
            guard attempts > 1 else { return self.eventLoop.makeFailedFuture(error) }
            return self.eventLoop.scheduleTask(in: .milliseconds(100)) {}.futureResult.flatMap {
                self.rebindWithRetry(attempts: attempts - 1)
            }
        }
    }

    /// Sends a frame with a valid length prefix and random (unparseable) bytes to every sender.
    public func sendGarbageFrame() async {
        try? await eventLoop.submit {
            for connection in self.connections.values {
                var body: [UInt8] = [0xFF, 0xFF, 0xFF]
                body += (0..<29).map { _ in UInt8.random(in: 0...255) }
                let header: [UInt8] = [0, 0, 0, UInt8(body.count)]
                connection.injector.writeRaw(header + body)
            }
        }.get()
    }

    /// Sends a frame header announcing a body over 64 KiB (1 MiB) to every sender.
    public func sendOversizedFrameHeader() async {
        try? await eventLoop.submit {
            for connection in self.connections.values {
                connection.injector.writeRaw([0x00, 0x10, 0x00, 0x00, 0x08, 0x00, 0x12, 0x00])
            }
        }.get()
    }

    /// Changes the device volume as a remote control would: RECEIVER_STATUS broadcast.
    public func setVolumeRemotely(level: Double?, muted: Bool? = nil) async {
        try? await eventLoop.submit {
            self.applyVolume(level: level, muted: muted)
            self.later(self.configuration.replyLatency) { self.broadcastReceiverStatus() }
        }.get()
    }

    /// Ends the current media now: IDLE / FINISHED broadcast. False when nothing plays.
    @discardableResult
    public func finishMedia() async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard let session = self.media, let running = self.app else { return false }
            let now = self.configuration.clock.now()
            self.media = nil
            var ended = session.idleStatus(reason: "FINISHED", at: now)
            ended.currentTime = session.duration ?? ended.currentTime
            self.broadcast(from: running.transportId, namespace: CastNamespace.media,
                           json: MediaResponse.status(requestId: 0, [ended]).json())
            return true
        }.get()) ?? false
    }

    /// Broadcasts an unsolicited message from the running app (e.g. the echo app) on `namespace`.
    /// False when no (non-idle) app runs.
    @discardableResult
    public func pushAppMessage(namespace: String = SimulatedAppID.echoNamespace, payload: CastPayload) async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard let running = self.app, running.kind != .backdrop else { return false }
            for connection in self.connections.values.sorted(by: { $0.number < $1.number })
            where !connection.sources(connectedTo: running.transportId).isEmpty {
                self.send(CastMessage(sourceID: running.transportId, destinationID: CastEndpoint.broadcast,
                                      namespace: namespace, payload: payload), on: connection)
            }
            return true
        }.get()) ?? false
    }

    /// Advances this device's media clock (a `ManualSimulatorClock` only) and applies the result
    /// (ends of ad clips and media) at once.
    public func advanceClock(by seconds: Double) async throws {
        guard let manual = configuration.clock as? ManualSimulatorClock else {
            throw SimulatorError("device \(id) runs on the system clock")
        }
        manual.advance(by: seconds)
        try await eventLoop.submit { self.tick() }.get()
    }

    // MARK: - Stream transfer

    /// Source side of a cloud transfer: media IDLE/INTERRUPTED, CLOSE from the app, app gone.
    func detachForTransfer() async throws -> TransferredSession {
        try await eventLoop.submit { () throws -> TransferredSession in
            guard let running = self.app, running.kind != .backdrop else {
                throw SimulatorError("device \(self.id) runs no app to transfer")
            }
            let now = self.configuration.clock.now()
            let snapshot = self.media?.loadRequestSnapshot(at: now)
            self.stopApp(mediaIdleReason: "INTERRUPTED")
            self.broadcastReceiverStatus()
            return TransferredSession(appId: running.appId, loadRequest: snapshot)
        }.get()
    }

    /// Target side of a cloud transfer: the same app launched from the cloud (new session) and
    /// the same content loaded at the same position and play state.
    func attachTransferred(_ session: TransferredSession) async throws {
        let launched = eventLoop.scheduleTask(in: configuration.launchLatency) {
            self.launch(appId: session.appId, launchedFromCloud: true)
            if let request = session.loadRequest, self.app?.kind == .media {
                _ = self.load(request, queue: false, at: self.configuration.clock.now())
            }
            self.broadcastReceiverStatus()
        }
        try await launched.futureResult.get()
    }
}

/// A JSON-friendly snapshot of a device (`GET /devices/<id>/state`).
public struct SimulatedDeviceState: Sendable, Codable {
    public var id: String
    public var name: String
    public var port: Int
    public var listening: Bool
    public var silenced: Bool
    public var connections: Int
    public var receiverStatus: ReceiverStatus
    public var mediaStatus: MediaStatus?
    public var counters: SimulatorCounters
}
