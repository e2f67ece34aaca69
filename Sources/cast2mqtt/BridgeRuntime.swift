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
/// `BridgeRuntime` holds what the parts share (the configuration, the input queue, the web page
/// and metrics); `makeDaemon()` builds the parts — the core with its restored state, the MQTT
/// client with its subscriptions, discovery, the fleet — and hands them over as four `Service`s
/// (Services.swift) for the `ServiceGroup`, which runs and stops them in order. Nothing outlives
/// the group but the event loops, which `Daemon.closeLoops()` shuts down after it.
final class BridgeRuntime: Sendable {
    let configuration: BridgeConfiguration
    let logger: Logger
    let inputs: InputQueue
    /// The web page and the metrics (RuntimeObservers.swift).
    let observers: RuntimeObservers

    /// The web page's event loop: one thread, made when the page is first on, for the life of
    /// the process (see `makeDaemon`).
    static let webLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

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

    /// The daemon's services and the event loops they run on.
    struct Daemon {
        /// In start order; the group stops them in the reverse order (Services.swift).
        let services: [ServiceGroupConfiguration.ServiceConfiguration]
        let loops: [MultiThreadedEventLoopGroup]

        /// After the group has ended: the event loops, then the stage trace.
        func closeLoops() async {
            for loops in loops.reversed() { try? await loops.shutdownGracefully() }
            StageTrace.flush()
        }
    }

    /// Builds every part; throws (with nothing left running) when one cannot be made, e.g. an
    /// MQTT configuration the client refuses.
    func makeDaemon() throws -> Daemon {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        // The web server on a thread of its own: `/healthz` answers 503 while the core's loop is
        // stuck (served from that loop it could not answer at all), and a page costs the devices'
        // loops nothing. Its loop lives as long as the process and is never shut down: the web
        // framework releases its server (whose helper completes a promise on the server's loop)
        // whenever its tasks are destroyed, which may be after the daemon's own loops are closed;
        // on a loop we had closed that was SwiftNIO's "Cannot schedule tasks on an EventLoop that
        // has already shut down" at exit, a crash in a future SwiftNIO (Tests/lifecycle).
        let webGroup: MultiThreadedEventLoopGroup? = observers.server == nil ? nil : Self.webLoop
        let loops = [group]
        do {
            return try makeServices(group: group, webGroup: webGroup, loops: loops)
        } catch {
            for loops in loops { try? loops.syncShutdownGracefully() }
            throw error
        }
    }

    private func makeServices(group: MultiThreadedEventLoopGroup, webGroup: MultiThreadedEventLoopGroup?,
                              loops: [MultiThreadedEventLoopGroup]) throws -> Daemon {
        let coreLoop = group.next()
        var core = BridgeCore(configuration: configuration, startedAt: Date())
        let sessions = SessionFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = sessions.load() { core.restore(snapshot) }
        let keeps = KeepFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = keeps.load() { core.restoreKeeps(snapshot, now: Date()) }
        let published = PublishedFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = published.load() {
            let filter = configuration.discovery.filter
            core.restorePublished(snapshot, staticIDs: Set(configuration.discovery.devices.map(\.effectiveID)),
                                  admitted: { filter.allows(id: $0, friendlyName: $1) })
        }
        let inputs = self.inputs
        let mirrors = RuntimeObservers.mirrorSubscriptions(configuration)
        let base = configuration.mqtt.baseTopic
        // MQTT events go from libmosquitto's callbacks straight into the queue (no reader task).
        let mqtt = try MosquittoClient(configuration: Adapt.mqttConfiguration(configuration, will: core.lastWill),
                                       logger: .component("mqtt"), onEvent: { [inputs, observers] event in
            observers.mqtt(event)
            switch event {
            case .connected: inputs.push(.bridge(.mqttConnected))
            case .disconnected: inputs.push(.mqttDisconnected)
            case .message(let m) where !mirrors.isEmpty && RuntimeObservers.isMirrored(m.topic, base: base):
                // Instance mode: another instance's device documents, for the page only.
                observers.mirror(topic: m.topic, payload: m.payload)
                // The core sees the responses too: a command a dead owner never answered (UnansweredCommands).
                if m.topic.hasSuffix("/response") {
                    inputs.push(.bridge(.mqttMessage(topic: m.topic, payload: m.payload, responseTopic: nil, correlationData: nil)))
                }
            case .message(let m):
                inputs.push(.bridge(.mqttMessage(topic: m.topic, payload: m.payload, responseTopic: m.responseTopic,
                                                 correlationData: m.correlationData)))
            }
        })
        // Subscribed before the client starts: the first connection subscribes at once.
        let qos = Adapt.qos(configuration.mqtt.qos)
        let subscriptions = core.subscriptions
        for filter in subscriptions + mirrors.filter({ !subscriptions.contains($0) }) { try mqtt.subscribe(filter, qos: qos) }
        let discovery = DeviceDiscovery(configuration: configuration.discovery, logger: .component("discovery"))
        let environment = ProcessInfo.processInfo.environment
        let offCoreLoop = environment["CAST2MQTT_TEST_HOOKS"] == "1" && environment["CAST2MQTT_TEST_OFF_CORE_LOOP"] == "1"
        let fleet = try Fleet(group: group, coreLoop: coreLoop, cast: Adapt.castConfiguration(configuration), logger: .component("cast"),
                              inputs: inputs, deviceAuth: try Adapt.deviceAuthPolicy(configuration), offCoreLoop: offCoreLoop)
        let fetcher: EurekaInfoFetcher?
        do {
            fetcher = try EurekaInfoFetcher(group: group, logger: .component("discovery"))
        } catch {
            logger.warning("cannot read eureka_info (static devices get no facts from it)", metadata: ["eureka.error": "\(error)"])
            fetcher = nil
        }
        let facts = DeviceFactsRunner(configuration: configuration.discovery, fleet: fleet, fetcher: fetcher,
                                      inputs: inputs, logger: .component("discovery"), instanceMode: configuration.instance != nil)
        let lastWill = core.lastWill
        let consumer = NIOLoopBoundBox.makeBoxSendingValue(
            Consumer(runtime: self, loop: coreLoop, mqtt: mqtt, notifier: SystemdNotifier(), core: core, facts: facts,
                     sessions: sessions, published: published, keeps: keeps),
            eventLoop: coreLoop)

        let discoveryService = DiscoveryService(discovery: discovery, inputs: inputs)
        let consumerService = ConsumerService(runtime: self, coreLoop: coreLoop, consumer: consumer, after: discoveryService.stopped)
        let mqttService = MQTTService(
            mqtt: mqtt, finalMessage: MQTTMessage(topic: lastWill.topic, payload: lastWill.payload, qos: qos, retain: true),
            after: consumerService.finished)
        let webService = WebService(observers: observers, group: webGroup ?? group)
        return Daemon(services: [
            // Its end (the page off, its port taken) is no reason to stop the bridge.
            .init(service: webService, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore),
            .init(service: mqttService),
            .init(service: consumerService),
            .init(service: discoveryService),
        ], loops: loops)
    }

    /// What the input queue dropped or coalesced so far, for `health_check`.
    var overloadCounts: [String: Int] {
        let c = inputs.counters
        return ["coalesced_statuses": c.coalescedStatuses, "overloaded_commands": c.overloadedCommands,
                "dropped_app_messages": c.droppedAppMessages]
    }
}
