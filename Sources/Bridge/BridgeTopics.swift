import CastProtocol
import Foundation

/// `bridge/info`, `bridge/devices` and the bridge-level requests.
extension BridgeCore {
    var onlineCount: Int { devices.values.filter(\.online).count }

    /// What the core holds now (metrics gauges).
    public var gauges: CoreGauges {
        var waiting = 0
        for device in devices.values { waiting += device.waiting.count }
        return CoreGauges(devices: devices.count, online: onlineCount, waiting: waiting, inFlight: pending.count)
    }

    func devicesDocument() -> JSONValue {
        .array(devices.values.sorted { $0.topic < $1.topic }.map { d in
            .object([
                "id": .string(d.id), "name": .string(d.descriptor.friendlyName), "topic": .string(d.topic),
                "model": .str(d.descriptor.model), "cast_type": .string(d.descriptor.castType.rawValue),
                "address": .string(d.descriptor.host), "port": .int(d.descriptor.port), "online": .bool(d.online),
                "source": .string(d.descriptor.source.rawValue),
            ])
        })
    }

    mutating func publishBridgeInfo(_ out: inout BridgeOutput) {
        publishRetained(topics.bridgeInfo, .object([
            "version": .string(configuration.version), "started_at": .time(startedAt),
            "base_topic": .string(configuration.mqtt.baseTopic), "devices": .int(devices.count), "online": .int(onlineCount),
        ]), &out)
    }

    mutating func publishBridgeDevices(_ out: inout BridgeOutput) {
        publishRetained(topics.bridgeDevices, devicesDocument(), &out)
    }

    /// The device list or counts changed: publish `bridge/info` and `bridge/devices` now, or, when
    /// they went out less than a second ago, on the next tick.
    mutating func bridgeTopicsChanged(now: Date, _ out: inout BridgeOutput) {
        if let last = lastBridgeTopicsPublish, now.timeIntervalSince(last) < 1, now >= last {
            bridgeTopicsDirty = true
            return
        }
        bridgeTopicsDirty = false
        lastBridgeTopicsPublish = now
        publishBridgeInfo(&out)
        publishBridgeDevices(&out)
    }

    mutating func bridgeRequest(_ request: BridgeRequest, _ ctx: CommandContext, now: Date, _ out: inout BridgeOutput) {
        switch request {
        case .devices:
            respond(ctx, .success(devicesDocument()), &out)
        case .healthCheck:
            var overload = inputOverload.mapValues { JSONValue.number(Double($0)) }
            overload["busy_commands"] = .int(busyRejections)
            respond(ctx, .success(.object(["healthy": .bool(true), "devices": .int(devices.count), "online": .int(onlineCount),
                                           "mqtt_reconnects": .int(max(0, mqttConnects - 1)),
                                           "overload": .object(overload)])), &out)
        case .refresh:
            let online = devices.values.filter(\.online).map(\.id).sorted()
            for id in online { enqueue(id, .getReceiverStatus, purpose: .internalQuery, now: now, &out) }
            for id in online where devices[id]?.appSpeaksMedia == true {
                enqueue(id, .getMediaStatus, purpose: .internalQuery, now: now, &out)
            }
            respond(ctx, .success(.object(["devices": .int(online.count)])), &out)
        case .transfer(let from, let to, let keepSource):
            guard let source = resolveDevice(from) else {
                respond(ctx, .failure(BridgeError(.unknownDevice, "no device is called \"\(from)\"")), &out)
                return
            }
            guard devices[source]?.online == true else {
                respond(ctx, .failure(BridgeError(.deviceOffline, "\(topicName(source)) is offline")), &out)
                return
            }
            startTransfer(ctx, from: source, to: to, keepSource: keepSource, now: now, &out)
        case .remove(let key):
            if let id = resolveDevice(key), let device = devices[id] {
                deviceRemoved(id, now: now, &out)
                respond(ctx, .success(.object(["id": .string(id), "topic": .string(device.topic)])), &out)
            } else if let id = rememberedDevice(key), let entry = published.devices[id] {
                forgetPublished(id, topic: nil, &out)
                out.forgotten.append(id)
                respond(ctx, .success(.object(["id": .string(id), "topic": .string(entry.topic)])), &out)
            } else {
                respond(ctx, .failure(BridgeError(.unknownDevice, "no device is called \"\(key.prefix(200))\"")), &out)
            }
        }
    }
}
