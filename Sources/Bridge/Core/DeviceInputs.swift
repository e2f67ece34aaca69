import CastProtocol
import Foundation

/// The router's device inputs: discovery adds, updates and removes devices (registry), a Cast
/// client's snapshot is kept as it comes (registry), and what it changed goes to the parts that
/// react — events (DeviceEvents), the scheduler (a device that went offline has its work
/// answered), the jobs, the groups, the retained documents — whose answers are carried out here
/// and in Effects.swift.
extension BridgeCore {
    mutating func deviceSeen(_ d: DeviceDescriptor, now: Date, _ out: inout BridgeOutput) {
        // A dynamic speaker group is followed for its members but is no device (Groups/).
        if d.isDynamicGroup, registry[d.id] == nil {
            apply(groups.dynamicGroupSeen(d, in: registry), now: now, &out)
            return
        }
        // include/exclude is Discovery's: a device that reaches the core is admitted.
        if let added = registry.add(d) {
            out.logs.append("device \(d.friendlyName) (\(d.id)) is \(added.topic)")
            // The certificate an earlier run saw authenticated (state_dir), for `certificate_changed`.
            if let certificate = publisher.rememberedCertificate(d.id) { registry.authenticated(d.id, certificate: certificate) }
            publishDevice(d.id, now: now, &out)
            publishBridgeEvent(DeviceEvents.deviceListEvent("device_added", added), now: now, &out)
            // Devices `log.devices` names that just became known.
            if !logging.devices.isEmpty { setLogLevels(logging, &out) }
            keepDeviceKnown(d.id, now: now, &out)
        } else {
            guard registry.update(d), let device = registry[d.id] else { return }
            publishInfo(d.id, &out)
            publishBridgeEvent(DeviceEvents.deviceListEvent("device_updated", device), now: now, &out)
        }
        apply(groups.deviceChanged(d.id, in: registry), now: now, &out)
        bridgeTopicsChanged(now: now, &out)
        publishDiscovery(d.id, &out)
    }

    /// A removed device (excluded or forgotten) has its retained topics and discovery configs cleared.
    mutating func deviceRemoved(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        if groups.isDynamic(id) {
            apply(groups.dynamicGroupRemoved(id, in: registry), now: now, &out)
            return
        }
        guard registry[id] != nil else { return }
        failAllWork(id, BridgeError(.unknownDevice, "the device was removed"), now: now, &out)
        if let device = registry[id] {
            for leaf in PublishedSnapshot.retainedKeepLeaves where publisher.keepsPayload(topics.device(device.topic, leaf)) == true {
                publisher.clear(topics.device(device.topic, leaf), &out)
            }
        }
        keeps.forget(id)
        guard let device = registry.remove(id) else { return }
        groups.setReconnecting(id, false, now: now)
        publisher.forget(id, topic: device.topic, discovery: homeAssistant.configTopics(device, keep: true), topics: topics, &out)
        out.forgotten.append(id)
        publishBridgeEvent(DeviceEvents.deviceListEvent("device_removed", device), now: now, &out)
        apply(groups.deviceChanged(id, in: registry), now: now, &out)
        bridgeTopicsChanged(now: now, &out)
    }

    /// A snapshot from the device's Cast client: kept, and what it changed is acted on.
    mutating func snapshotArrived(_ id: DeviceID, _ snapshot: DeviceSnapshot, now: Date, _ out: inout BridgeOutput) {
        if groups.isDynamic(id) {
            apply(groups.dynamicSnapshotArrived(id, snapshot, in: registry, now: now), now: now, &out)
            return
        }
        guard let change = registry.apply(snapshot, to: id, now: now), let device = registry[id] else { return }
        // Device authentication (Devices/DeviceAuthentication.swift).
        let auth = DeviceAuthChange(change, device: device)
        if auth.infoChanged { publishInfo(id, &out) }
        for event in auth.events { publishDeviceEvent(id, event, now: now, &out) }
        if auth.refused { bridgeTopicsChanged(now: now, &out) }
        if let log = auth.log { out.logs.append(log) }
        if let certificate = auth.authenticatedCertificate {
            registry.authenticated(id, certificate: certificate)
            publisher.rememberCertificate(id, certificate, &out)
        }
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
            groups.linkChanged(id, online: true, in: registry, now: now)
            bridgeTopicsChanged(now: now, &out)
        case .wentOffline(let reason)?:
            groups.linkChanged(id, online: false, in: registry, now: now)
            failAllWork(id, BridgeError(.deviceOffline, "the connection to the device was lost (\(reason))"), now: now, &out)
            publishAvailability(id, &out)
            publishDeviceEvent(id, ["type": .string("disconnected"), "reason": .string(reason)], now: now, &out)
            bridgeTopicsChanged(now: now, &out)
        case nil:
            break
        }
        if change.sessionChanged {
            if change.oldMedia != nil, change.newMedia == nil { transfers.sessionEnded(change, now: now) }
            let restored = change.oldApp == nil && change.newApp.map { sessions.consumeRestored(id, $0) } == true
            for event in DeviceEvents.session(change, restored: restored) { publishDeviceEvent(id, event, now: now, &out) }
            out.sessionsChanged = true
        } else if change.mediaChanged, change.oldMedia != nil, change.newMedia == nil {
            // The app's transport closed: its media session is over.
            transfers.sessionEnded(change, now: now)
        }
        if let failure = change.joinFailed {
            publishDeviceEvent(id, ["type": .string("error"), "message": .string(failure)], now: now, &out)
            out.logs.append("\(device.topic): \(failure)")
        }
        if change.mediaChanged {
            mediaChanged(change, now: now, &out)
            apply(announcements.observe(change, device: device, now: now), now: now, &out)
            // The track selects' options follow the media's languages (before the media document).
            if TrackOptions(change.oldMedia) != TrackOptions(change.newMedia) { publishDiscovery(id, &out) }
        }
        publishDeviceState(id, now: now, &out)
        keepAfterSnapshot(change, now: now, &out)
        // A group's members (and what they show) follow its snapshot.
        if groups.follows(id, in: registry) { apply(groups.groupChanged(id, in: registry), now: now, &out) }
    }

    /// The media events of a change, and what the transfer observer learns from it.
    private mutating func mediaChanged(_ change: DeviceChange, now: Date, _ out: inout BridgeOutput) {
        let id = change.id
        let media = DeviceEvents.media(change)
        if let loaded = media.loaded {
            loads.contentStarted(id)
            publishDeviceEvent(id, loaded, now: now, &out)
        }
        if let contentId = media.loadedContent,
           let seen = transfers.mediaStarted(on: id, contentId: contentId, position: registry[id]?.position(at: now), now: now),
           registry[seen.from] != nil {
            apply([.transferred(from: seen.from, to: id, contentId: contentId, position: seen.position)], now: now, &out)
        }
        if let ended = media.ended {
            // One failed load is one report: its IDLE / ERROR status adds no `error` event.
            let explained = ended["type"] == .string("error")
                && loads.explainsError(id, contentId: change.newMedia?.effectiveMedia?.contentId, now: now)
            if !explained { publishDeviceEvent(id, ended, now: now, &out) }
        }
        if let (contentId, position) = media.interrupted {
            transfers.recordCandidate(id, contentId: contentId, position: position, now: now)
        }
    }

    /// Messages from the running app on non-platform namespaces are published (not retained)
    /// on `<base>/<dev>/message/<namespace>` (`TopicGrammar.message`).
    mutating func appMessage(_ id: DeviceID, namespace: String, payload: CastPayload, now: Date, _ out: inout BridgeOutput) {
        guard let device = registry[id], !CastNamespace.isPlatform(namespace) else { return }
        guard namespace.hasPrefix(CastNamespace.prefix), namespace.utf8.count <= 256 else {
            out.debugLogs.append("\(device.topic): dropping a message on a namespace that is not urn:x-cast:… or over 256 bytes")
            return
        }
        out.publish(Publication(topic: topics.message(device.topic, namespace: TopicGrammar.topicLevel(namespace)),
                                payload: payload.bytes, retain: false))
        keepAppMessage(id, namespace: namespace, payload: payload, now: now, &out)
    }
}
