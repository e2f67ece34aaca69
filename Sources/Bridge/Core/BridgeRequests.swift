import CastProtocol
import Foundation

/// The bridge-level requests (`bridge/request/<name>`), each answered once.
extension BridgeCore {
    mutating func bridgeRequest(_ request: BridgeRequest, _ ctx: CommandContext, now: Date, _ out: inout BridgeOutput) {
        switch request {
        case .devices:
            respond(ctx, .success(devicesDocument), &out)
        case .healthCheck:
            var overload = health.inputOverload.mapValues { JSONValue.number(Double($0)) }
            overload["busy_commands"] = .int(scheduler.busyRejections + health.mqttBusyRejections)
            respond(ctx, .success(.object(["healthy": .bool(true), "devices": .int(registry.count), "online": .int(registry.onlineCount),
                                           "mqtt_reconnects": .int(max(0, health.mqttConnects - 1)),
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
            switch logging.applying(request, in: registry) {
            case .failure(let error): respond(ctx, .failure(error), &out)
            case .success(let levels):
                setLogLevels(levels, &out)
                respond(ctx, .success(logging.answer(in: registry)), &out)
            }
        case .remove(let key):
            if let id = registry.resolve(key), let device = registry[id] {
                deviceRemoved(id, now: now, &out)
                respond(ctx, .success(.object(["id": .string(id), "topic": .string(device.topic)])), &out)
            } else if let (id, entry) = publisher.remembered(key) {
                publisher.forget(id, topic: nil, topics: topics, &out)
                out.forgotten.append(id)
                respond(ctx, .success(.object(["id": .string(id), "topic": .string(entry.topic)])), &out)
            } else {
                respond(ctx, .failure(BridgeError(.unknownDevice, "no device is called \"\(key.prefix(200))\"")), &out)
            }
        }
    }
}
