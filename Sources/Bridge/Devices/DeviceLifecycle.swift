import CastProtocol
import Foundation

/// The router's device inputs: discovery adds, updates and removes devices (registry), a Cast
/// client's snapshot is kept as it comes (registry) and what it changed goes to the parts that
/// react: events, the scheduler (a device that went offline has its work answered), the jobs,
/// the retained documents.
extension BridgeCore {
    mutating func deviceSeen(_ d: DeviceDescriptor, now: Date, _ out: inout BridgeOutput) {
        // A dynamic speaker group is followed for its members but is no device (Groups/).
        if d.isDynamicGroup, registry[d.id] == nil {
            dynamicGroupSeen(d, now: now, &out)
            return
        }
        // include/exclude is Discovery's: a device that reaches the core is admitted.
        if let added = registry.add(d) {
            out.logs.append("device \(d.friendlyName) (\(d.id)) is \(added.topic)")
            publishDevice(d.id, now: now, &out)
            publishBridgeEvent("device_added", added, now: now, &out)
            resolveTracedDevices(&out)
        } else {
            guard registry.update(d), let device = registry[d.id] else { return }
            publishInfo(d.id, &out)
            publishBridgeEvent("device_updated", device, now: now, &out)
        }
        membershipDeviceChanged(d.id, now: now, &out)
        bridgeTopicsChanged(now: now, &out)
        publishDiscovery(d.id, &out)
    }

    /// A removed device (excluded or forgotten) has its retained topics and discovery configs cleared.
    mutating func deviceRemoved(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        if groups.isDynamic(id) {
            dynamicGroupRemoved(id, now: now, &out)
            return
        }
        guard registry[id] != nil else { return }
        failAllWork(id, BridgeError(.unknownDevice, "the device was removed"), now: now, &out)
        guard let device = registry.remove(id) else { return }
        groups.setReconnecting(id, false, now: now)
        publisher.forget(id, topic: device.topic, discovery: discoveryTopics(device), topics: topics, &out)
        out.forgotten.append(id)
        publishBridgeEvent("device_removed", device, now: now, &out)
        membershipDeviceChanged(id, now: now, &out)
        bridgeTopicsChanged(now: now, &out)
    }

    private mutating func publishBridgeEvent(_ type: String, _ d: DeviceRecord, now: Date, _ out: inout BridgeOutput) {
        publishBridgeEvent(["type": .string(type), "id": .string(d.id), "name": .string(d.descriptor.friendlyName),
                            "topic": .string(d.topic)], now: now, &out)
    }

    /// A snapshot from the device's Cast client: kept, and what it changed is acted on.
    mutating func snapshotArrived(_ id: DeviceID, _ snapshot: DeviceSnapshot, now: Date, _ out: inout BridgeOutput) {
        if groups.isDynamic(id) {
            dynamicSnapshotArrived(id, snapshot, now: now, &out)
            return
        }
        guard let change = registry.apply(snapshot, to: id, now: now), let device = registry[id] else { return }
        switch change.link {
        case .cameOnline(let downtime)?:
            publishAvailability(id, &out)
            if let downtime {
                publishDeviceEvent(id, ["type": .string("reconnected"), "downtime": .number((downtime * 1000).rounded() / 1000)],
                                   now: now, &out)
            } else {
                publishDeviceEvent(id, ["type": .string("connected")], now: now, &out)
            }
            releaseHeld(device: device.topic, now: now, &out)
            groupLinkChanged(id, online: true, now: now)
            bridgeTopicsChanged(now: now, &out)
        case .wentOffline(let reason)?:
            groupLinkChanged(id, online: false, now: now)
            failAllWork(id, BridgeError(.deviceOffline, "the connection to the device was lost (\(reason))"), now: now, &out)
            publishAvailability(id, &out)
            publishDeviceEvent(id, ["type": .string("disconnected"), "reason": .string(reason)], now: now, &out)
            bridgeTopicsChanged(now: now, &out)
        case nil:
            break
        }
        if change.sessionChanged {
            if change.oldMedia != nil, change.newMedia == nil { transfers.sessionEnded(change, now: now) }
            sessionEvents(change, now: now, &out)
            out.sessionsChanged = true
        } else if change.mediaChanged, change.oldMedia != nil, change.newMedia == nil {
            // The app's transport closed: its media session is over.
            transfers.sessionEnded(change, now: now)
        }
        if change.mediaChanged {
            mediaEvents(change, now: now, &out)
            apply(announcements.observe(change, device: device, now: now), now: now, &out)
            // The track selects' options follow the media's languages (before the media document).
            if TrackOptions(change.oldMedia) != TrackOptions(change.newMedia) { publishDiscovery(id, &out) }
        }
        publishDeviceState(id, now: now, &out)
        // A group's members (and what they show) follow its snapshot.
        if isGroup(id) || groups.membersOf[id] != nil { groupChanged(id, now: now, &out) }
    }

    // MARK: - Retained device documents

    mutating func publishAvailability(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        publisher.publishText(topics.availability(device.topic), device.online ? "online" : "offline", &out)
    }

    /// Every retained topic of a device (change-only).
    mutating func publishDevice(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        publishAvailability(id, &out)
        publisher.publish(topics.info(device.topic), infoDocument(device), &out)
        publishDeviceState(id, now: now, &out)
    }

    /// receiver, media and state documents (change-only; `updated_at` is not content).
    mutating func publishDeviceState(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        publisher.publish(topics.receiver(device.topic), Documents.receiverDocument(device.receiver),
                          stamp: device.receiverUpdatedAt ?? now, &out)
        // Its own media and state, or its group's while it shows its group's playback (Groups/).
        publishMediaAndState(device, now: now, &out)
    }

    /// With `media.position_interval` > 0: republish `media` with an estimated position while playing.
    mutating func republishPositions(now: Date, _ out: inout BridgeOutput) {
        let interval = configuration.media.positionInterval
        guard interval > 0 else { return }
        for id in registry.ids {
            // A member showing its group's playback republishes the group's position.
            guard let device = registry[id], device.online, case let source = shownMedia(device).source,
                  source.media?.playerState == "PLAYING",
                  publisher.positionDue(id, since: source.snapshot.positionAt, interval: interval, now: now) else { continue }
            let doc = shownMedia(device, position: source.position(at: now), positionAt: now).doc
            publisher.publish(topics.media(device.topic), doc, stamp: now, force: true, &out)
        }
    }
}
