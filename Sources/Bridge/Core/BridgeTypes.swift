import CastProtocol
import Foundation

/// Stable identifier of a Cast device (the Cast UUID: 32 lower-case hex digits, or a stable
/// hash of `host:port` for static devices that do not report one).
public typealias DeviceID = String

/// What kind of Cast endpoint a device is.
public enum CastType: String, Sendable, Hashable, Codable {
    case video, audio, group
}

/// Where the bridge learned about a device.
public enum DeviceSource: String, Sendable, Hashable, Codable {
    case mdns, `static`
}

/// A device as Discovery (mDNS or static configuration) describes it. Built by the I/O side.
public struct DeviceDescriptor: Sendable, Hashable {
    public var id: DeviceID
    public var friendlyName: String
    public var model: String?
    public var manufacturer: String?
    public var castType: CastType
    public var host: String
    public var port: Int
    public var capabilities: [String]
    public var source: DeviceSource
    /// The `topic:` of a static config entry; wins over the slug of the friendly name.
    public var topicOverride: String?
    /// A dynamic (temporary) speaker group: followed for its members, never a device of its own
    /// (no topics, no Home Assistant entities, not in `bridge/devices`).
    public var isDynamicGroup: Bool
    /// The id of the static configuration entry this device came from, when that is not its own
    /// id (a device given by its address alone and named by its `eureka_info`, or a group found
    /// through a static device's `eureka_info`): the device stays configured while the entry does.
    public var configuredID: DeviceID?

    public init(id: DeviceID, friendlyName: String, model: String? = nil, manufacturer: String? = nil,
                castType: CastType = .video, host: String, port: Int = 8009, capabilities: [String] = [],
                source: DeviceSource = .mdns, topicOverride: String? = nil, isDynamicGroup: Bool = false,
                configuredID: DeviceID? = nil) {
        self.id = id
        self.friendlyName = friendlyName
        self.model = model
        self.manufacturer = manufacturer
        self.castType = castType
        self.host = host
        self.port = port
        self.capabilities = capabilities
        self.source = source
        self.topicOverride = topicOverride
        self.isDynamicGroup = isDynamicGroup
        self.configuredID = configuredID
    }
}

/// Identifies one `CastOperation` so that its completion can be matched. Unique per bridge run.
public struct OperationToken: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: OperationToken, b: OperationToken) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "op#\(rawValue)" }
}

/// Everything that happens to the bridge, fed in order by a single consumer.
public enum BridgeInput: Sendable {
    /// The MQTT client (re)connected to the broker: the bridge republishes every retained topic.
    case mqttConnected
    /// A message arrived on a subscribed topic. `responseTopic` / `correlationData` are the
    /// MQTT 5 properties, when the publisher set them.
    case mqttMessage(topic: String, payload: [UInt8], responseTopic: String?, correlationData: [UInt8]?)
    /// A message that arrived while the bridge's input queue was over its bound: a command or
    /// request is answered `busy` at once (never run, never dropped silently).
    case mqttOverloaded(topic: String, payload: [UInt8], responseTopic: String?, correlationData: [UInt8]?)
    case deviceDiscovered(DeviceDescriptor)
    case deviceUpdated(DeviceDescriptor)
    case deviceRemoved(DeviceID)
    /// What the device's Cast client knows now: it came online, went offline, sent a new
    /// receiver or media status (`CastSessionMachine`). Kept as it comes.
    case device(DeviceID, DeviceSnapshot)
    /// A message from the running app on any namespace other than receiver/media/tp.*.
    case appMessage(DeviceID, namespace: String, payload: CastPayload)
    /// An operation the bridge asked of the device finished.
    case operationCompleted(DeviceID, OperationToken, Result<OperationResult, BridgeError>)
    /// Clock tick (about once a second): timeouts, transfer windows, position republishing.
    case tick
    /// `online` arrived on `<discovery_prefix>/status` (also reachable through `.mqttMessage`).
    case homeAssistantOnline
    /// Go on with work an earlier output left for later (`BridgeOutput.moreWork`): the next part
    /// of a republish (the devices' topics, the owed retained topics, the discovery configs).
    case resume
    /// Instance mode (mqtt-api.md §10), SIGTERM: say `stopping` and hand the devices over
    /// (`BridgeOutput.handedOver` says when that is done).
    case instanceStop
    /// Instance mode: the process was frozen for `gap` seconds (a monotonic-clock gap longer than
    /// the MQTT keepalive): hold every device until its claim is confirmed again.
    case instanceResumed(gap: Double)
}

/// What an operation answered with, beyond success. Device state is not here: the statuses that
/// answer a request reach the bridge as `.device` snapshots, in the order the device sent them
/// and before the operation's completion.
public enum OperationResult: Sendable, Hashable {
    /// The app's reply on the namespace (`send` with `awaitReply`).
    case appMessage(CastPayload)
    /// SESSION_STATE's `sessionState` (storeSession).
    case sessionState(JSONValue)
    /// Done: the device confirmed (or, for `send` without `awaitReply`, the message was written).
    case done
}

/// A message to publish, exactly as given.
public struct Publication: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var payload: [UInt8]
    public var retain: Bool
    /// nil = `mqtt.qos`.
    public var qos: Int?
    /// MQTT 5 Correlation Data (responses to a command that carried a Response Topic).
    public var correlationData: [UInt8]?

    public init(topic: String, payload: [UInt8], retain: Bool, qos: Int? = nil, correlationData: [UInt8]? = nil) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
        self.qos = qos
        self.correlationData = correlationData
    }

    public init(topic: String, text: String, retain: Bool, correlationData: [UInt8]? = nil) {
        self.init(topic: topic, payload: Array(text.utf8), retain: retain, correlationData: correlationData)
    }

    public var text: String { String(decoding: payload, as: UTF8.self) }
    public var description: String { "\(topic)\(retain ? " (retained)" : ""): \(text)" }
}

/// A request to the Cast side. The I/O side runs it and feeds back
/// `.operationCompleted(token, ...)` exactly once (unless the bridge forgot the token
/// through a timeout, in which case a late completion is ignored).
public struct CastOperation: Sendable, Hashable {
    public var token: OperationToken
    public var deviceID: DeviceID
    public var kind: CastOperationKind
    /// How long the I/O side should wait for the answer; the bridge also times out on its own.
    public var timeout: Duration
    /// The app to launch (and join) before the request; nil: the request goes to the app the
    /// client has joined, or needs none. Decided once, by `CommandPlanner.appStep`, against
    /// the device's snapshot when the operation starts (`DeviceSnapshot.joinedApp`); the I/O
    /// side does what it says and decides nothing.
    public var launchFirst: String?

    public init(token: OperationToken, deviceID: DeviceID, kind: CastOperationKind, timeout: Duration,
                launchFirst: String? = nil) {
        self.token = token
        self.deviceID = deviceID
        self.kind = kind
        self.timeout = timeout
        self.launchFirst = launchFirst
    }
}

/// What to do on the device. See docs/architecture notes in each case.
public enum CastOperationKind: Sendable, Hashable {
    /// Receiver GET_STATUS (the status arrives as an event).
    case getReceiverStatus
    /// Media GET_STATUS to the joined app (the status arrives as an event). Without a joined
    /// app there is nothing to ask: the planner completes it at once (`AppStep.nothingToAsk`).
    case getMediaStatus
    /// Receiver LAUNCH (LAUNCH_ERROR -> `launch_error`).
    case launch(appId: String)
    /// Receiver STOP of that session.
    case stopApp(sessionId: String)
    /// Receiver SET_VOLUME level (already clamped to 0...1).
    case setVolume(level: Double)
    /// Receiver SET_VOLUME muted.
    case setMuted(Bool)
    /// A media-namespace request to the joined app, with the mediaSessionId already filled in
    /// (media error replies -> the matching `BridgeError`).
    case media(MediaRequest)
    /// LOAD in `appId` (launched first unless joined: `CastOperation.launchFirst`); the status arrives as an event.
    case load(LoadRequest, appId: String)
    /// QUEUE_LOAD in `appId` (launched first unless joined); the status arrives as an event.
    case queueLoad(QueueLoadRequest, appId: String)
    /// Send `payload` on `namespace` to the joined app (`appId` given: that app, launched first
    /// unless joined). With `awaitReply`, complete with the next message of the app on that
    /// namespace (`.appMessage`), else with `.done` once written.
    case send(namespace: String, payload: CastPayload, appId: String?, awaitReply: Bool)
    /// Media STORE_SESSION of that media session -> `.sessionState`.
    case storeSession(mediaSessionId: Int)
    /// Media RESUME_SESSION in `appId` (launched first unless joined); the status arrives as an event.
    case resumeSession(sessionState: JSONValue, appId: String)

    /// The case's name in snake case, the `operation` label of `/metrics` (a fixed set of values).
    public var metricLabel: String {
        switch self {
        case .getReceiverStatus: "get_receiver_status"
        case .getMediaStatus: "get_media_status"
        case .launch: "launch"
        case .stopApp: "stop_app"
        case .setVolume: "set_volume"
        case .setMuted: "set_muted"
        case .media: "media"
        case .load: "load"
        case .queueLoad: "queue_load"
        case .send: "send"
        case .storeSession: "store_session"
        case .resumeSession: "resume_session"
        }
    }
}

extension CastOperationKind {
    /// How many Cast requests the operation may take at most (a launch before a load, or a
    /// launch before a message and its reply).
    var castSteps: Int {
        switch self {
        case .load, .queueLoad, .resumeSession: return 2
        case .send(_, _, let appId, let awaitReply): return 1 + (appId == nil ? 0 : 1) + (awaitReply ? 1 : 0)
        default: return 1
        }
    }
}

/// One command or bridge request answered (for metrics): its name, the response's status code
/// (`ok` or the error code) and when it arrived; the I/O side measures the latency with its clock.
public struct CommandOutcome: Sendable, Hashable {
    public var command: String
    /// `ok`, or the contract's error code (`busy`, `timeout`, ...).
    public var code: String
    public var receivedAt: Date

    public init(command: String, code: String, receivedAt: Date) {
        self.command = command
        self.code = code
        self.receivedAt = receivedAt
    }
}

/// Counts of what the core holds, read by the I/O side for metrics (cheap: O(devices)).
public struct CoreGauges: Sendable, Hashable {
    public var devices: Int
    public var online: Int
    /// Commands and bridge steps waiting behind a device's running operation.
    public var waiting: Int
    /// Operations handed to the devices and not yet completed.
    public var inFlight: Int
}

/// Everything the bridge wants done for one input, in order: publish first, then operations.
public struct BridgeOutput: Sendable {
    public var publications: [Publication] = []
    public var operations: [CastOperation] = []
    /// Human-readable lines for the log (level chosen by the I/O side: info).
    public var logs: [String] = []
    /// Lines for the debug log: things a hostile or broken device does, which must not flood
    /// the operator's log.
    public var debugLogs: [String] = []
    /// A running app session started or ended: save `sessionSnapshot()` to `state_dir`.
    public var sessionsChanged = false
    /// What is retained per device changed: save `publishedSnapshot` to `state_dir`.
    public var publishedChanged = false
    /// A keep changed what `state_dir/keeps.json` holds: save `keepSnapshot`.
    public var keepsChanged = false
    /// Devices the bridge removed (excluded or forgotten): the I/O side drops their Cast clients.
    public var forgotten: [DeviceID] = []
    /// Every response sent for this input (command metrics).
    public var outcomes: [CommandOutcome] = []
    /// Lines for the `homeassistant` component's log (info).
    public var homeAssistantLogs: [String] = []
    /// The log levels changed (`bridge/request/log_level`, a traced device became known): apply them.
    public var logLevels: LogLevels?
    /// Instance mode: devices this instance now owns (start their Cast clients) and devices it
    /// lost (close their clients politely, without stopping the app: the new owner joins it).
    public var connect: [DeviceID] = []
    public var release: [DeviceID] = []
    /// Instance mode, after `.instanceStop`: every device is handed over (or nobody can take it).
    public var handedOver = false
    /// Part of a republish of everything (after a connect, or Home Assistant's birth): the I/O
    /// side hands its retained publications over in bulk, behind what is published directly.
    public var republish = false
    /// Work is left for later: feed `.resume`, one part a turn, after the inputs of that turn.
    public var moreWork = false

    public init(publications: [Publication] = [], operations: [CastOperation] = [], logs: [String] = []) {
        self.publications = publications
        self.operations = operations
        self.logs = logs
    }

    public var isEmpty: Bool { publications.isEmpty && operations.isEmpty }

    mutating func publish(_ p: Publication) { publications.append(p) }
    mutating func append(_ other: BridgeOutput) {
        publications += other.publications
        operations += other.operations
        logs += other.logs
        debugLogs += other.debugLogs
        sessionsChanged = sessionsChanged || other.sessionsChanged
        publishedChanged = publishedChanged || other.publishedChanged
        keepsChanged = keepsChanged || other.keepsChanged
        forgotten += other.forgotten
        outcomes += other.outcomes
        homeAssistantLogs += other.homeAssistantLogs
        logLevels = other.logLevels ?? logLevels
        connect += other.connect
        release += other.release
        handedOver = handedOver || other.handedOver
        republish = republish || other.republish
        moreWork = moreWork || other.moreWork
    }
}
