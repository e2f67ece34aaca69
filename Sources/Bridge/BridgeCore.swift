import CastProtocol
import Foundation

/// Who sent a command and where its one response goes.
struct CommandContext: Sendable, Hashable {
    var name: String
    var id: JSONValue?
    /// The resolved response topic (MQTT 5 Response Topic, else the default).
    var responseTopic: String
    var correlationData: [UInt8]?
    /// When the command arrived (for the command-latency metric of `BridgeOutput.outcomes`).
    var receivedAt: Date
}

/// Why an operation was requested; decides what happens when it completes.
enum Purpose: Sendable {
    /// Bridge-internal (status reads on connect, joins, bridge refresh): no response.
    case internalQuery
    /// A single-operation command: respond with `data` built from the resulting state.
    case command(CommandContext, DeviceCommand)
    /// `refresh`: receiver GET_STATUS, then media GET_STATUS when an app runs.
    case refresh(CommandContext, mediaDone: Bool)
    case transfer(TransferJob)
    case announce(AnnounceJob)
}

struct PendingOperation: Sendable {
    var deviceID: DeviceID
    var deadline: Date
    var purpose: Purpose
}

/// The domain core. Feed every input through `handle(_:now:)` from one task, in order; apply the
/// returned publications, then run the returned operations, feeding each one's completion back.
/// It never does I/O and never reads a clock.
public struct BridgeCore: Sendable {
    public let configuration: BridgeConfiguration
    public let topics: TopicGrammar
    let parser: CommandParser
    let startedAt: Date

    var names = TopicNameRegistry()
    var devices: [DeviceID: DeviceState] = [:]
    var pending: [OperationToken: PendingOperation] = [:]
    var nextToken: UInt64 = 1
    /// Retained topics as last published: content without timestamps (for change detection) and
    /// the full payload (for republishing after a broker reconnect).
    var retained: [String: (content: [UInt8], payload: [UInt8])] = [:]
    var mqttConnects = 0
    /// `bridge/info` and `bridge/devices` are O(devices) to build and to send: a storm of device
    /// events (a thousand devices coming back after a Wi-Fi outage) publishes them at most once a
    /// second, the rest on the next tick.
    var bridgeTopicsDirty = false
    /// Device commands held while the bridge starts (StartupHold.swift).
    var heldCommands: [HeldCommand] = []
    var lastBridgeTopicsPublish: Date?
    var transferCandidates: [TransferCandidate] = []
    var announcements: [DeviceID: AnnounceJob] = [:]
    var restoredSessions: [DeviceID: SessionSnapshot.Entry] = [:]
    /// What is retained per device (PublishedStore.swift), and the devices gone since the last run.
    var published = PublishedSnapshot()
    var goneAtStart: [DeviceID] = []
    /// Commands answered `busy` because their device's queue was full.
    var busyRejections = 0
    /// Inputs the I/O side dropped or coalesced under load (reported by `health_check`).
    public var inputOverload: [String: Int] = [:]

    public init(configuration: BridgeConfiguration, startedAt: Date) {
        self.configuration = configuration
        self.topics = TopicGrammar(base: configuration.mqtt.baseTopic,
                                   discoveryPrefix: configuration.homeassistant.discoveryPrefix)
        self.parser = CommandParser(configuration: configuration)
        self.startedAt = startedAt
    }

    /// Topic filters the MQTT side subscribes to (after every connect).
    public var subscriptions: [String] { topics.subscriptions(homeAssistant: configuration.homeassistant.enabled) }

    /// The retained `offline` the MQTT side sets as its last will on `bridge/state`.
    public var lastWill: Publication { Publication(topic: topics.bridgeState, text: "offline", retain: true) }

    /// What to publish on a clean shutdown (after the devices' availability goes offline).
    public mutating func shutdown(now: Date = Date()) -> BridgeOutput {
        var out = BridgeOutput()
        // Every command still waiting gets its one answer.
        let stopping = BridgeError(.internal, "the bridge is shutting down")
        for id in devices.keys.sorted() {
            devices[id]?.online = false
            drainWaiting(id, stopping, now: now, &out)
        }
        for (token, op) in pending.sorted(by: { $0.key < $1.key }) {
            pending.removeValue(forKey: token)
            continueAfter(op, .failure(stopping), now: now, &out)
        }
        // Follow-up steps of jobs that just failed must not start anything either.
        for id in devices.keys.sorted() { drainWaiting(id, stopping, now: now, &out) }
        out.operations.removeAll()
        for id in devices.keys.sorted() { devices[id]?.online = false; publishAvailability(id, &out) }
        out.publish(Publication(topic: topics.bridgeState, text: "offline", retain: true))
        return out
    }

    public mutating func handle(_ input: BridgeInput, now: Date) -> BridgeOutput {
        var out = BridgeOutput()
        switch input {
        case .mqttConnected: mqttConnected(now: now, &out)
        case .mqttMessage(let topic, let payload, let responseTopic, let correlation):
            mqttMessage(topic: topic, payload: payload, responseTopic: responseTopic, correlationData: correlation, now: now, &out)
        case .mqttOverloaded(let topic, let payload, let responseTopic, let correlation):
            mqttOverloaded(topic: topic, payload: payload, responseTopic: responseTopic, correlationData: correlation, now: now, &out)
        case .deviceDiscovered(let d), .deviceUpdated(let d): deviceSeen(d, now: now, &out)
        case .deviceRemoved(let id): deviceRemoved(id, now: now, &out)
        case .castConnected(let id): castConnected(id, now: now, &out)
        case .castDisconnected(let id, let reason): castDisconnected(id, reason: reason, now: now, &out)
        case .receiverStatus(let id, let status): applyReceiverStatus(id, status, now: now, &out)
        case .mediaStatus(let id, let statuses): applyMediaStatus(id, statuses, now: now, &out)
        case .appMessage(let id, let namespace, let payload): appMessage(id, namespace: namespace, payload: payload, &out)
        case .appSessionEnded(let id, let transportId): appSessionEnded(id, transportId: transportId, now: now, &out)
        case .operationCompleted(let token, let result): operationCompleted(token, result, now: now, &out)
        case .tick: tick(now: now, &out)
        case .homeAssistantOnline: republishDiscovery(&out)
        }
        return out
    }

    // MARK: - MQTT input

    mutating func mqttMessage(topic: String, payload: [UInt8], responseTopic: String?, correlationData: [UInt8]?,
                              now: Date, _ out: inout BridgeOutput) {
        guard let parsed = topics.parse(topic) else {
            out.logs.append("ignoring a message on \(topic.prefix(200)): not a command topic")
            return
        }
        func context(_ name: String, default defaultTopic: String) -> CommandContext {
            Self.context(name, default: defaultTopic, responseTopic: responseTopic, correlationData: correlationData, now: now)
        }
        switch parsed {
        case .homeAssistantStatus:
            if String(decoding: payload.prefix(16), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "online" {
                republishDiscovery(&out)
            }
        case .bridgeRequest(let name):
            var ctx = context(name, default: topics.bridgeResponse(name))
            switch parser.parseBridgeRequest(name: name, payload: payload) {
            case .failure(let f):
                ctx.id = f.id
                respond(ctx, .failure(f.error), &out)
            case .success(let (request, id)):
                ctx.id = id
                bridgeRequest(request, ctx, now: now, &out)
            }
        case .deviceCommand(let dev, let name):
            if holdIfStarting(device: dev, topic: topic, payload: payload, responseTopic: responseTopic,
                              correlationData: correlationData, now: now) {
                out.logs.append("holding \(name) for \(dev) until it is online (the bridge is starting)")
                return
            }
            var ctx = context(name, default: topics.response(dev))
            let result = parser.parse(name: name, payload: payload)
            switch result {
            case .failure(let f):
                ctx.id = f.id
                respond(ctx, .failure(f.error), &out)
            case .success(let command):
                ctx.id = command.id
                runCommand(command.command, deviceTopic: dev, ctx, now: now, &out)
            }
        case .deviceSend(let dev, let namespace):
            let ctx = context("send", default: topics.response(dev))
            switch parser.parseSend(namespace: namespace, payload: payload) {
            case .failure(let f): respond(ctx, .failure(f.error), &out)
            case .success(let command): runCommand(command.command, deviceTopic: dev, ctx, now: now, &out)
            }
        }
    }

    /// Answers `busy` to a command or request that arrived while the bridge was overloaded.
    mutating func mqttOverloaded(topic: String, payload: [UInt8], responseTopic: String?, correlationData: [UInt8]?,
                                 now: Date, _ out: inout BridgeOutput) {
        let name: String
        let defaultTopic: String
        switch topics.parse(topic) {
        case .deviceCommand(let dev, let command)?: (name, defaultTopic) = (command, topics.response(dev))
        case .deviceSend(let dev, _)?: (name, defaultTopic) = ("send", topics.response(dev))
        case .bridgeRequest(let request)?: (name, defaultTopic) = (request, topics.bridgeResponse(request))
        case .homeAssistantStatus?, nil: return
        }
        var ctx = Self.context(name, default: defaultTopic, responseTopic: responseTopic, correlationData: correlationData, now: now)
        if case .success(let (_, id)) = parser.bodyAndID(payload) { ctx.id = id }
        busyRejections += 1
        respond(ctx, .failure(BridgeError(.busy, "the bridge is overloaded; the command was not run, try again")), &out)
    }

    /// Where a command's one response goes: the MQTT 5 Response Topic (with the Correlation Data)
    /// when it is valid, else `defaultTopic`. The echoed name is capped at 64 bytes.
    static func context(_ name: String, default defaultTopic: String, responseTopic: String?,
                        correlationData: [UInt8]?, now: Date) -> CommandContext {
        let valid = validResponseTopic(responseTopic)
        return CommandContext(name: String(name.prefix(64)), id: nil, responseTopic: valid ?? defaultTopic,
                              correlationData: valid == nil ? nil : correlationData, receivedAt: now)
    }

    /// An MQTT 5 Response Topic is used only when it is a valid topic name.
    static func validResponseTopic(_ t: String?) -> String? {
        guard let t, !t.isEmpty, t.utf8.count <= 1024, !t.contains("+"), !t.contains("#"), !t.contains("\u{0}") else { return nil }
        return t
    }

    // MARK: - Operations

    /// Starts an operation on a device, or queues it behind the device's running one.
    mutating func enqueue(_ device: DeviceID, _ kind: CastOperationKind, purpose: Purpose, now: Date,
                          timeout: Double? = nil, _ out: inout BridgeOutput) {
        if devices[device]?.inFlight != nil {
            devices[device]?.waiting.append(.operation(kind, purpose, timeout: timeout))
            return
        }
        let token = OperationToken(nextToken)
        devices[device]?.inFlight = token
        nextToken += 1
        let seconds = timeout ?? configuration.cast.requestTimeout
        // The I/O side bounds every Cast request by `request_timeout`; an operation of several
        // requests (launch, then load) gets that much per step, plus a second so that the
        // device-side error, when there is one, arrives before our own timeout.
        let deadline = seconds * Double(kind.castSteps) + 1
        pending[token] = PendingOperation(deviceID: device, deadline: now.addingTimeInterval(deadline), purpose: purpose)
        out.operations.append(CastOperation(token: token, deviceID: device, kind: kind,
                                            timeout: .seconds(clamping: seconds)))
    }

    mutating func operationCompleted(_ token: OperationToken, _ result: Result<OperationResult, BridgeError>, now: Date,
                                     _ out: inout BridgeOutput) {
        // The device state this operation changed arrived before this completion, through the
        // Cast events: a completion carries success or failure (and a reply's data), not state.
        guard let op = finishOperation(token) else {
            out.logs.append("ignoring the late completion of \(token)")
            return
        }
        continueAfter(op, result, now: now, &out)
        startNext(op.deviceID, now: now, &out)
    }

    /// Forgets a pending operation and frees its device for the next one.
    mutating func finishOperation(_ token: OperationToken) -> PendingOperation? {
        guard let op = pending.removeValue(forKey: token) else { return nil }
        if devices[op.deviceID]?.inFlight == token { devices[op.deviceID]?.inFlight = nil }
        return op
    }

    mutating func continueAfter(_ op: PendingOperation, _ result: Result<OperationResult, BridgeError>, now: Date,
                                _ out: inout BridgeOutput) {
        switch op.purpose {
        case .internalQuery:
            if case .failure(let e) = result { out.logs.append("\(topicName(op.deviceID)): status query failed: \(e)") }
        case .command(let ctx, let command):
            finishCommand(ctx, command, device: op.deviceID, result, now: now, &out)
        case .refresh(let ctx, let mediaDone):
            refreshStep(ctx, device: op.deviceID, mediaDone: mediaDone, result, now: now, &out)
        case .transfer(let job):
            transferStep(job, result, now: now, &out)
        case .announce(let job):
            announceStep(job, device: op.deviceID, result, now: now, &out)
        }
    }

    mutating func tick(now: Date, _ out: inout BridgeOutput) {
        for (token, op) in pending.sorted(by: { $0.key < $1.key }) where op.deadline <= now {
            guard let op = finishOperation(token) else { continue }
            continueAfter(op, .failure(BridgeError(.timeout, "the device did not answer within \(formatSeconds(configuration.cast.requestTimeout)) s")),
                          now: now, &out)
            startNext(op.deviceID, now: now, &out)
        }
        if bridgeTopicsDirty { bridgeTopicsChanged(now: now, &out) }
        releaseHeld(device: nil, now: now, &out)
        expireTransferCandidates(now: now)
        announceTick(now: now, &out)
        republishPositions(now: now, &out)
    }

    func topicName(_ id: DeviceID) -> String { devices[id]?.topic ?? id }

    // MARK: - Retained publishing

    /// Publishes a retained JSON document when its content (without `timestampKeys`) changed,
    /// adding `updated_at: now` when asked.
    mutating func publishRetained(_ topic: String, _ doc: JSONValue, stamp: Date? = nil, ignoring: Set<String> = [],
                                  force: Bool = false, _ out: inout BridgeOutput) {
        let content = JSONOutput.bytes(ignoring.isEmpty ? doc : doc.removing(ignoring))
        if !force, retained[topic]?.content == content { return }
        var payload = content
        if let stamp, case .object(var o) = doc {
            o["updated_at"] = .time(stamp)
            payload = JSONOutput.bytes(.object(o))
        } else if !ignoring.isEmpty {
            payload = JSONOutput.bytes(doc)
        }
        retained[topic] = (content, payload)
        out.publish(Publication(topic: topic, payload: payload, retain: true))
    }

    mutating func publishRetainedText(_ topic: String, _ text: String, _ out: inout BridgeOutput) {
        let bytes = Array(text.utf8)
        if retained[topic]?.content == bytes { return }
        retained[topic] = (bytes, bytes)
        out.publish(Publication(topic: topic, payload: bytes, retain: true))
    }

    /// Clears a retained topic (empty retained payload).
    mutating func clearRetained(_ topic: String, _ out: inout BridgeOutput) {
        retained.removeValue(forKey: topic)
        out.publish(Publication(topic: topic, payload: [], retain: true))
    }

    /// After every broker (re)connect: bridge state online first, then every retained topic.
    mutating func mqttConnected(now: Date, _ out: inout BridgeOutput) {
        mqttConnects += 1
        retained[topics.bridgeState] = (Array("online".utf8), Array("online".utf8))
        out.publish(Publication(topic: topics.bridgeState, text: "online", retain: true))
        bridgeTopicsDirty = false
        lastBridgeTopicsPublish = now
        publishBridgeInfo(&out)
        publishBridgeDevices(&out)
        for id in devices.keys.sorted() { publishDevice(id, now: now, &out) }
        clearGoneDevices(&out)
        publishBridgeDiscovery(&out)
        for id in devices.keys.sorted() { publishDiscovery(id, &out) }
        let already = Set(out.publications.map(\.topic))
        for topic in retained.keys.sorted() where !already.contains(topic) {
            if let entry = retained[topic] { out.publish(Publication(topic: topic, payload: entry.payload, retain: true)) }
        }
    }
}

/// Seconds for a message: `10`, `2.5`; any value, also one a device made up (`1e19`), prints.
func formatSeconds(_ s: Double) -> String {
    Int(jsonNumber: s).map(String.init) ?? String(s)
}
