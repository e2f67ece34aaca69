import Bridge
import CastClient
import CastProtocol
import Discovery
import Foundation
import Logging
import MQTT
import NIOCore
import NIOPosix
import ServiceLifecycle
import Web

/// The daemon: MQTT, discovery and one Cast client per device around a `BridgeCore`.
///
/// Structured concurrency: `run()` owns one task group. Its children are the discovery event
/// reader, the one-second ticker and the shutdown of dropped devices; the group's own task is the
/// consumer. The consumer takes every input from one bounded `InputQueue` (MQTT messages,
/// discovery events, the devices' Cast events, operation completions, ticks) and applies it to
/// the core in order, so per-device state needs no locks; it publishes what the core returns
/// (written to the broker by the consumer itself when the MQTT thread is idle) and hands its
/// operations to the devices' event loops, which push each completion back into the queue. When
/// the consumer ends (SIGTERM), the group's children are cancelled and awaited, and the fleet's
/// shutdown fails what is still in flight: nothing outlives `run()`.
///
/// MQTT events go straight from the MQTT network thread into the queue, and the devices' Cast
/// events straight from their event loops (no task per device), in the order they happen and
/// before the completion of the request they answer; the core therefore sees a device's status
/// before the operation that caused it completes.
final class BridgeRuntime: Service, Sendable {
    let configuration: BridgeConfiguration
    let logger: Logger
    private let inputs: InputQueue
    /// The web page and the metrics (RuntimeObservers.swift).
    let observers: RuntimeObservers

    init(configuration: BridgeConfiguration, logger: Logger, metrics: BridgeMetrics = BridgeMetrics(), logTail: LogTail = LogTail()) {
        self.configuration = configuration
        self.logger = logger
        inputs = InputQueue(onBurst: { [logger] waiting in
            logger.warning("the bridge is overloaded: coalescing device statuses, answering new commands busy",
                           metadata: ["inputs.waiting": "\(waiting)"])
        })
        observers = RuntimeObservers(configuration: configuration, logger: .component("web"), metrics: metrics, logTail: logTail,
                                     inputs: inputs)
    }

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        var core = BridgeCore(configuration: configuration, startedAt: Date())
        let sessions = SessionFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = sessions.load() { core.restore(snapshot) }
        let published = PublishedFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = published.load() {
            let discoveryConfiguration = Adapt.discoveryConfiguration(configuration)
            let filter = DeviceFilter(include: discoveryConfiguration.include, exclude: discoveryConfiguration.exclude)
            core.restorePublished(snapshot, staticIDs: Set(discoveryConfiguration.staticDevices.map(\.effectiveID)),
                                  admitted: { filter.allows(id: $0, friendlyName: $1) })
        }
        // MQTT events go from libmosquitto's callbacks straight into the queue (no reader task).
        let mqtt = try MosquittoClient(configuration: Adapt.mqttConfiguration(configuration, will: core.lastWill),
                                       logger: .component("mqtt"), onEvent: { [inputs, observers] event in
            observers.mqtt(event)
            switch event {
            case .connected: inputs.push(.bridge(.mqttConnected))
            case .disconnected: inputs.push(.mqttDisconnected)
            case .message(let m):
                inputs.push(.bridge(.mqttMessage(topic: m.topic, payload: m.payload, responseTopic: m.responseTopic,
                                                 correlationData: m.correlationData)))
            }
        })
        let qos = Adapt.qos(configuration.mqtt.qos)
        for filter in core.subscriptions { try mqtt.subscribe(filter, qos: qos) }
        try mqtt.start()
        let discovery = DeviceDiscovery(configuration: Adapt.discoveryConfiguration(configuration), logger: .component("discovery"))
        discovery.start()
        var fleet = try Fleet(group: group, cast: Adapt.castConfiguration(configuration), logger: .component("cast"), inputs: inputs)
        let notifier = SystemdNotifier()
        let inputs = self.inputs

        await withDiscardingTaskGroup { tasks in
            tasks.addTask { [observers] in await observers.run(group: group) }
            tasks.addTask {
                for await event in discovery.events { inputs.push(.discovery(event)) }
            }
            tasks.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    inputs.push(.bridge(.tick))
                }
            }

            var consumer = Consumer(runtime: self, mqtt: mqtt, notifier: notifier)
            await withTaskCancellationOrGracefulShutdownHandler {
                for await next in inputs {
                    consumer.take(next, core: &core, fleet: &fleet, sessions: sessions, published: published, tasks: &tasks)
                }
            } onCancelOrGracefulShutdown: {
                inputs.finish()
            }

            logger.info("shutting down")
            notifier.notify("STOPPING=1")
            discovery.stop()
            let final = core.shutdown(now: Date())
            for publication in final.publications where publication.topic != core.lastWill.topic {
                consumer.publish(publication)
            }
            if final.sessionsChanged { consumer.sessionsPacer.changed() }
            if final.publishedChanged { consumer.publishedPacer.changed() }
            consumer.saveState(core: core, sessions: sessions, published: published, force: true)
            await fleet.shutdown()
            tasks.cancelAll()
        }
        await mqtt.shutdown(finalMessage: MQTTMessage(topic: core.lastWill.topic, payload: core.lastWill.payload,
                                                      qos: qos, retain: true))
        try? await group.shutdownGracefully()
    }

    /// The consumer's own state: what it needs besides the core and the fleet.
    struct Consumer {
        let runtime: BridgeRuntime
        let mqtt: MosquittoClient
        let notifier: SystemdNotifier
        var watchdog: WatchdogPacer
        var ready = false
        /// False while the broker is away: retained state is not handed to libmosquitto to queue
        /// then (the reconnect republishes the current state anyway).
        var mqttUp = false
        var skippedWhileDown = 0
        var sessionsPacer = SavePacer()
        let homeAssistantLogger = Logger.component("homeassistant")
        var publishedPacer = SavePacer()
        let testHooks = ProcessInfo.processInfo.environment["CAST2MQTT_TEST_HOOKS"] == "1"

        init(runtime: BridgeRuntime, mqtt: MosquittoClient, notifier: SystemdNotifier) {
            self.runtime = runtime
            self.mqtt = mqtt
            self.notifier = notifier
            self.watchdog = WatchdogPacer(notifier: notifier)
        }

        var logger: Logger { runtime.logger }

        mutating func take(_ next: RuntimeInput, core: inout BridgeCore, fleet: inout Fleet, sessions: SessionFile,
                           published: PublishedFile, tasks: inout DiscardingTaskGroup) {
            defer { watchdog.pingIfDue() }
            runtime.observers.turned()
            let bridgeInput: BridgeInput
            switch next {
            case .discovery(let event):
                guard let translated = fleet.apply(event) else { return }
                bridgeInput = translated
            case .mqttDisconnected:
                mqttUp = false
                return
            case .bridge(.mqttMessage(let topic, let payload, _, _))
                where testHooks && topic == "\(core.topics.base)/bridge/request/debug_stall":
                // Tests only: block this loop as a wedge would (the watchdog pings must stop).
                let seconds = Double(String(decoding: payload.prefix(8), as: UTF8.self)) ?? 5
                logger.warning("test hook: stalling the consumer loop", metadata: ["seconds": "\(seconds)"])
                usleep(UInt32(Duration.seconds(clamping: min(seconds, 60)).clampedNanoseconds / 1000))
                return
            case .bridge(let value):
                bridgeInput = value
            }
            if case .mqttConnected = bridgeInput {
                mqttUp = true
                if skippedWhileDown > 0 {
                    logger.info("broker back; republishing the current state",
                                metadata: ["mqtt.skipped_while_down": "\(skippedWhileDown)"])
                    skippedWhileDown = 0
                }
                if !ready {
                    ready = true
                    notifier.notify("READY=1")
                }
            }
            if case .bridge(.tick) = next {
                core.inputOverload = runtime.overloadCounts
                runtime.observers.tick(core.gauges)
            }
            let now = Date()
            let output = core.handle(bridgeInput, now: now)
            runtime.observers.applied(output, now: now)
            for line in output.logs { logger.info("\(line)") }
            for line in output.debugLogs { logger.debug("\(line)") }
            for line in output.homeAssistantLogs { homeAssistantLogger.info("\(line)") }
            if let levels = output.logLevels { LogControl.shared.apply(levels) }
            for publication in output.publications { publish(publication) }
            for operation in output.operations { start(operation, fleet: fleet) }
            for id in output.forgotten { fleet.drop(id, tasks: &tasks) }
            if output.sessionsChanged { sessionsPacer.changed() }
            if output.publishedChanged { publishedPacer.changed() }
            saveState(core: core, sessions: sessions, published: published)
        }

        /// Writes the state files that changed, paced (`SavePacer`); `force` at shutdown.
        mutating func saveState(core: BridgeCore, sessions: SessionFile, published: PublishedFile, force: Bool = false) {
            let now = ContinuousClock.now
            if sessionsPacer.take(now: now, force: force) { sessions.save(core.sessionSnapshot()) }
            if publishedPacer.take(now: now, force: force) { published.save(core.publishedSnapshot) }
        }

        /// Hands an operation to its device's event loop; its completion comes back through the
        /// queue, exactly once.
        func start(_ operation: CastOperation, fleet: Fleet) {
            let inputs = runtime.inputs
            let (device, token) = (operation.deviceID, operation.token)
            guard let client = fleet.client(device) else {
                inputs.push(.bridge(.operationCompleted(device, token, .failure(BridgeError(.unknownDevice, "the device is not known")))))
                return
            }
            let (observers, kind, started) = (runtime.observers, operation.kind, ContinuousClock.now)
            OperationDispatch.dispatch(operation, to: client) { result in
                observers.castRequest(kind, started: started, ok: (try? result.get()) != nil)
                inputs.push(.bridge(.operationCompleted(device, token, result)))
            }
        }

        mutating func publish(_ p: Publication) {
            runtime.observers.tee(p)
            // A clear (empty retained payload) is always handed over: the core has already
            // forgotten the topic and would not republish it.
            if !mqttUp, p.retain, !p.payload.isEmpty {
                skippedWhileDown += 1
                return
            }
            let message = MQTTMessage(topic: p.topic, payload: p.payload,
                                      qos: Adapt.qos(p.qos ?? runtime.configuration.mqtt.qos),
                                      retain: p.retain, correlationData: p.correlationData)
            do {
                try mqtt.publish(message)
                runtime.observers.sent(p)
            } catch {
                logger.warning("publish failed", metadata: ["mqtt.topic": "\(p.topic)", "mqtt.error": "\(error)"])
            }
        }
    }

    /// What the input queue dropped or coalesced so far, for `health_check`.
    var overloadCounts: [String: Int] {
        let c = inputs.counters
        return ["coalesced_statuses": c.coalescedStatuses, "overloaded_commands": c.overloadedCommands,
                "dropped_app_messages": c.droppedAppMessages]
    }
}
