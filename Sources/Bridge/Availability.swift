import CastProtocol
import Foundation

/// Device lifecycle: discovery add/update/remove, Cast connect/disconnect, availability.
/// A device is `online` only after it answered on the current connection: the client reports
/// `castConnected` once the receiver platform answered, and the RECEIVER_STATUS it answered with
/// (the next event) turns availability online.
extension BridgeCore {
    mutating func deviceSeen(_ d: DeviceDescriptor, now: Date, _ out: inout BridgeOutput) {
        // include/exclude is Discovery's: a device that reaches the core is admitted.
        if var existing = devices[d.id] {
            guard existing.descriptor != d else { return }
            existing.descriptor = d
            devices[d.id] = existing
            publishRetained(topics.info(existing.topic), MediaProjection.infoDocument(d, topic: existing.topic), &out)
            publishBridgeEvent(["type": .string("device_updated"), "id": .string(d.id), "name": .string(d.friendlyName),
                                "topic": .string(existing.topic)], now: now, &out)
            bridgeTopicsChanged(now: now, &out)
            publishDiscovery(d.id, &out)
            return
        }
        let topic = names.assign(id: d.id, friendlyName: d.friendlyName, override: d.topicOverride)
        devices[d.id] = DeviceState(descriptor: d, topic: topic)
        out.logs.append("device \(d.friendlyName) (\(d.id)) is \(topic)")
        publishDevice(d.id, now: now, &out)
        publishBridgeEvent(["type": .string("device_added"), "id": .string(d.id), "name": .string(d.friendlyName),
                            "topic": .string(topic)], now: now, &out)
        bridgeTopicsChanged(now: now, &out)
        publishDiscovery(d.id, &out)
    }

    /// A removed device (excluded or forgotten) has its retained topics and discovery configs cleared.
    mutating func deviceRemoved(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard devices[id] != nil else { return }
        failAllWork(id, BridgeError(.unknownDevice, "the device was removed"), now: now, &out)
        guard let device = devices.removeValue(forKey: id) else { return }
        forgetPublished(id, topic: device.topic, discovery: discoveryTopics(device), &out)
        out.forgotten.append(id)
        publishBridgeEvent(["type": .string("device_removed"), "id": .string(id), "name": .string(device.descriptor.friendlyName),
                            "topic": .string(device.topic)], now: now, &out)
        bridgeTopicsChanged(now: now, &out)
    }

    mutating func castConnected(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard devices[id] != nil else { return }
        devices[id]?.connected = true
    }

    mutating func castDisconnected(_ id: DeviceID, reason: String, now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        let wasOnline = device.online
        devices[id]?.connected = false
        devices[id]?.online = false
        if wasOnline { devices[id]?.offlineSince = now }
        failAllWork(id, BridgeError(.deviceOffline, "the connection to the device was lost (\(reason))"), now: now, &out)
        if wasOnline {
            publishAvailability(id, &out)
            publishDeviceEvent(id, ["type": .string("disconnected"), "reason": .string(reason)], now: now, &out)
            bridgeTopicsChanged(now: now, &out)
        }
    }

    /// Called for every RECEIVER_STATUS: the first one on a connection makes the device online.
    mutating func markAnswered(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id], device.connected, !device.online else { return }
        devices[id]?.online = true
        publishAvailability(id, &out)
        if device.everOnline {
            let downtime = device.offlineSince.map { max(0, now.timeIntervalSince($0)) } ?? 0
            publishDeviceEvent(id, ["type": .string("reconnected"), "downtime": .number((downtime * 1000).rounded() / 1000)],
                               now: now, &out)
        } else {
            publishDeviceEvent(id, ["type": .string("connected")], now: now, &out)
        }
        devices[id]?.everOnline = true
        devices[id]?.offlineSince = nil
        releaseHeld(device: device.topic, now: now, &out)
        bridgeTopicsChanged(now: now, &out)
    }

    mutating func publishAvailability(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        publishRetainedText(topics.availability(device.topic), device.online ? "online" : "offline", &out)
    }

    /// Every retained topic of a device (change-only).
    mutating func publishDevice(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        publishAvailability(id, &out)
        publishRetained(topics.info(device.topic), MediaProjection.infoDocument(device.descriptor, topic: device.topic), &out)
        publishDeviceState(id, now: now, &out)
    }

    /// receiver, media and state documents (change-only; `updated_at` is not content).
    mutating func publishDeviceState(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        publishRetained(topics.receiver(device.topic), MediaProjection.receiverDocument(device.receiver),
                        stamp: device.receiverUpdatedAt ?? now, &out)
        // A position that only follows from the last published one keeps that one (same content).
        let media: JSONValue
        let drift = Self.positionOnlyDrift(device)
        if drift, let last = device.publishedPlayback {
            media = MediaProjection.mediaDocument(device, position: last.position, positionAt: last.at)
        } else {
            media = MediaProjection.mediaDocument(device)
        }
        let hasSession = device.media != nil
        let before = out.publications.count
        publishRetained(topics.media(device.topic), media, stamp: hasSession ? (device.mediaUpdatedAt ?? now) : nil, &out)
        if out.publications.count > before, !drift {
            let playing = device.media?.playerState == "PLAYING"
            devices[id]?.publishedPlayback = playing ? device.media?.currentTime.flatMap { position in
                device.positionUpdatedAt.map { (position, $0, device.media?.playbackRate ?? 1) }
            } : nil
        }
        publishRetainedText(topics.state(device.topic), device.stateWord, &out)
    }

    /// True when the device is still playing and its reported position is where the last
    /// published one would be by now (within half a second): a reply and a broadcast of the same
    /// status, sent a few milliseconds apart, then make one publication instead of two.
    static func positionOnlyDrift(_ device: DeviceState) -> Bool {
        guard let last = device.publishedPlayback, device.media?.playerState == "PLAYING",
              let position = device.media?.currentTime, let at = device.positionUpdatedAt,
              (device.media?.playbackRate ?? 1) == last.rate else { return false }
        let expected = last.position + at.timeIntervalSince(last.at) * last.rate
        return abs(expected - position) < 0.5
    }

    /// With `media.position_interval` > 0: republish `media` with an estimated position while playing.
    mutating func republishPositions(now: Date, _ out: inout BridgeOutput) {
        let interval = configuration.media.positionInterval
        guard interval > 0 else { return }
        for id in devices.keys.sorted() {
            guard let device = devices[id], device.online, device.media?.playerState == "PLAYING" else { continue }
            if let last = device.lastPositionPublish ?? device.positionUpdatedAt, now.timeIntervalSince(last) < interval { continue }
            let doc = MediaProjection.mediaDocument(device, position: device.estimatedPosition(now: now), positionAt: now)
            devices[id]?.lastPositionPublish = now
            publishRetained(topics.media(device.topic), doc, stamp: now, force: true, &out)
        }
    }
}
