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
import StageTrace
import Web

/// The daemon: MQTT, discovery and one Cast client per device around a `BridgeCore`.
///
/// The core runs on one event loop, the *core loop*, in a `Consumer` that takes every input from
/// one bounded `InputQueue` (MQTT messages, discovery events, the devices' snapshots, operation
/// completions, ticks, the web page's commands) in order. The first devices share that loop
/// (Fleet): a device's status reaches the core in the turn that read it, and a command's Cast
/// message leaves in the turn that took the command — no thread hop but the one from
/// libmosquitto's network thread to the core loop. A larger fleet spreads over every loop.
///
/// Structured: `run()` owns one task group (the web page, the discovery reader); the consumer's
/// end is awaited, then the final steps run on the core loop, the clients' polite closes are
/// awaited, the group's children are cancelled and awaited: nothing outlives `run()`.
final class BridgeRuntime: Service, Sendable {
    let configuration: BridgeConfiguration
    let logger: Logger
    let inputs: InputQueue
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
        let coreLoop = group.next()
        // The web server on a thread of its own: `/healthz` answers 503 while the core's loop is
        // stuck (served from that loop it could not answer at all), and a page costs the devices'
        // loops nothing.
        let webGroup: MultiThreadedEventLoopGroup? = observers.server == nil ? nil : MultiThreadedEventLoopGroup(numberOfThreads: 1)
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
        let discovery = DeviceDiscovery(configuration: Adapt.discoveryConfiguration(configuration), logger: .component("discovery"))
        let environment = ProcessInfo.processInfo.environment
        let offCoreLoop = environment["CAST2MQTT_TEST_HOOKS"] == "1" && environment["CAST2MQTT_TEST_OFF_CORE_LOOP"] == "1"
        let fleet = try Fleet(group: group, coreLoop: coreLoop, cast: Adapt.castConfiguration(configuration), logger: .component("cast"),
                              inputs: inputs, offCoreLoop: offCoreLoop)
        let fetcher: EurekaInfoFetcher?
        do {
            fetcher = try EurekaInfoFetcher(group: group, logger: .component("discovery"))
        } catch {
            logger.warning("cannot read eureka_info (static devices get no facts from it)", metadata: ["eureka.error": "\(error)"])
            fetcher = nil
        }
        let facts = DeviceFactsRunner(configuration: Adapt.discoveryConfiguration(configuration), fetcher: fetcher,
                                      inputs: inputs, logger: .component("discovery"))
        let consumer = NIOLoopBoundBox.makeBoxSendingValue(
            Consumer(runtime: self, loop: coreLoop, mqtt: mqtt, notifier: SystemdNotifier(), core: core, fleet: fleet,
                     facts: facts, sessions: sessions, published: published),
            eventLoop: coreLoop)
        let finished = try await coreLoop.submit { consumer.value.finished.futureResult }.get()
        inputs.consume { coreLoop.execute { consumer.value.drain() } }
        try mqtt.start()
        discovery.start()
        let inputs = self.inputs
        let ticker = coreLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            inputs.push(.bridge(.tick))
        }

        await withDiscardingTaskGroup { tasks in
            tasks.addTask { [observers] in await observers.run(group: webGroup ?? group) }
            tasks.addTask {
                for await event in discovery.events { inputs.push(.discovery(event)) }
            }
            await withTaskCancellationOrGracefulShutdownHandler {
                _ = try? await finished.get()
            } onCancelOrGracefulShutdown: {
                inputs.finish()
            }
            ticker.cancel()
            logger.info("shutting down")
            discovery.stop()
            let final: (clients: [CastDeviceClient], closing: [EventLoopFuture<Void>]) = (try? await coreLoop.submit {
                consumer.value.notifier.notify("STOPPING=1")
                return consumer.value.shutDown()
            }.get()) ?? ([], [])
            let (clients, closing) = final
            await withTaskGroup(of: Void.self) { closes in
                for client in clients { closes.addTask { await client.shutdown() } }
            }
            for close in closing { try? await close.get() }
            tasks.cancelAll()
        }
        let lastWill = core.lastWill
        await mqtt.shutdown(finalMessage: MQTTMessage(topic: lastWill.topic, payload: lastWill.payload, qos: qos, retain: true))
        try? await webGroup?.shutdownGracefully()
        try? await group.shutdownGracefully()
        StageTrace.flush()
    }

    /// What the input queue dropped or coalesced so far, for `health_check`.
    var overloadCounts: [String: Int] {
        let c = inputs.counters
        return ["coalesced_statuses": c.coalescedStatuses, "overloaded_commands": c.overloadedCommands,
                "dropped_app_messages": c.droppedAppMessages]
    }
}
