import CastProtocol
import Foundation

/// The domain core: a thin router in front of parts that each own their state and answer with
/// values (documents, effects) the router carries out (Core/Effects.swift) —
///
/// | part | owns | answers with |
/// |---|---|---|
/// | `DeviceRegistry` (Devices/) | the devices, their topic names, the newest snapshot of each | `DeviceChange` |
/// | `WorkScheduler` (Work/) | per-device order: operations in flight, waiting work, deadlines, the startup hold | operations, expired work |
/// | `RetainedPublisher` (Publishing/) | what is retained (change-only), what was published per device (state_dir), pacing | publications |
/// | `GroupDirectory` (Groups/) | who is in which speaker group; the dynamic groups (no devices) | `GroupEffect`, documents |
/// | `TransferJobs`, `AnnounceJobs` (Jobs/) | commanded transfers and observed-transfer candidates; announcements | `JobEffect` |
/// | `KeepJobs` (Jobs/Keep.swift) | the pages and apps kept on displays (Core/KeepInputs.swift) | keep steps, `<dev>/keep` |
/// | `HomeAssistantDiscovery` (HomeAssistant/) | nothing: configs are computed from a device record | (topic, config) |
/// | `DeviceEvents` (Devices/) | nothing: events from a `DeviceChange` | event fields |
/// | `LogLevels` (Configuration/) | the levels in force, the traced devices | new levels, a log line |
/// | `CommandPlanner`, `CommandResponses` (Commands/) | nothing: a command against a record | a plan; a response |
///
/// The parts read each other only through read-only values (a `DeviceRegistry` passed in).
/// Feed every input through `handle(_:now:)` from one task, in order; apply the returned
/// publications, then run the returned operations, feeding each one's completion back. It never
/// does I/O and never reads a clock.
public struct BridgeCore: Sendable {
    public let configuration: BridgeConfiguration
    public let topics: TopicGrammar
    let parser: CommandParser
    let startedAt: Date

    var registry = DeviceRegistry()
    var groups = GroupDirectory()
    var scheduler: WorkScheduler
    var publisher = RetainedPublisher()
    let homeAssistant: HomeAssistantDiscovery
    var transfers: TransferJobs
    var announcements: AnnounceJobs
    /// Pages and apps kept on displays (Jobs/Keep.swift, Core/KeepInputs.swift).
    var keeps: KeepJobs
    var sessions = RestoredSessions()
    /// The app sessions the bridge's own loads started (Commands/BridgeLoads.swift).
    var loads = BridgeLoads()
    /// The log levels in force (Configuration/LogLevels.swift).
    var logging: LogLevels
    /// What `health_check` reports besides the devices.
    var health = HealthCounters()
    /// Instance mode (mqtt-api.md §10; Instances/ and Core/InstanceInputs.swift); nil in single
    /// mode, where every instance branch is one test of this value.
    var instances: InstanceState?
    /// Devices a republish has still to go through: their own topics after a connect, their
    /// discovery configs (Effects.swift, `continueRepublish`).
    var stateBacklog = DeviceBacklog()
    var discoveryBacklog = DeviceBacklog()

    /// The broker the MQTT side is connected to (`mqtt://host:port`, from `mqtt.url`'s list),
    /// set before each `.mqttConnected`; `bridge/info` names it as `broker`.
    public var broker: String?

    /// Inputs the I/O side dropped or coalesced under load (reported by `health_check`).
    public var inputOverload: [String: Int] {
        get { health.inputOverload }
        set { health.inputOverload = newValue }
    }

    public init(configuration: BridgeConfiguration, startedAt: Date) {
        self.configuration = configuration
        self.topics = TopicGrammar(base: configuration.mqtt.baseTopic,
                                   discoveryPrefix: configuration.homeassistant.discoveryPrefix)
        self.parser = CommandParser(configuration: configuration)
        self.startedAt = startedAt
        self.scheduler = WorkScheduler(requestTimeout: configuration.cast.requestTimeout, startedAt: startedAt)
        self.transfers = TransferJobs(window: configuration.cast.transferWindow)
        self.announcements = AnnounceJobs(requestTimeout: configuration.cast.requestTimeout)
        self.keeps = KeepJobs(requestTimeout: configuration.cast.requestTimeout,
                              configured: Self.configuredKeeps(configuration, parser: CommandParser(configuration: configuration)))
        self.logging = LogLevels(configuration.log)
        self.homeAssistant = HomeAssistantDiscovery(configuration: configuration, topics: topics)
        if let me = configuration.instance {
            instances = InstanceState(
                ownership: Ownership(me: me, base: configuration.mqtt.baseTopic, version: configuration.version, started: startedAt,
                                     willDelay: InstanceWill.delay(configuration), primary: configuration.primary),
                unanswered: UnansweredCommands(keepalive: configuration.mqtt.keepalive, willDelay: InstanceWill.delay(configuration)),
                prefer: configuration.prefer)
        }
    }

    // MARK: - State the daemon saves, restores and reads

    /// The levels in force (the daemon applies them at start).
    public var logLevels: LogLevels { logging }

    /// What the core holds now (metrics gauges).
    public var gauges: CoreGauges {
        CoreGauges(devices: registry.count, online: registry.onlineCount, waiting: scheduler.waitingCount,
                   inFlight: scheduler.inFlightCount)
    }

    /// The current sessions of every device with a running app (`state_dir/sessions.json`).
    public func sessionSnapshot() -> SessionSnapshot { SessionSnapshot(registry, loads: loads) }

    /// Seeds the sessions saved by a previous run.
    public mutating func restore(_ snapshot: SessionSnapshot) {
        sessions = RestoredSessions(saved: snapshot.devices)
        for (id, entry) in snapshot.devices where entry.loadedByBridge == true {
            if let session = entry.sessionId { loads.restore(id, session: session) }
        }
    }

    /// What is retained per device (`state_dir/published.json`).
    public var publishedSnapshot: PublishedSnapshot { publisher.published }

    /// Seeds what a previous run published. `staticIDs`: the ids of the configured static
    /// devices (as Discovery computes them); `admitted`: Discovery's include/exclude rule (id,
    /// friendly name). Devices that are gone are cleared on the first broker connect.
    public mutating func restorePublished(_ snapshot: PublishedSnapshot, staticIDs: Set<DeviceID>,
                                          admitted: (DeviceID, String) -> Bool = { _, _ in true }) {
        let mdns = configuration.discovery.mdns
        publisher.restore(snapshot) { id, entry in
            if !admitted(id, entry.name) { return true }
            let configured = staticIDs.contains(id) || entry.configured.map(staticIDs.contains) == true
            return entry.source == DeviceSource.static.rawValue && !configured && !mdns
        }
    }

    // MARK: - Inputs

    /// Commands that may wait for a busy device; past this a command is answered `busy`.
    public static var maxWaitingCommands: Int { WorkScheduler.maxWaitingCommands }

    /// Topic filters the MQTT side subscribes to (after every connect).
    public var subscriptions: [String] {
        topics.subscriptions(homeAssistant: configuration.homeassistant.enabled)
            + (instances.map { $0.ownership.subscriptions + [topics.response("+")] } ?? [])
    }

    /// The last will: the retained `offline` on `bridge/state`; in instance mode the empty
    /// retained payload that clears this instance's document (`bridge/state` keeps no will then).
    public var lastWill: Publication {
        if let instances { return Publication(topic: instances.ownership.documentTopic, payload: [], retain: true) }
        return Publication(topic: topics.bridgeState, text: "offline", retain: true)
    }

    public mutating func handle(_ input: BridgeInput, now: Date) -> BridgeOutput {
        var out = BridgeOutput()
        switch input {
        case .mqttConnected: mqttConnected(now: now, &out)
        case .mqttMessage(let topic, let payload, _, _) where instances != nil && instanceMessage(topic, payload, now: now, &out):
            break
        case .mqttMessage(let topic, let payload, let responseTopic, let correlation):
            mqttMessage(topic: topic, payload: payload, responseTopic: responseTopic, correlationData: correlation, now: now, &out)
        case .mqttOverloaded(let topic, let payload, let responseTopic, let correlation):
            mqttOverloaded(topic: topic, payload: payload, responseTopic: responseTopic, correlationData: correlation, now: now, &out)
        case .deviceDiscovered(let d), .deviceUpdated(let d): deviceSeen(d, now: now, &out)
        case .deviceRemoved(let id): deviceRemoved(id, now: now, &out)
        case .device(let id, let snapshot): snapshotArrived(id, snapshot, now: now, &out)
        case .appMessage(let id, let namespace, let payload): appMessage(id, namespace: namespace, payload: payload, now: now, &out)
        case .operationCompleted(_, let token, let result): operationCompleted(token, result, now: now, &out)
        case .tick: tick(now: now, &out)
        case .homeAssistantOnline: republishDiscovery(now: now, &out)
        case .resume: continueRepublish(now: now, &out)
        case .instanceStop: instanceStop(now: now, &out)
        case .instanceResumed(let gap): instanceResumed(gap: gap, now: now, &out)
        }
        if instances != nil { instanceAfter(input, now: now, &out) }
        return out
    }

    /// What to publish on a clean shutdown (after the devices' availability goes offline).
    public mutating func shutdown(now: Date = Date()) -> BridgeOutput {
        var out = BridgeOutput()
        // Every command still waiting gets its one answer.
        let stopping = BridgeError(.internal, "the bridge is shutting down")
        for id in registry.ids { drainWaiting(id, stopping, now: now, &out) }
        for op in scheduler.abandonAll() { continueAfter(op, .failure(stopping), now: now, &out) }
        // Follow-up steps of jobs that just failed must not start anything either.
        for id in scheduler.deviceIDsWithWork { drainWaiting(id, stopping, now: now, &out) }
        out.operations.removeAll()
        for id in registry.ids {
            publisher.publishText(topics.availability(registry.topicName(id)), "offline", &out)
        }
        // In instance mode `bridge/state` goes offline only with the last live instance.
        if instances.map({ i in i.ownership.live.allSatisfy { $0 == i.ownership.me } }) ?? true {
            out.publish(Publication(topic: topics.bridgeState, text: "offline", retain: true))
        }
        if instances != nil { gate(&out) }
        return out
    }

    mutating func tick(now: Date, _ out: inout BridgeOutput) {
        for op in scheduler.expiredOperations(now: now) {
            continueAfter(op, .failure(BridgeError(.timeout, "the device did not answer within \(formatSeconds(configuration.cast.requestTimeout)) s")),
                          now: now, &out)
            startNext(op.deviceID, now: now, &out)
        }
        for ctx in scheduler.expiredCommands(now: now) {
            respond(ctx, .failure(BridgeError(.timeout, "the command expired before it could be sent")), &out)
        }
        if publisher.bridgeTopicsPending { bridgeTopicsChanged(now: now, &out) }
        releaseHeld(device: nil, now: now, &out)
        transfers.expireCandidates(now: now)
        apply(announcements.tick(now: now, devices: registry), now: now, &out)
        apply(groups.expireHolds(now: now, in: registry), now: now, &out)
        republishPositions(now: now, &out)
        keepTick(now: now, &out)
        if instances != nil { instanceTick(now: now, &out) }
    }

    /// After every broker (re)connect: bridge state online first, then every retained topic.
    /// Only the bridge's own topics go out in this turn; the devices' (10 000 devices: ~50 000
    /// topics and ~80 MB of discovery configs) follow in parts, each its own turn of the
    /// consumer, so that a command arriving meanwhile is not held behind all of them.
    mutating func mqttConnected(now: Date, _ out: inout BridgeOutput) {
        if instances != nil { instanceConnected(now: now, &out) }
        health.mqttConnects += 1
        publisher.brokerConnected()
        out.publish(Publication(topic: topics.bridgeState, text: "online", retain: true))
        publisher.record(topics.bridgeState, text: "online")
        out.republish = true
        bridgeTopicsChanged(now: now, force: true, &out)
        // Devices gone since the previous run are cleared once; with discovery off, every config.
        publisher.clearGone(known: { registry[$0] != nil }, topics: topics, &out)
        if !homeAssistant.enabled { publisher.clearAllDiscovery(&out) }
        publishBridgeDiscovery(&out)
        // Then, in parts: each device's own topics where they changed, every retained topic as
        // last published (a topic that changes meanwhile goes out at once, and its part skips
        // it), the devices' configs (rebuilt: only their hash is kept).
        stateBacklog = DeviceBacklog(ids: registry.ids, force: false)
        discoveryBacklog = DeviceBacklog(ids: registry.ids, force: false)
        continueRepublish(now: now, &out)
    }
}

/// Seconds for a message: `10`, `2.5`; any value, also one a device made up (`1e19`), prints.
func formatSeconds(_ s: Double) -> String {
    Int(jsonNumber: s).map(String.init) ?? String(s)
}

/// Counters of the bridge's own health (`bridge/request/health_check`).
struct HealthCounters: Sendable {
    /// Broker connects in this run (the first is no reconnect).
    var mqttConnects = 0
    /// MQTT messages answered `busy` because the bridge's input queue was full.
    var mqttBusyRejections = 0
    /// Inputs the I/O side dropped or coalesced under load.
    var inputOverload: [String: Int] = [:]
}
