import CastProtocol
import Foundation

/// Speaker groups as a part (mqtt-api.md §4): a group's `members` topic, a member's groups in its
/// `info`, members that show what their group plays (`playing_in`), dynamic groups, and the
/// commands a member hands to its group's session (decided in `CommandPlanner.actsOnGroup`).
///
/// The directory reads the devices through a read-only `DeviceRegistry` and answers a change with
/// `GroupEffect`s — what to republish (change-only), what to log, whose work fails — which the
/// core carries out. A group's members are read from its snapshot (the multizone status its
/// client follows), so they change within the message that changed them.
enum GroupEffect: Sendable, Equatable {
    /// Republish a static group's `members` document.
    case members(DeviceID)
    /// Republish a device's `info` (its groups, or a group's `multichannel`).
    case info(DeviceID)
    /// Republish what a device shows (`receiver`, `media`, `state`).
    case state(DeviceID)
    /// Fail the running and waiting work of a (dynamic) group.
    case failWork(DeviceID, BridgeError)
    /// A dynamic group was forgotten: its client is closed.
    case forgotten(DeviceID)
    case log(String)
}

extension GroupDirectory {
    // MARK: - Lookups

    /// A device, or a dynamic group (which commands routed to it are planned against).
    func record(_ id: DeviceID, in registry: DeviceRegistry) -> DeviceRecord? { registry[id] ?? dynamicGroups[id] }

    /// A static group (a device) or a dynamic one.
    func isGroup(_ id: DeviceID, in registry: DeviceRegistry) -> Bool {
        registry[id]?.descriptor.castType == .group || isDynamic(id)
    }

    /// Whether a change of the device concerns the groups (it is a group, or a member of one).
    func follows(_ id: DeviceID, in registry: DeviceRegistry) -> Bool { isGroup(id, in: registry) || membersOf[id] != nil }

    /// The group whose playback a device shows, and what its `playing_in` says (the group's topic
    /// name, or a dynamic group's name): an online device with no active media session of its
    /// own, while one of its groups has one (static groups first, by topic name, then dynamic
    /// ones, by name) and the device runs no app of its own (`followsGroup`). The group must be
    /// online — or a static group reconnecting (`reconnectHold`: a moved leader does not make its
    /// members flicker).
    func mirroredGroup(_ id: DeviceID, in registry: DeviceRegistry) -> (group: DeviceRecord, playingIn: String)? {
        guard let device = registry[id], device.descriptor.castType != .group, device.online,
              device.media?.isActive != true, groupsOf[id] != nil else { return nil }
        let candidates = groups(of: id).compactMap { gid -> (dynamic: Bool, label: String, record: DeviceRecord)? in
            if let group = registry[gid] { return (false, group.topic, group) }
            if let group = dynamicGroups[gid] { return (true, group.descriptor.friendlyName, group) }
            return nil
        }.sorted { ($0.dynamic ? 1 : 0, $0.label, $0.record.id) < ($1.dynamic ? 1 : 0, $1.label, $1.record.id) }
        for candidate in candidates where candidate.record.online || isReconnecting(candidate.record.id) {
            guard candidate.record.media?.isActive == true, Self.followsGroup(device.activeApp, candidate.record.activeApp)
            else { continue }
            return (candidate.record, candidate.label)
        }
        return nil
    }

    /// The app ids a member shows while it plays its group's stream (older firmware; newer
    /// firmware shows the group's own app, or none).
    static let multizoneFollowerApps: Set<String> = ["MultizoneLeader", "MultizoneFollower"]

    /// Whether a member's own running app (`own`, idle screen excluded) is its group's playback
    /// rather than an app of its own: none, a multizone follower app, or the group's own app.
    /// A member that launched another app (a custom receiver with no media session) plays
    /// that, not its group.
    static func followsGroup(_ own: ReceiverApplication?, _ group: ReceiverApplication?) -> Bool {
        guard let own else { return true }
        if multizoneFollowerApps.contains(own.appId) { return true }
        return own.appId == group?.appId
    }

    // MARK: - Documents

    /// `info`: a group says whether it is a stereo pair (`multichannel`), any other device which
    /// static groups it is in (`groups`, by topic name; dynamic groups are no devices and are
    /// left out).
    func infoDocument(_ device: DeviceRecord, in registry: DeviceRegistry) -> JSONValue {
        var doc = Documents.infoDocument(device.descriptor, topic: device.topic)
        for (key, value) in Documents.authenticationFields(device.snapshot) { doc = doc.adding(key, value) }
        if device.descriptor.castType == .group {
            return doc.adding("multichannel", .bool(device.snapshot.multizone?.isMultichannel ?? false))
        }
        let memberships = groups(of: device.id).compactMap { registry[$0] }.sorted { $0.topic < $1.topic }
        return doc.adding("groups", .array(memberships.map { .object(["id": .string($0.id), "topic": .string($0.topic)]) }))
    }

    /// `<group>/members`: each member's id, name, topic (null when the bridge does not know it),
    /// volume and mute, in the group's order.
    func membersDocument(_ group: DeviceRecord, in registry: DeviceRegistry) -> JSONValue {
        var seen = Set<DeviceID>()
        return .array((group.snapshot.multizone?.members ?? []).compactMap { member in
            let id = Self.memberID(member.deviceId)
            guard seen.insert(id).inserted else { return nil }
            let known = registry[id]
            return .object([
                "id": .string(id), "name": .str(member.name ?? known?.descriptor.friendlyName), "topic": .str(known?.topic),
                "volume": .num(member.volume?.level.map { ($0 * 1000).rounded() / 1000 }), "muted": .flag(member.volume?.muted),
            ])
        })
    }

    /// The `media` document a device shows now (its own, or its group's with `playing_in`) and
    /// the record it was taken from.
    func shownMedia(_ device: DeviceRecord, in registry: DeviceRegistry, position: Double? = nil,
                    positionAt: Date? = nil) -> (doc: JSONValue, source: DeviceRecord) {
        guard let (group, playingIn) = mirroredGroup(device.id, in: registry) else {
            return (Documents.mediaDocument(device, position: position, positionAt: positionAt), device)
        }
        let doc = Documents.mediaDocument(group, position: position, positionAt: positionAt)
        return (doc.adding("playing_in", .string(playingIn)), group)
    }

    // MARK: - Changes

    /// A static group went offline or came back: while it reconnects its members keep showing
    /// its playback (bounded by `reconnectHold`).
    mutating func linkChanged(_ gid: DeviceID, online: Bool, in registry: DeviceRegistry, now: Date) {
        guard registry[gid]?.descriptor.castType == .group else { return }
        setReconnecting(gid, !online, now: now)
    }

    /// Static groups that did not come back within `reconnectHold`: their members show their
    /// own state.
    mutating func expireHolds(now: Date, in registry: DeviceRegistry) -> [GroupEffect] {
        var effects: [GroupEffect] = []
        for gid in expireReconnecting(now: now) {
            let shown = members(of: gid).filter { registry[$0] != nil }
            if !shown.isEmpty {
                effects.append(.log("group \(registry.topicName(gid)) did not come back within \(Int(Self.reconnectHold)) s: its members show their own state"))
            }
            effects += shown.sorted().map(GroupEffect.state)
        }
        return effects
    }

    /// A group's snapshot or description changed (or a device stopped being a group): its
    /// members are read again, and its `members`, its `info`, the `info` of members that joined
    /// or left and what every member shows are republished.
    mutating func groupChanged(_ gid: DeviceID, in registry: DeviceRegistry) -> [GroupEffect] {
        // A group that is gone (removed) has no members any more.
        let changed = setMembers(of: gid, isGroup(gid, in: registry) ? record(gid, in: registry)?.snapshot.multizone : nil)
        var effects: [GroupEffect] = []
        if let device = registry[gid] {
            if device.descriptor.castType == .group { effects.append(.members(gid)) }
            effects.append(.info(gid))
        }
        if !changed.isEmpty {
            let current = Set(members(of: gid))
            let joined = changed.filter(current.contains).map { registry.topicName($0) }.sorted()
            let left = changed.filter { !current.contains($0) }.map { registry.topicName($0) }.sorted()
            let label = dynamicGroups[gid]?.descriptor.friendlyName ?? registry.topicName(gid)
            effects.append(.log("group \(label): " + [joined.isEmpty ? nil : "joined \(joined.joined(separator: ", "))",
                                                     left.isEmpty ? nil : "left \(left.joined(separator: ", "))"]
                .compactMap { $0 }.joined(separator: "; ")))
            effects += changed.sorted().map(GroupEffect.info)
        }
        effects += Set(members(of: gid)).union(changed).sorted().filter { registry[$0] != nil }.map(GroupEffect.state)
        return effects
    }

    /// A device was added, renamed or removed: the `members` of the groups it is in name it (or
    /// no longer do); a group that is added or changed kind is followed anew.
    mutating func deviceChanged(_ id: DeviceID, in registry: DeviceRegistry) -> [GroupEffect] {
        var effects = groups(of: id).filter { registry[$0]?.descriptor.castType == .group }.map(GroupEffect.members)
        if follows(id, in: registry) { effects += groupChanged(id, in: registry) }
        return effects
    }

    /// A dynamic group was found: followed for its members, no device.
    mutating func dynamicGroupSeen(_ d: DeviceDescriptor, in registry: DeviceRegistry) -> [GroupEffect] {
        let new = dynamicSeen(d)
        return (new ? [.log("dynamic group \(d.friendlyName) (\(d.id)): followed for its members, not a device")] : [])
            + groupChanged(d.id, in: registry)
    }

    /// A dynamic group's client reported: kept; when it went offline, what waited for it fails.
    mutating func dynamicSnapshotArrived(_ id: DeviceID, _ snapshot: DeviceSnapshot, in registry: DeviceRegistry,
                                         now: Date) -> [GroupEffect] {
        guard let wentOffline = applyDynamic(snapshot, to: id, now: now) else { return [] }
        var effects: [GroupEffect] = []
        if wentOffline, let name = dynamicGroups[id]?.descriptor.friendlyName {
            effects.append(.failWork(id, BridgeError(.deviceOffline, "the connection to the dynamic group \(name) was lost")))
        }
        return effects + groupChanged(id, in: registry)
    }

    /// A dynamic group dissolved: forgotten (its client is closed), its members show their own state.
    mutating func dynamicGroupRemoved(_ id: DeviceID, in registry: DeviceRegistry) -> [GroupEffect] {
        guard let name = dynamicGroups[id]?.descriptor.friendlyName else { return [] }
        // Its work fails first (while it is still known), then it is forgotten.
        var effects: [GroupEffect] = [.failWork(id, BridgeError(.deviceOffline, "the dynamic group \(name) ended"))]
        let former = removeDynamic(id)
        effects += [.forgotten(id), .log("dynamic group \(name) (\(id)) ended")]
        return effects + former.sorted().filter { registry[$0] != nil }.map(GroupEffect.state)
    }
}

extension JSONValue {
    /// An object with `key` set to `value` (other values are returned as they are).
    func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var o) = self else { return self }
        o[key] = value
        return .object(o)
    }
}
