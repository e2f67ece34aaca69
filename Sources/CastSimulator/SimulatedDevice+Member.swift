import CastProtocol
import NIOCore

// A device as a member of groups: what it shows while a group plays, its volume as the groups
// see it, and its `eureka_info`. Runs on the member's event loop.
extension SimulatedDevice {
    /// The port real devices name in `elected_leader` ("ip:port") when another member leads: not
    /// the group's Cast port (pychromecast notes that port is of no use; ask the leader's own
    /// `eureka_info` for `cast_port`).
    public static let multizonePort = 10001

    /// Joins (or updates) or, with nil, leaves a group.
    func setMembership(_ groupID: String, _ membership: Membership?) {
        guard !shutDown else { return }
        if let membership {
            loop.value.memberships[groupID] = membership
        } else {
            loop.value.memberships[groupID] = nil
            unfollowGroup(groupID)
        }
    }

    /// The group started an app: the member interrupts what it played on its own and shows the
    /// group's app, with no media of its own (media GET_STATUS answers `status: []`).
    func followGroup(_ groupID: String, appId: String) {
        guard !shutDown, loop.value.memberships[groupID] != nil else { return }
        if loop.value.followedGroup == groupID, app?.appId == appId { return }
        stopApp(mediaIdleReason: "INTERRUPTED")
        if let following = RunningApp.make(appId: appId) {
            app = following
            media = nil
        }
        loop.value.followedGroup = groupID
        later(replyDelay) { self.broadcastReceiverStatus() }
    }

    /// The group stopped (or the member left it): the member's shown app closes, idle again.
    func unfollowGroup(_ groupID: String) {
        guard loop.value.followedGroup == groupID else { return }
        loop.value.followedGroup = nil
        stopApp(mediaIdleReason: nil)
        later(replyDelay) { self.broadcastReceiverStatus() }
    }

    /// The group changed this member's volume: apply it as the device's own, tell the senders.
    func applyVolumeFromGroup(_ groupVolume: StreamVolume) {
        guard !shutDown else { return }
        applyVolume(level: groupVolume.level, muted: groupVolume.muted)
        later(replyDelay) { self.broadcastReceiverStatus() }
    }

    /// Tells every group this device is in what its volume is now.
    func notifyGroupsOfVolume() {
        let current = StreamVolume(level: volume.level, muted: volume.muted)
        let memberID = id
        for membership in loop.value.memberships.values {
            let group = membership.group
            group.eventLoop.execute { group.memberVolumeChanged(memberID, current) }
        }
    }

    /// The device volume as a group sees it.
    func currentVolume() async throws -> StreamVolume {
        try await eventLoop.submit { StreamVolume(level: self.volume.level, muted: self.volume.muted) }.get()
    }

    // MARK: - eureka_info

    /// `GET /setup/eureka_info?params=...`: the sections named in `params` (`name`,
    /// `device_info`, `multizone`, `ssdp_udn`, `ip_address`; others are ignored); without
    /// `params`, `name`, `ssdp_udn` and `ip_address`.
    func eurekaInfo(params: [String]?) -> JSONValue {
        let udn = SimulatedDeviceConfiguration.dashedID(id)
        let capabilities: JSONValue = .object([
            "display_supported": .bool(configuration.castType == .video),
            "multizone_supported": .bool(configuration.castType != .group),
        ])
        let deviceInfo: JSONValue = .object([
            "name": .string(name), "model_name": .string(configuration.model),
            "manufacturer": .string(configuration.manufacturer), "ssdp_udn": .string(udn),
            "capabilities": capabilities,
        ])
        var groups: [JSONValue] = []
        var dynamicGroups: [JSONValue] = []
        for (groupID, membership) in loop.value.memberships.sorted(by: { $0.key < $1.key }) {
            var entry: [String: JSONValue] = [
                "name": .string(membership.name), "uuid": .string(SimulatedDeviceConfiguration.dashedID(groupID)),
            ]
            if membership.leaderID == id {
                entry["elected_leader"] = .string("self")
                // Real devices leave the port out for dynamic groups (pychromecast, 2021).
                if !membership.dynamic { entry["cast_port"] = .number(Double(membership.castPort)) }
            } else {
                let leaderHost = membership.leaderHost.contains(":") ? "[\(membership.leaderHost)]" : membership.leaderHost
                entry["elected_leader"] = .string("\(leaderHost):\(Self.multizonePort)")
            }
            if membership.dynamic { dynamicGroups.append(.object(entry)) } else { groups.append(.object(entry)) }
        }
        let sections: [String: JSONValue] = [
            "name": .string(name), "device_info": deviceInfo, "ssdp_udn": .string(udn), "ip_address": .string(host),
            "multizone": .object(["groups": .array(groups), "dynamic_groups": .array(dynamicGroups)]),
        ]
        let wanted = Set(params ?? ["name", "ssdp_udn", "ip_address"])
        return .object(sections.filter { wanted.contains($0.key) })
    }
}
