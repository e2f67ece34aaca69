import CastProtocol
import Foundation
@testable import Bridge

let t0 = Date(timeIntervalSince1970: 1_800_000_000)
let tvID = "0123456789abcdef0123456789abcdef"
let speakerID = "fedcba9876543210fedcba9876543210"

func tvDescriptor(name: String = "Living Room TV") -> DeviceDescriptor {
    DeviceDescriptor(id: tvID, friendlyName: name, model: "Chromecast Ultra", manufacturer: "Google Inc.",
                     castType: .video, host: "192.0.2.10", port: 8009, capabilities: ["video_out", "audio_out"], source: .mdns)
}

func speakerDescriptor() -> DeviceDescriptor {
    DeviceDescriptor(id: speakerID, friendlyName: "Kitchen Speaker", model: "Google Home", manufacturer: "Google Inc.",
                     castType: .audio, host: "192.0.2.11", port: 8009, capabilities: ["audio_out"], source: .static)
}

let dmrApp = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, displayName: "Default Media Receiver",
                                 namespaces: [CastNamespace.media, "urn:x-cast:com.example.app"],
                                 sessionId: "session-1", statusText: "Casting", transportId: "transport-1")

func receiver(app: ReceiverApplication? = dmrApp, level: Double = 0.4, muted: Bool = false) -> ReceiverStatus {
    ReceiverStatus(applications: app.map { [$0] } ?? [], volume: ReceiverVolume(controlType: "attenuation", level: level,
                                                                                  muted: muted, stepInterval: 0.05))
}

func playing(session: Int = 1, content: String = "http://192.0.2.5/song.mp3", state: String = "PLAYING",
             time: Double = 31.2, commands: Int = 274447) -> MediaStatus {
    MediaStatus(mediaSessionId: session,
                media: MediaInformation(contentId: content, streamType: "BUFFERED", contentType: "audio/mpeg",
                                        metadata: MediaMetadata(metadataType: 3, title: "Song", artist: "Artist",
                                                                albumName: "Album",
                                                                images: [CastImage(url: "http://192.0.2.5/a.jpg", width: 480, height: 360)]),
                                        duration: 212.5),
                playerState: state, currentTime: time, playbackRate: 1, supportedMediaCommands: commands)
}

/// What a Cast client reports, spelled as the tests like to: each goes through the device's own
/// `CastSessionMachine` (as in the client) and reaches the core as the snapshot it publishes.
enum CastEvent {
    /// The platform answered on a new connection (availability follows with the first status).
    case castConnected(DeviceID)
    case castDisconnected(DeviceID, reason: String)
    case receiverStatus(DeviceID, ReceiverStatus)
    case mediaStatus(DeviceID, [MediaStatus])
    /// The device CLOSEd the app's transport.
    case appSessionEnded(DeviceID, transportId: String)
    /// A message on the multizone namespace (MULTIZONE_STATUS, DEVICE_ADDED/UPDATED/REMOVED).
    case multizone(DeviceID, MultizoneMessage)
    /// An operation finished (the device is looked up from the operations the harness saw).
    case operationCompleted(OperationToken, Result<OperationResult, BridgeError>)
}

/// A test harness around BridgeCore.
struct Harness {
    var core: BridgeCore
    var now = t0
    /// The session machine of each device (what its Cast client would hold).
    var sessions: [DeviceID: CastSessionMachine] = [:]
    /// The device of every operation the core asked for.
    var operationDevices: [OperationToken: DeviceID] = [:]

    init(_ configure: (inout BridgeConfiguration) -> Void = { _ in }) {
        var c = BridgeConfiguration()
        configure(&c)
        core = BridgeCore(configuration: c, startedAt: t0)
    }

    @discardableResult
    mutating func feed(_ input: BridgeInput) -> BridgeOutput {
        var out = core.handle(input, now: now)
        // Work left for later (a republish in parts) goes on at once, as the consumer would
        // after the inputs waiting meanwhile.
        var more = out.moreWork
        while more {
            let next = core.handle(.resume, now: now)
            more = next.moreWork
            out.append(next)
        }
        for op in out.operations { operationDevices[op.token] = op.deviceID }
        return out
    }

    /// A Cast client event, through the device's session machine: the snapshots it publishes.
    @discardableResult
    mutating func feed(_ event: CastEvent) -> BridgeOutput {
        func session(_ id: DeviceID, _ body: (inout CastSessionMachine) -> [CastSessionMachine.Action]) -> BridgeOutput {
            var machine = sessions[id] ?? CastSessionMachine(isGroup: core.registry[id]?.descriptor.castType == .group)
            let actions = body(&machine)
            sessions[id] = machine
            var out = BridgeOutput()
            for case .publish(let snapshot) in actions { out.append(feed(.device(id, snapshot))) }
            return out
        }
        let now = self.now
        switch event {
        case .castConnected(let id): return session(id) { $0.connectionAnswered() }
        case .castDisconnected(let id, let reason):
            let known: [CastDisconnectReason] = [.heartbeatTimeout, .closedByPeer, .closedByDevice, .unresponsive]
            let typed = known.first { $0.description == reason } ?? .networkError(reason)
            return session(id) { $0.disconnected(typed, silentSince: nil) }
        case .receiverStatus(let id, let status): return session(id) { $0.receiverStatus(status, now: now) }
        case .mediaStatus(let id, let list): return session(id) { $0.mediaStatus(list.first, now: now) }
        case .appSessionEnded(let id, let transport): return session(id) { $0.transportClosed(transport) }
        case .multizone(let id, let message): return session(id) { $0.multizone(message) }
        case .operationCompleted(let token, let result):
            return feed(.operationCompleted(operationDevices[token] ?? "", token, result))
        }
    }

    @discardableResult
    mutating func publish(_ topic: String, _ text: String, responseTopic: String? = nil, correlation: [UInt8]? = nil) -> BridgeOutput {
        feed(.mqttMessage(topic: topic, payload: Array(text.utf8), responseTopic: responseTopic, correlationData: correlation))
    }

    /// Publishes a command and, when it started an operation, completes that at once (`.done`,
    /// no state change), so that the next command finds the device free (per-device order).
    @discardableResult
    mutating func publishSettled(_ topic: String, _ text: String) -> BridgeOutput {
        let out = publish(topic, text)
        for op in out.operations { complete(op, .done) }
        return out
    }

    /// How a test says a device answered an operation: the statuses it sent (fed as the Cast
    /// events the daemon delivers first), then the operation's completion.
    enum Answer {
        case receiverStatus(ReceiverStatus)
        case mediaStatus([MediaStatus])
        case appMessage(CastPayload)
        case sessionState(JSONValue)
        case done
    }

    @discardableResult
    mutating func complete(_ op: CastOperation, _ answer: Answer) -> BridgeOutput {
        var out = BridgeOutput()
        let result: OperationResult
        switch answer {
        case .receiverStatus(let status):
            out.append(feed(CastEvent.receiverStatus(op.deviceID, status)))
            result = .done
        case .mediaStatus(let list):
            out.append(feed(CastEvent.mediaStatus(op.deviceID, list)))
            result = .done
        case .appMessage(let payload): result = .appMessage(payload)
        case .sessionState(let state): result = .sessionState(state)
        case .done: result = .done
        }
        out.append(feed(.operationCompleted(op.deviceID, op.token, .success(result))))
        return out
    }

    /// Adds a device and brings it online with `status` and optional media, as the client
    /// reports it: connected, the receiver status, and (when an app runs) its media status.
    @discardableResult
    mutating func online(_ d: DeviceDescriptor = tvDescriptor(), status: ReceiverStatus = receiver(),
                         media: [MediaStatus]? = [playing()]) -> BridgeOutput {
        var all = feed(.deviceDiscovered(d))
        all.append(feed(CastEvent.castConnected(d.id)))
        all.append(feed(CastEvent.receiverStatus(d.id, status)))
        if status.activeApp != nil { all.append(feed(CastEvent.mediaStatus(d.id, media ?? []))) }
        return all
    }
}

extension BridgeOutput {
    func on(_ topic: String) -> [Publication] { publications.filter { $0.topic == topic } }
    func json(_ topic: String) -> JSONValue? { on(topic).last.flatMap { JSONOutput.parse($0.payload) } }
    func texts(_ topic: String) -> [String] { on(topic).map(\.text) }
    func events(_ topic: String) -> [String] { on(topic).compactMap { JSONOutput.parse($0.payload)?["type"]?.stringValue } }
}

func json(_ p: Publication?) -> JSONValue? { p.flatMap { JSONOutput.parse($0.payload) } }
