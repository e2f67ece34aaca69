import CastProtocol
import Foundation

/// Where the parts' answers are carried out: the jobs' `JobEffect`s, the groups' `GroupEffect`s,
/// and every retained document of a device (built by the parts — Documents, GroupDirectory,
/// HomeAssistantDiscovery — and published change-only by RetainedPublisher) and every event.
extension BridgeCore {
    // MARK: - The parts' effects

    /// Carries out what a job asked for, in order.
    mutating func apply(_ effects: [JobEffect], now: Date, _ out: inout BridgeOutput) {
        for effect in effects {
            switch effect {
            case .operation(let id, let kind, let purpose): startOperation(id, kind, purpose: purpose, now: now, &out)
            case .respond(let ctx, let result): respond(ctx, result, &out)
            case .transferred(let from, let to, let contentId, let position):
                let fields = DeviceEvents.transferred(from: registry.topicName(from), to: registry.topicName(to),
                                                      contentId: contentId, position: position)
                publishBridgeEvent(fields, now: now, &out)
                publishDeviceEvent(from, fields, now: now, &out)
                publishDeviceEvent(to, fields, now: now, &out)
            case .event(let id, let fields): publishDeviceEvent(id, fields, now: now, &out)
            case .log(let line): out.logs.append(line)
            }
        }
    }

    /// Carries out what the groups asked for, in order.
    mutating func apply(_ effects: [GroupEffect], now: Date, _ out: inout BridgeOutput) {
        for effect in effects {
            switch effect {
            case .members(let gid):
                guard let group = registry[gid] else { continue }
                publisher.publish(topics.members(group.topic), groups.membersDocument(group, in: registry), &out)
            case .info(let id): publishInfo(id, &out)
            case .state(let id): publishDeviceState(id, now: now, &out)
            case .failWork(let id, let error): failAllWork(id, error, now: now, &out)
            case .forgotten(let id): out.forgotten.append(id)
            case .log(let line): out.logs.append(line)
            }
        }
    }

    /// New log levels (a request, or devices `log.devices` names became known), resolved
    /// against the devices known now; handed to the daemon when they changed.
    mutating func setLogLevels(_ levels: LogLevels, _ out: inout BridgeOutput) {
        guard let (levels, line) = logging.change(to: levels, in: registry) else { return }
        if let line { out.logs.append(line) }
        logging = levels
        out.logLevels = levels
    }

    // MARK: - Retained device documents

    mutating func publishAvailability(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        publisher.publishText(topics.availability(device.topic), device.online ? "online" : "offline", &out)
    }

    /// Every retained topic of a device (change-only).
    mutating func publishDevice(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        publishAvailability(id, &out)
        publishInfo(id, &out)
        publishDeviceState(id, now: now, &out)
    }

    mutating func publishInfo(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        var doc = groups.infoDocument(device, in: registry)
        // Instance mode: `owner` names the instance that publishes it (only the owner does).
        if let me = instances?.ownership.me, case .object(var o) = doc {
            o["owner"] = .string(me)
            doc = .object(o)
        }
        publisher.publish(topics.info(device.topic), doc, &out)
    }

    /// receiver, media and state documents (change-only; `updated_at` is not content): its own
    /// media and state, or its group's while it shows its group's playback (Groups/).
    mutating func publishDeviceState(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        publisher.publish(topics.receiver(device.topic), Documents.receiverDocument(device.receiver),
                          stamp: device.receiverUpdatedAt ?? now, &out)
        let (doc, source) = groups.shownMedia(device, in: registry)
        publisher.publish(topics.media(device.topic), doc, stamp: source.media != nil ? (source.mediaUpdatedAt ?? now) : nil, &out)
        publisher.publishText(topics.state(device.topic), source.stateWord, &out)
    }

    /// With `media.position_interval` > 0: republish `media` with an estimated position while playing.
    mutating func republishPositions(now: Date, _ out: inout BridgeOutput) {
        let interval = configuration.media.positionInterval
        guard interval > 0 else { return }
        for id in registry.ids {
            // A member showing its group's playback republishes the group's position.
            guard let device = registry[id], device.online, case let source = groups.shownMedia(device, in: registry).source,
                  source.media?.playerState == "PLAYING",
                  publisher.positionDue(id, since: source.snapshot.positionAt, interval: interval, now: now) else { continue }
            let doc = groups.shownMedia(device, in: registry, position: source.position(at: now), positionAt: now).doc
            publisher.publish(topics.media(device.topic), doc, stamp: now, force: true, &out)
        }
    }

    // MARK: - Home Assistant discovery

    mutating func publishDiscovery(_ id: DeviceID, force: Bool = false, _ out: inout BridgeOutput) {
        guard let d = registry[id] else { return }
        publisher.publishConfigs(d, homeAssistant.enabled ? homeAssistant.configs(d, keep: keeps.entry(id) != nil) : nil, force: force, &out)
    }

    mutating func publishBridgeDiscovery(force: Bool = false, _ out: inout BridgeOutput) {
        guard homeAssistant.enabled else { return }
        publisher.publishBridgeConfigs(homeAssistant.bridgeConfigs, force: force, &out)
    }

    /// Home Assistant announced itself: every config again, changed or not (in parts, as after
    /// a connect).
    mutating func republishDiscovery(now: Date, _ out: inout BridgeOutput) {
        guard homeAssistant.enabled else { return }
        out.homeAssistantLogs.append("Home Assistant is online: publishing the discovery configs of \(registry.count) devices again")
        out.republish = true
        publishBridgeDiscovery(force: true, &out)
        discoveryBacklog = DeviceBacklog(ids: registry.ids, force: true)
        continueRepublish(now: now, &out)
    }

    /// The next part of a republish, each its own turn of the consumer (`moreWork` while some is
    /// left): after a connect, the devices' own topics where they changed (`stateBacklog`), then
    /// every retained topic owed to the new connection (the publisher's), then the devices'
    /// discovery configs (`discoveryBacklog`, also after Home Assistant's birth). A device
    /// removed meanwhile is skipped; a topic published meanwhile is not sent again.
    mutating func continueRepublish(now: Date, _ out: inout BridgeOutput) {
        if !stateBacklog.isEmpty {
            out.republish = true
            for id in stateBacklog.next(DeviceBacklog.statePart) { publishDevice(id, now: now, &out) }
        } else if publisher.owesRepublish {
            out.republish = true
            publisher.republishOwed(RetainedPublisher.republishPart, &out)
        } else if !discoveryBacklog.isEmpty {
            out.republish = true
            for id in discoveryBacklog.next(DeviceBacklog.discoveryPart) { publishDiscovery(id, force: discoveryBacklog.force, &out) }
        }
        out.moreWork = !stateBacklog.isEmpty || publisher.owesRepublish || !discoveryBacklog.isEmpty
    }

    // MARK: - Events

    mutating func publishDeviceEvent(_ id: DeviceID, _ fields: [String: JSONValue], now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        out.publish(DeviceEvents.deviceEvent(fields, topics: topics, device: device.topic, now: now))
    }

    mutating func publishBridgeEvent(_ fields: [String: JSONValue], now: Date, _ out: inout BridgeOutput) {
        out.publish(DeviceEvents.bridgeEvent(fields, topics: topics, now: now))
    }

    // MARK: - The bridge's topics

    /// `bridge/devices` (and the `devices` request's answer); with owners in instance mode.
    var devicesDocument: JSONValue {
        let doc = Documents.devicesDocument(registry)
        return instances == nil ? doc : instanceDevicesDocument(doc)
    }

    /// The device list or counts changed: publish `bridge/info` and `bridge/devices` now, or, when
    /// they went out less than a second ago, on the next tick.
    mutating func bridgeTopicsChanged(now: Date, force: Bool = false, _ out: inout BridgeOutput) {
        guard publisher.bridgeTopicsDue(now: now, force: force) else { return }
        var info: [String: JSONValue] = [
            "version": .string(configuration.version), "started_at": .time(startedAt),
            "base_topic": .string(configuration.mqtt.baseTopic), "devices": .int(registry.count), "online": .int(registry.onlineCount),
        ]
        if let broker { info["broker"] = .string(broker) }
        publisher.publish(topics.bridgeInfo, .object(info), &out)
        publisher.publish(topics.bridgeDevices, devicesDocument, &out)
    }
}

/// The devices a republish has still to go through, in order.
struct DeviceBacklog: Sendable {
    /// Discovery configs per turn of the consumer: ~130 KB of JSON, about 5 ms in a release
    /// build (64 took ~20 ms at 10 000 devices, and a command waits for at most one part).
    static let discoveryPart = 16
    /// Devices whose own topics are checked per turn (each unchanged one costs its documents'
    /// hashes, a changed one its JSON).
    static let statePart = 256

    private var ids: [DeviceID] = []
    private var position = 0
    /// Published even when unchanged (Home Assistant's birth).
    private(set) var force = false

    init() {}

    init(ids: [DeviceID], force: Bool) {
        self.ids = ids
        self.force = force
    }

    var isEmpty: Bool { position >= ids.count }

    mutating func next(_ count: Int) -> ArraySlice<DeviceID> {
        let end = min(ids.count, position + count)
        defer {
            position = end
            if isEmpty { ids = [] }
        }
        return ids[position..<end]
    }
}
