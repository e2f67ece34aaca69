import CastProtocol
import Foundation

/// Speaker groups as the bridge follows them: who is in which group (from each group's newest
/// multizone status, kept in its snapshot), and the dynamic groups, which are followed but are
/// no devices. Owns that state; the router asks it and tells it what arrived.
///
/// A static group is a device of the registry (`cast_type` group); its members are derived from
/// its snapshot each time that changes. A dynamic (temporary) group lives here only: its record
/// (descriptor, snapshot) is never published, listed or given Home Assistant entities.
struct GroupDirectory: Sendable {
    /// Dynamic groups by id. `topic` of such a record is its name (it has no topic of its own).
    private(set) var dynamicGroups: [DeviceID: DeviceRecord] = [:]
    /// Group → its members' ids (normalised, in the group's order, no duplicates).
    private(set) var membersOf: [DeviceID: [DeviceID]] = [:]
    /// Member → the groups it is in.
    private(set) var groupsOf: [DeviceID: Set<DeviceID>] = [:]

    /// A member id as the registry keys devices: a UUID (dashed or not, any case) becomes 32
    /// lower-case hex digits; anything else is kept lower-cased (it matches no device).
    static func memberID(_ raw: String) -> DeviceID {
        let lower = raw.lowercased()
        let hex = lower.filter { $0 != "-" }
        let isUUID = hex.utf8.count == 32 && hex.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        return isUUID ? hex : lower
    }

    func isDynamic(_ id: DeviceID) -> Bool { dynamicGroups[id] != nil }

    func members(of group: DeviceID) -> [DeviceID] { membersOf[group] ?? [] }

    /// The groups a device is in, in a stable order.
    func groups(of member: DeviceID) -> [DeviceID] { (groupsOf[member] ?? []).sorted() }

    /// Sets a group's members from its multizone state; returns the devices that joined or left.
    mutating func setMembers(of group: DeviceID, _ multizone: MultizoneState?) -> Set<DeviceID> {
        var seen = Set<DeviceID>()
        let members = (multizone?.members ?? []).map { Self.memberID($0.deviceId) }.filter { seen.insert($0).inserted }
        return setMembers(of: group, members)
    }

    mutating func setMembers(of group: DeviceID, _ members: [DeviceID]) -> Set<DeviceID> {
        let old = membersOf[group] ?? []
        membersOf[group] = members.isEmpty ? nil : members
        let before = Set(old), after = Set(members)
        for gone in before.subtracting(after) {
            groupsOf[gone]?.remove(group)
            if groupsOf[gone]?.isEmpty == true { groupsOf[gone] = nil }
        }
        for joined in after.subtracting(before) { groupsOf[joined, default: []].insert(group) }
        return before.symmetricDifference(after)
    }

    // MARK: - Dynamic groups

    /// A dynamic group was found (or described anew); true when it is new.
    @discardableResult
    mutating func dynamicSeen(_ d: DeviceDescriptor) -> Bool {
        if dynamicGroups[d.id] != nil {
            dynamicGroups[d.id]?.descriptor = d
            return false
        }
        dynamicGroups[d.id] = DeviceRecord(descriptor: d, topic: d.friendlyName)
        return true
    }

    /// Keeps a dynamic group's snapshot (an older connection's is ignored). Returns whether its
    /// link went offline with this one (nil: not a dynamic group, or stale).
    mutating func applyDynamic(_ snapshot: DeviceSnapshot, to id: DeviceID, now: Date) -> Bool? {
        guard var record = dynamicGroups[id], snapshot.generation >= record.snapshot.generation else { return nil }
        let wentOffline = record.snapshot.isOnline && !snapshot.isOnline
        if record.snapshot.media != snapshot.media { record.mediaUpdatedAt = now }
        if record.snapshot.receiver != snapshot.receiver { record.receiverUpdatedAt = now }
        record.snapshot = snapshot
        dynamicGroups[id] = record
        return wentOffline
    }

    /// Forgets a dynamic group (it dissolved); returns its former members.
    mutating func removeDynamic(_ id: DeviceID) -> Set<DeviceID> {
        guard dynamicGroups.removeValue(forKey: id) != nil else { return [] }
        return setMembers(of: id, [])
    }

    // MARK: - Static groups that are reconnecting

    /// How long the members of a static group that went offline keep showing its playback:
    /// a group whose leader moves is offline until the bridge finds it at the new leader and
    /// connects again (one round of the leader search, which asks again every 30 s), though it
    /// never stopped playing. Past this its members show their own state.
    static let reconnectHold: TimeInterval = 30

    /// Static groups offline for less than `reconnectHold`: group → when the hold ends.
    private(set) var reconnecting: [DeviceID: Date] = [:]

    func isReconnecting(_ group: DeviceID) -> Bool { reconnecting[group] != nil }

    /// A static group went offline (`true`) or came back or was removed (`false`).
    mutating func setReconnecting(_ group: DeviceID, _ offline: Bool, now: Date) {
        reconnecting[group] = offline ? now.addingTimeInterval(Self.reconnectHold) : nil
    }

    /// The groups whose hold ended by `now` (no longer held).
    mutating func expireReconnecting(now: Date) -> [DeviceID] {
        let ended = reconnecting.filter { $0.value <= now }.keys.sorted()
        for id in ended { reconnecting[id] = nil }
        return ended
    }
}
