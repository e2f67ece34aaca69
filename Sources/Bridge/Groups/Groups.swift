import CastProtocol
import Foundation

/// Speaker groups in the router (mqtt-api.md §4): a group's `members` topic, a member's groups in
/// its `info`, members that show what their group plays (`playing_in`), dynamic groups, and the
/// commands a member hands to its group's session (decided in `CommandPlanner.actsOnGroup`).
///
/// A group's members are read from its snapshot (the multizone status its client follows), so
/// they change within the message that changed them; everything derived from them (the group's
/// `members`, the members' `info` and `media`/`state`) is republished change-only right then.
extension BridgeCore {
    // MARK: - Lookups

    /// A device, or a dynamic group (which commands routed to it are planned against).
    func record(_ id: DeviceID) -> DeviceRecord? { registry[id] ?? groups.dynamicGroups[id] }

    /// A static group (a device) or a dynamic one.
    func isGroup(_ id: DeviceID) -> Bool { registry[id]?.descriptor.castType == .group || groups.isDynamic(id) }

    /// The group whose playback a device shows, and what its `playing_in` says (the group's topic
    /// name, or a dynamic group's name): an online device with no active media session of its
    /// own, while one of its groups has one (static groups first, by topic name, then dynamic
    /// ones, by name) and the device runs no app of its own (`followsGroup`). The group must be
    /// online — or a static group reconnecting (`GroupDirectory.reconnectHold`: a moved leader
    /// does not make its members flicker).
    func mirroredGroup(_ id: DeviceID) -> (group: DeviceRecord, playingIn: String)? {
        guard let device = registry[id], device.descriptor.castType != .group, device.online,
              device.media?.isActive != true, groups.groupsOf[id] != nil else { return nil }
        let candidates = groups.groups(of: id).compactMap { gid -> (dynamic: Bool, label: String, record: DeviceRecord)? in
            if let group = registry[gid] { return (false, group.topic, group) }
            if let group = groups.dynamicGroups[gid] { return (true, group.descriptor.friendlyName, group) }
            return nil
        }.sorted { ($0.dynamic ? 1 : 0, $0.label, $0.record.id) < ($1.dynamic ? 1 : 0, $1.label, $1.record.id) }
        for candidate in candidates where candidate.record.online || groups.isReconnecting(candidate.record.id) {
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
    func infoDocument(_ device: DeviceRecord) -> JSONValue {
        let doc = Documents.infoDocument(device.descriptor, topic: device.topic)
        if device.descriptor.castType == .group {
            return doc.adding("multichannel", .bool(device.snapshot.multizone?.isMultichannel ?? false))
        }
        let memberships = groups.groups(of: device.id).compactMap { registry[$0] }.sorted { $0.topic < $1.topic }
        return doc.adding("groups", .array(memberships.map { .object(["id": .string($0.id), "topic": .string($0.topic)]) }))
    }

    /// `<group>/members`: each member's id, name, topic (null when the bridge does not know it),
    /// volume and mute, in the group's order.
    func membersDocument(_ group: DeviceRecord) -> JSONValue {
        var seen = Set<DeviceID>()
        return .array((group.snapshot.multizone?.members ?? []).compactMap { member in
            let id = GroupDirectory.memberID(member.deviceId)
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
    func shownMedia(_ device: DeviceRecord, position: Double? = nil, positionAt: Date? = nil) -> (doc: JSONValue, source: DeviceRecord) {
        guard let (group, playingIn) = mirroredGroup(device.id) else {
            return (Documents.mediaDocument(device, position: position, positionAt: positionAt), device)
        }
        let doc = Documents.mediaDocument(group, position: position, positionAt: positionAt)
        return (doc.adding("playing_in", .string(playingIn)), group)
    }

    /// `media` and `state` of a device (change-only): its group's while it shows its group's playback.
    mutating func publishMediaAndState(_ device: DeviceRecord, now: Date, _ out: inout BridgeOutput) {
        let (doc, source) = shownMedia(device)
        publisher.publish(topics.media(device.topic), doc, stamp: source.media != nil ? (source.mediaUpdatedAt ?? now) : nil, &out)
        publisher.publishText(topics.state(device.topic), source.stateWord, &out)
    }

    mutating func publishInfo(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard let device = registry[id] else { return }
        publisher.publish(topics.info(device.topic), infoDocument(device), &out)
    }

    // MARK: - Changes

    /// A static group went offline or came back: while it reconnects its members keep showing
    /// its playback (bounded by `GroupDirectory.reconnectHold`).
    mutating func groupLinkChanged(_ gid: DeviceID, online: Bool, now: Date) {
        guard registry[gid]?.descriptor.castType == .group else { return }
        groups.setReconnecting(gid, !online, now: now)
    }

    /// Static groups that did not come back within `GroupDirectory.reconnectHold`: their members
    /// show their own state (change-only).
    mutating func expireGroupHolds(now: Date, _ out: inout BridgeOutput) {
        for gid in groups.expireReconnecting(now: now) {
            let shown = groups.members(of: gid).filter { registry[$0] != nil }
            if !shown.isEmpty {
                out.logs.append("group \(registry.topicName(gid)) did not come back within \(Int(GroupDirectory.reconnectHold)) s: its members show their own state")
            }
            for member in shown.sorted() { publishDeviceState(member, now: now, &out) }
        }
    }

    /// A group's snapshot or description changed (or a device stopped being a group): its
    /// members are read again, and its `members`, its `info`, the `info` of members that joined
    /// or left and what every member shows are republished (change-only).
    mutating func groupChanged(_ gid: DeviceID, now: Date, _ out: inout BridgeOutput) {
        // A group that is gone (removed) has no members any more.
        let changed = groups.setMembers(of: gid, isGroup(gid) ? record(gid)?.snapshot.multizone : nil)
        if let device = registry[gid] {
            if device.descriptor.castType == .group {
                publisher.publish(topics.device(device.topic, "members"), membersDocument(device), &out)
            }
            publishInfo(gid, &out)
        }
        if !changed.isEmpty {
            let current = Set(groups.members(of: gid))
            let joined = changed.filter(current.contains).map { registry.topicName($0) }.sorted()
            let left = changed.filter { !current.contains($0) }.map { registry.topicName($0) }.sorted()
            let label = groups.dynamicGroups[gid]?.descriptor.friendlyName ?? registry.topicName(gid)
            out.logs.append("group \(label): " + [joined.isEmpty ? nil : "joined \(joined.joined(separator: ", "))",
                                                   left.isEmpty ? nil : "left \(left.joined(separator: ", "))"]
                .compactMap { $0 }.joined(separator: "; "))
            for member in changed.sorted() { publishInfo(member, &out) }
        }
        for member in Set(groups.members(of: gid)).union(changed).sorted() where registry[member] != nil {
            publishDeviceState(member, now: now, &out)
        }
    }

    /// A device was added, renamed or removed: the `members` of the groups it is in name it (or
    /// no longer do); a group that is added or changed kind is followed anew.
    mutating func membershipDeviceChanged(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        for gid in groups.groups(of: id) {
            guard let group = registry[gid], group.descriptor.castType == .group else { continue }
            publisher.publish(topics.device(group.topic, "members"), membersDocument(group), &out)
        }
        if isGroup(id) || groups.membersOf[id] != nil { groupChanged(id, now: now, &out) }
    }

    /// A dynamic group was found: followed for its members, no device.
    mutating func dynamicGroupSeen(_ d: DeviceDescriptor, now: Date, _ out: inout BridgeOutput) {
        if groups.dynamicSeen(d) {
            out.logs.append("dynamic group \(d.friendlyName) (\(d.id)): followed for its members, not a device")
        }
        groupChanged(d.id, now: now, &out)
    }

    /// A dynamic group's client reported: kept; when it went offline, what waited for it fails.
    mutating func dynamicSnapshotArrived(_ id: DeviceID, _ snapshot: DeviceSnapshot, now: Date, _ out: inout BridgeOutput) {
        guard let wentOffline = groups.applyDynamic(snapshot, to: id, now: now) else { return }
        if wentOffline, let name = groups.dynamicGroups[id]?.descriptor.friendlyName {
            failAllWork(id, BridgeError(.deviceOffline, "the connection to the dynamic group \(name) was lost"), now: now, &out)
        }
        groupChanged(id, now: now, &out)
    }

    /// A dynamic group dissolved: forgotten (its client is closed), its members show their own state.
    mutating func dynamicGroupRemoved(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let name = groups.dynamicGroups[id]?.descriptor.friendlyName else { return }
        failAllWork(id, BridgeError(.deviceOffline, "the dynamic group \(name) ended"), now: now, &out)
        let former = groups.removeDynamic(id)
        out.forgotten.append(id)
        out.logs.append("dynamic group \(name) (\(id)) ended")
        for member in former.sorted() where registry[member] != nil { publishDeviceState(member, now: now, &out) }
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
