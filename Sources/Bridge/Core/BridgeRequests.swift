import CastProtocol
import Foundation

/// `bridge/info`, `bridge/devices` and the bridge-level requests (`bridge/request/<name>`).
extension BridgeCore {
    /// What the core holds now (metrics gauges).
    public var gauges: CoreGauges {
        CoreGauges(devices: registry.count, online: registry.onlineCount, waiting: scheduler.waitingCount,
                   inFlight: scheduler.pending.count)
    }

    func devicesDocument() -> JSONValue {
        .array(registry.ids.compactMap { registry[$0] }.sorted { $0.topic < $1.topic }.map { d in
            .object([
                "id": .string(d.id), "name": .string(d.descriptor.friendlyName), "topic": .string(d.topic),
                "model": .str(d.descriptor.model), "cast_type": .string(d.descriptor.castType.rawValue),
                "address": .string(d.descriptor.host), "port": .int(d.descriptor.port), "online": .bool(d.online),
                "source": .string(d.descriptor.source.rawValue),
            ])
        })
    }

    mutating func publishBridgeInfo(_ out: inout BridgeOutput) {
        publisher.publish(topics.bridgeInfo, .object([
            "version": .string(configuration.version), "started_at": .time(startedAt),
            "base_topic": .string(configuration.mqtt.baseTopic), "devices": .int(registry.count), "online": .int(registry.onlineCount),
        ]), &out)
    }

    mutating func publishBridgeDevices(_ out: inout BridgeOutput) {
        publisher.publish(topics.bridgeDevices, devicesDocument(), &out)
    }

    /// The device list or counts changed: publish `bridge/info` and `bridge/devices` now, or, when
    /// they went out less than a second ago, on the next tick.
    mutating func bridgeTopicsChanged(now: Date, force: Bool = false, _ out: inout BridgeOutput) {
        guard publisher.bridgeTopicsDue(now: now, force: force) else { return }
        publishBridgeInfo(&out)
        publishBridgeDevices(&out)
    }

    mutating func bridgeRequest(_ request: BridgeRequest, _ ctx: CommandContext, now: Date, _ out: inout BridgeOutput) {
        switch request {
        case .devices:
            respond(ctx, .success(devicesDocument()), &out)
        case .healthCheck:
            var overload = inputOverload.mapValues { JSONValue.number(Double($0)) }
            overload["busy_commands"] = .int(scheduler.busyRejections + mqttBusyRejections)
            respond(ctx, .success(.object(["healthy": .bool(true), "devices": .int(registry.count), "online": .int(registry.onlineCount),
                                           "mqtt_reconnects": .int(max(0, mqttConnects - 1)),
                                           "overload": .object(overload)])), &out)
        case .refresh:
            let online = registry.ids.filter { registry[$0]?.online == true }
            for id in online {
                if let operation = scheduler.refresh(id, now: now) { out.operations.append(operation) }
            }
            respond(ctx, .success(.object(["devices": .int(online.count)])), &out)
        case .transfer(let from, let to, let keepSource):
            guard let source = registry.resolve(from) else {
                respond(ctx, .failure(BridgeError(.unknownDevice, "no device is called \"\(from)\"")), &out)
                return
            }
            guard registry[source]?.online == true else {
                respond(ctx, .failure(BridgeError(.deviceOffline, "\(registry.topicName(source)) is offline")), &out)
                return
            }
            endAnnouncements(source, by: "transfer", now: now, &out)
            apply(transfers.start(ctx, from: source, to: to, keepSource: keepSource, devices: registry), now: now, &out)
        case .logLevel(let request):
            logLevelRequest(request, ctx, &out)
        case .remove(let key):
            if let id = registry.resolve(key), let device = registry[id] {
                deviceRemoved(id, now: now, &out)
                respond(ctx, .success(.object(["id": .string(id), "topic": .string(device.topic)])), &out)
            } else if let id = publisher.published.device(key), let entry = publisher.published.devices[id] {
                publisher.forget(id, topic: nil, topics: topics, &out)
                out.forgotten.append(id)
                respond(ctx, .success(.object(["id": .string(id), "topic": .string(entry.topic)])), &out)
            } else {
                respond(ctx, .failure(BridgeError(.unknownDevice, "no device is called \"\(key.prefix(200))\"")), &out)
            }
        }
    }
}
