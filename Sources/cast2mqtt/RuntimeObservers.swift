import Bridge
import Foundation
import Logging
import MQTT
import NIOCore
import Synchronization
import Web

/// What the web page and `/metrics` see of the daemon, in one place: the daemon's parts call one
/// method per thing that happens (an MQTT event, a publication, an applied output, a tick, a
/// Cast operation), and `WebService` runs the web server (Services.swift). Each call is a counter
/// or a lock and a dictionary write; with the page off (`web.enabled: false`) only the metrics
/// remain.
final class RuntimeObservers: Sendable {
    let metrics: BridgeMetrics
    let hub: WebHub?
    let server: WebServer?
    private let latest: LatestGauges
    private let inputs: InputQueue

    init(configuration: BridgeConfiguration, logger: Logger, metrics: BridgeMetrics, logTail: LogTail, inputs: InputQueue) {
        let latest = LatestGauges()
        self.latest = latest
        self.metrics = metrics
        self.inputs = inputs
        guard configuration.web.enabled, let address = configuration.web.address else {
            hub = nil
            server = nil
            return
        }
        let instanceMode = configuration.instance != nil
        let hub = WebHub(baseTopic: configuration.mqtt.baseTopic, logTail: logTail) { [inputs] topic, payload in
            if instanceMode {
                inputs.push(.webCommand(topic: topic, payload: payload))
            } else {
                inputs.push(.bridge(.mqttMessage(topic: topic, payload: payload, responseTopic: nil, correlationData: nil)))
            }
        }
        self.hub = hub
        let token = (try? ConfigurationLoader.webSecret(configuration)) ?? nil
        server = WebServer(
            configuration: .init(host: address.host, port: address.port, token: token,
                                 metricsPublic: configuration.web.metricsPublic, version: configuration.version,
                                 configurationText: ConfigurationLoader.printable(configuration),
                                 ingressAddress: configuration.web.ingressAddress),
            hub: hub, metrics: metrics, logger: logger, stats: { [latest, inputs, metrics] in
                Self.stats(latest.value, inputs: inputs, metrics: metrics)
            })
    }

    /// The web server, until cancelled (returns at once when it is off).
    func run(group: any EventLoopGroup) async {
        await server?.run(group: group)
    }

    /// From the MQTT network thread.
    func mqtt(_ event: MQTTEvent) {
        switch event {
        case .connected: metrics.mqttConnection(up: true)
        case .disconnected: metrics.mqttConnection(up: false)
        case .message(let m): metrics.mqttMessage(incoming: true, bytes: m.payload.count)
        }
    }

    /// Every publication of the bridge, before the broker gets it (also while the broker is away).
    /// Instance mode: what the page shows of the other instances' devices, from the broker
    /// (`mirrorSubscriptions`); only the hub takes it.
    func mirror(topic: String, payload: [UInt8]) {
        hub?.tee(topic: topic, payload: payload)
    }

    /// Instance mode, with the page on: the topics the page needs from every instance — every
    /// device's retained documents and responses (a command from this page may be answered by
    /// another instance) and the primary's bridge documents.
    static func mirrorSubscriptions(_ c: BridgeConfiguration) -> [String] {
        guard c.instance != nil, c.web.enabled else { return [] }
        let base = c.mqtt.baseTopic
        return ["availability", "info", "receiver", "media", "state", "members", "response"].map { "\(base)/+/\($0)" }
            + ["\(base)/bridge/devices"]
    }

    /// True for a topic of `mirrorSubscriptions` (`<base>/<one level>/<leaf>`).
    static func isMirrored(_ topic: String, base: String) -> Bool {
        guard topic.hasPrefix(base), topic.utf8.dropFirst(base.utf8.count).first == UInt8(ascii: "/") else { return false }
        let rest = topic.utf8.dropFirst(base.utf8.count + 1)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")), !rest[rest.index(after: slash)...].contains(UInt8(ascii: "/")) else {
            return false
        }
        let leaf = String(decoding: rest[rest.index(after: slash)...], as: UTF8.self)
        return ["availability", "info", "receiver", "media", "state", "members", "response", "devices"].contains(leaf)
    }

    func tee(_ p: Publication) {
        hub?.tee(topic: p.topic, payload: p.payload)
        if p.topic.hasSuffix("/event"), let event = DeviceEvent(p.payload) {
            metrics.deviceEvent(type: event.type, reason: event.reason)
        }
    }

    /// A publication handed to the broker.
    func sent(_ p: Publication) {
        metrics.mqttMessage(incoming: false, bytes: p.payload.count)
    }

    /// The consumer took an input (for `/healthz`).
    func turned() { metrics.consumerTurned() }

    /// The core's output for one input: one latency sample per response.
    func applied(_ output: BridgeOutput, now: Date) {
        for outcome in output.outcomes {
            let seconds = max(0, now.timeIntervalSince(outcome.receivedAt))
            metrics.commandAnswered(command: outcome.command, code: outcome.code,
                                    latency: .nanoseconds(Int64(min(seconds, 86_400) * 1e9)))
        }
    }

    /// Once a second, on the consumer's tick.
    func tick(_ gauges: CoreGauges) {
        latest.value = gauges
        metrics.core(devices: gauges.devices, online: gauges.online, waiting: gauges.waiting, inFlight: gauges.inFlight)
        let c = inputs.counters
        metrics.inputQueue(depth: inputs.count, totals: [.coalescedStatus: c.coalescedStatuses,
                                                         .overloadedCommand: c.overloadedCommands,
                                                         .droppedAppMessage: c.droppedAppMessages])
    }

    /// A Cast operation completed (on the device's event loop).
    func castRequest(_ kind: CastOperationKind, started: ContinuousClock.Instant, ok: Bool) {
        metrics.castRequest(operation: kind.metricLabel, ok: ok, duration: .now - started)
    }

    /// The bridge page's counters (numbers and booleans only).
    static func stats(_ gauges: CoreGauges?, inputs: InputQueue, metrics: BridgeMetrics) -> [UInt8] {
        let c = inputs.counters
        let health = metrics.health()
        var fields = ["\"mqtt_connected\":\(health.mqttConnected)", "\"input_queue_depth\":\(inputs.count)",
                      "\"overload\":{\"coalesced_statuses\":\(c.coalescedStatuses),\"overloaded_commands\":\(c.overloadedCommands),"
                          + "\"dropped_app_messages\":\(c.droppedAppMessages)}"]
        if let loop = health.loopAge { fields.append("\"loop_age_seconds\":\((loop * 1000).rounded() / 1000)") }
        if let g = gauges {
            fields += ["\"devices\":\(g.devices)", "\"online\":\(g.online)", "\"waiting\":\(g.waiting)", "\"in_flight\":\(g.inFlight)"]
        }
        return Array(("{" + fields.joined(separator: ",") + "}").utf8)
    }
}

/// The core's gauges of the last tick, read by the bridge page's stats (from the web's loop).
private final class LatestGauges: Sendable {
    private let gauges = Mutex<CoreGauges?>(nil)

    var value: CoreGauges? {
        get { gauges.withLock { $0 } }
        set { gauges.withLock { $0 = newValue } }
    }
}

/// `type` (and `reason`) of a device event the bridge published.
struct DeviceEvent {
    var type: String
    var reason: String?

    init?(_ payload: [UInt8]) {
        guard payload.count < 4096, let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
              let type = object["type"] as? String, ["connected", "reconnected", "disconnected"].contains(type) else { return nil }
        self.type = type
        reason = object["reason"] as? String
    }
}
