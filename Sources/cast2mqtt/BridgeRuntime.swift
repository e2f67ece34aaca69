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

/// The daemon: MQTT, discovery and one Cast client per device around a `BridgeCore`.
///
/// One consumer task applies every input (MQTT message, discovery event, Cast event, operation
/// completion, clock tick) to the core in order, so per-device state needs no locks; it publishes
/// the publications and starts the Cast operations the core returns. Operations run
/// concurrently and report back through the same input stream.
final class BridgeRuntime: Service, Sendable {
    let configuration: BridgeConfiguration
    let logger: Logger
    private let inputs: AsyncStream<RuntimeInput>
    private let input: AsyncStream<RuntimeInput>.Continuation

    init(configuration: BridgeConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        (inputs, input) = AsyncStream.makeStream(of: RuntimeInput.self)
    }

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        var core = BridgeCore(configuration: configuration, startedAt: Date())
        let sessions = SessionFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = sessions.load() { core.restore(snapshot) }
        let publishedFile = PublishedFile(stateDir: configuration.stateDir, logger: logger)
        if let snapshot = publishedFile.load() {
            core.restorePublished(snapshot, staticIDs: Set(Adapt.discoveryConfiguration(configuration).staticDevices.map(\.effectiveID)))
        }
        let mqtt = try MosquittoClient(configuration: Adapt.mqttConfiguration(configuration, will: core.lastWill),
                                       logger: logger)
        let qos = Adapt.qos(configuration.mqtt.qos)
        for filter in core.subscriptions { try mqtt.subscribe(filter, qos: qos) }
        try mqtt.start()
        let discovery = DeviceDiscovery(configuration: Adapt.discoveryConfiguration(configuration), logger: logger)
        discovery.start()

        let input = self.input
        let forwarders = [
            Task {
                for await event in mqtt.events {
                    switch event {
                    case .connected: input.yield(.bridge(.mqttConnected))
                    case .disconnected: break
                    case .message(let m):
                        input.yield(.bridge(.mqttMessage(topic: m.topic, payload: m.payload, responseTopic: m.responseTopic,
                                                         correlationData: m.correlationData)))
                    }
                }
            },
            Task {
                for await event in discovery.events { input.yield(.discovery(event)) }
            },
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    input.yield(.bridge(.tick))
                }
            },
        ]

        var fleet = Fleet(group: group, cast: Adapt.castConfiguration(configuration), logger: logger, input: input)
        await withTaskCancellationOrGracefulShutdownHandler {
            for await next in inputs {
                let bridgeInput: BridgeInput
                switch next {
                case .discovery(let event):
                    guard let translated = fleet.apply(event) else { continue }
                    bridgeInput = translated
                case .bridge(let value):
                    bridgeInput = value
                }
                let output = core.handle(bridgeInput, now: Date())
                apply(output, mqtt: mqtt, fleet: fleet)
                for id in output.forgotten { fleet.drop(id) }
                if output.sessionsChanged { sessions.save(core.sessionSnapshot()) }
                if output.publishedChanged { publishedFile.save(core.publishedSnapshot) }
            }
        } onCancelOrGracefulShutdown: {
            input.finish()
        }

        logger.info("shutting down")
        for task in forwarders { task.cancel() }
        discovery.stop()
        let final = core.shutdown(now: Date())
        for publication in final.publications where publication.topic != core.lastWill.topic {
            publish(publication, mqtt: mqtt)
        }
        await fleet.shutdown()
        await mqtt.shutdown(finalMessage: MQTTMessage(topic: core.lastWill.topic, payload: core.lastWill.payload,
                                                      qos: qos, retain: true))
        try? await group.shutdownGracefully()
    }

    private func apply(_ output: BridgeOutput, mqtt: MosquittoClient, fleet: Fleet) {
        for line in output.logs { logger.info("\(line)") }
        for publication in output.publications { publish(publication, mqtt: mqtt) }
        let input = self.input
        for operation in output.operations {
            guard let client = fleet.client(operation.deviceID) else {
                input.yield(.bridge(.operationCompleted(operation.token,
                                                        .failure(BridgeError(.unknownDevice, "the device is not known")))))
                continue
            }
            Task {
                let result = await OperationRunner.run(operation, on: client)
                input.yield(.bridge(.operationCompleted(operation.token, result)))
            }
        }
    }

    private func publish(_ p: Publication, mqtt: MosquittoClient) {
        let message = MQTTMessage(topic: p.topic, payload: p.payload, qos: Adapt.qos(p.qos ?? configuration.mqtt.qos),
                                  retain: p.retain, correlationData: p.correlationData)
        do {
            try mqtt.publish(message)
        } catch {
            logger.warning("publish failed", metadata: ["mqtt.topic": "\(p.topic)", "mqtt.error": "\(error)"])
        }
    }
}

/// What the consumer task takes in: bridge inputs, and discovery events that the fleet turns
/// into bridge inputs after creating, moving or dropping the device's Cast client.
enum RuntimeInput: Sendable {
    case bridge(BridgeInput)
    case discovery(DiscoveryEvent)
}
