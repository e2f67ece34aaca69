import CoreMetrics
import Foundation
import Synchronization
import Prometheus

/// The daemon's metrics: swift-metrics objects backed by one swift-prometheus registry, exported
/// at `/metrics` (docs/metrics.md lists every metric). `bootstrap()` also makes the registry the
/// process's `MetricsSystem`, so the Cast client's own counters land in the same export; tests
/// make their own instance and never touch the global system.
public final class BridgeMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    let devicesKnown, devicesOnline, commandsWaiting, operationsInFlight, inputDepth, mqttUp, webClients: CoreMetrics.Gauge
    let mqttReconnects, loginFailures: CoreMetrics.Counter
    let mqttMessagesIn, mqttMessagesOut, mqttBytesIn, mqttBytesOut: CoreMetrics.Counter
    let processRSS, processFDs, processMaxFDs, processStart: CoreMetrics.Gauge
    let processCPU: FloatingPointCounter
    private let started = Date()

    struct Labeled {
        var counters: [String: CoreMetrics.Counter] = [:]
        var timers: [String: CoreMetrics.Timer] = [:]
        var codes: Set<String> = []
        var inputTotals: [String: Int] = [:]
        var cpuSeconds = 0.0
    }
    let labeled = Mutex(Labeled())
    let liveness = Mutex(Liveness())

    struct Liveness {
        var mqttConnected = false
        var mqttConnects = 0
        var lastTurn: ContinuousClock.Instant?
    }

    /// Latency buckets, seconds: a command through a LAN device takes milliseconds; a load or
    /// a timeout takes seconds.
    static let durationBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        .seconds(10), .seconds(30),
    ]

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), version: String = "") {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.durationBuckets
        self.factory = factory
        func gauge(_ name: String) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: name, factory: factory) }
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name, dimensions: dimensions, factory: factory)
        }
        devicesKnown = gauge("cast2mqtt_devices")
        devicesOnline = gauge("cast2mqtt_devices_online")
        commandsWaiting = gauge("cast2mqtt_commands_waiting")
        operationsInFlight = gauge("cast2mqtt_operations_in_flight")
        inputDepth = gauge("cast2mqtt_input_queue_depth")
        mqttUp = gauge("cast2mqtt_mqtt_connected")
        webClients = gauge("cast2mqtt_web_clients")
        mqttReconnects = counter("cast2mqtt_mqtt_reconnects_total")
        loginFailures = counter("cast2mqtt_web_login_failures_total")
        mqttMessagesIn = counter("cast2mqtt_mqtt_messages_total", [("direction", "in")])
        mqttMessagesOut = counter("cast2mqtt_mqtt_messages_total", [("direction", "out")])
        mqttBytesIn = counter("cast2mqtt_mqtt_bytes_total", [("direction", "in")])
        mqttBytesOut = counter("cast2mqtt_mqtt_bytes_total", [("direction", "out")])
        processRSS = gauge("process_resident_memory_bytes")
        processFDs = gauge("process_open_fds")
        processMaxFDs = gauge("process_max_fds")
        processStart = gauge("process_start_time_seconds")
        processCPU = FloatingPointCounter(label: "process_cpu_seconds_total", dimensions: [], factory: factory)
        CoreMetrics.Gauge(label: "cast2mqtt_info", dimensions: [("version", version)], factory: factory).record(1)
        processStart.record(started.timeIntervalSince1970.rounded())
        for kind in InputOverload.allCases { _ = overloadCounter(kind) }
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole + attoseconds / 1_000_000_000
    }

    /// A registry for the whole process: the `MetricsSystem` of swift-metrics (once per process).
    public static func bootstrap(version: String) -> BridgeMetrics {
        let metrics = BridgeMetrics(version: version)
        MetricsSystem.bootstrap(metrics.factory)
        return metrics
    }

    // MARK: - Recording

    /// One answered command or request (`BridgeOutput.outcomes`): count and latency.
    public func commandAnswered(command: String, code: String, latency: Duration) {
        let (counter, timer) = labeled.withLock { l -> (CoreMetrics.Counter, CoreMetrics.Timer) in
            let code = Self.codeLabel(code, seen: &l.codes)
            let command = Self.commandLabel(command)
            let key = command + "|" + code
            if let counter = l.counters[key], let timer = l.timers[key] { return (counter, timer) }
            let dims = [("command", command), ("code", code)]
            let counter = CoreMetrics.Counter(label: "cast2mqtt_commands_total", dimensions: dims, factory: factory)
            let timer = CoreMetrics.Timer(label: "cast2mqtt_command_duration_seconds", dimensions: dims, factory: factory)
            l.counters[key] = counter
            l.timers[key] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.recordNanoseconds(Self.nanoseconds(latency))
    }

    /// One Cast operation finished (from the device's event loop).
    public func castRequest(operation: String, ok: Bool, duration: Duration) {
        let timer = labeled.withLock { l -> CoreMetrics.Timer in
            let key = "cast|" + operation + (ok ? "|ok" : "|error")
            if let timer = l.timers[key] { return timer }
            let timer = CoreMetrics.Timer(label: "cast2mqtt_cast_request_duration_seconds",
                                          dimensions: [("operation", operation), ("result", ok ? "ok" : "error")], factory: factory)
            l.timers[key] = timer
            return timer
        }
        timer.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// A device event the bridge published: `connected`, `reconnected`, `disconnected` (with its reason).
    public func deviceEvent(type: String, reason: String?) {
        switch type {
        case "connected", "reconnected":
            cachedCounter("cast2mqtt_cast_connects_total", [("kind", type)]).increment()
        case "disconnected":
            cachedCounter("cast2mqtt_cast_disconnects_total", [("reason", Self.disconnectReason(reason ?? ""))]).increment()
        default: break
        }
    }

    public func mqttMessage(incoming: Bool, bytes: Int) {
        (incoming ? mqttMessagesIn : mqttMessagesOut).increment()
        (incoming ? mqttBytesIn : mqttBytesOut).increment(by: Int64(bytes))
    }

    public func mqttConnection(up: Bool) {
        let reconnect = liveness.withLock { l -> Bool in
            l.mqttConnected = up
            guard up else { return false }
            l.mqttConnects += 1
            return l.mqttConnects > 1
        }
        mqttUp.record(up ? 1 : 0)
        if reconnect { mqttReconnects.increment() }
    }

    /// The consumer loop took an input (`/healthz`).
    public func consumerTurned(now: ContinuousClock.Instant = .now) {
        liveness.withLock { $0.lastTurn = now }
    }

    /// The core's counts (on the consumer's tick).
    public func core(devices: Int, online: Int, waiting: Int, inFlight: Int) {
        devicesKnown.record(devices)
        devicesOnline.record(online)
        commandsWaiting.record(waiting)
        operationsInFlight.record(inFlight)
    }

    public enum InputOverload: String, CaseIterable, Sendable {
        case coalescedStatus = "coalesced_status"
        case overloadedCommand = "overloaded_command"
        case droppedAppMessage = "dropped_app_message"
    }

    /// The input queue's depth and its running totals of what it coalesced or dropped.
    public func inputQueue(depth: Int, totals: [InputOverload: Int]) {
        inputDepth.record(depth)
        let deltas = labeled.withLock { l -> [(InputOverload, Int)] in
            totals.compactMap { kind, total in
                let delta = total - (l.inputTotals[kind.rawValue] ?? 0)
                l.inputTotals[kind.rawValue] = max(total, l.inputTotals[kind.rawValue] ?? 0)
                return delta > 0 ? (kind, delta) : nil
            }
        }
        for (kind, delta) in deltas { overloadCounter(kind).increment(by: delta) }
    }

    private func overloadCounter(_ kind: InputOverload) -> CoreMetrics.Counter {
        cachedCounter("cast2mqtt_input_overload_total", [("kind", kind.rawValue)])
    }

    private func cachedCounter(_ name: String, _ dimensions: [(String, String)]) -> CoreMetrics.Counter {
        labeled.withLock { l in
            let key = name + "|" + dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
            if let counter = l.counters[key] { return counter }
            let counter = CoreMetrics.Counter(label: name, dimensions: dimensions, factory: factory)
            l.counters[key] = counter
            return counter
        }
    }
}
