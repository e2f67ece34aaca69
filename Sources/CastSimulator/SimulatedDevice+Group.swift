import CastProtocol
import NIOCore

// A group's endpoint: the multizone namespace, the group volume (the members' volumes), members
// that follow the group's playback, membership changes. Everything here runs on the group's
// event loop; what concerns a member is handed to the member's loop (`execute`), as a message
// between two devices would be.
extension SimulatedDevice {
    /// True when this device is a group's endpoint (created by `CastSimulator.addGroup`).
    var isGroupEndpoint: Bool { loop.value.group != nil }

    /// The group volume: the loudest member's level; muted when every member is.
    func groupVolume(_ group: GroupState) -> ReceiverVolume {
        let levels = group.members.compactMap(\.volume.level)
        let muted = !group.members.isEmpty && group.members.allSatisfy { $0.volume.muted == true }
        return ReceiverVolume(controlType: "master", level: levels.max() ?? 0, muted: muted,
                              stepInterval: configuration.volumeStepInterval)
    }

    func multizoneStatus(requestId: Int, _ group: GroupState) -> MultizoneMessage {
        .status(requestId: requestId, devices: group.members.map(\.multizoneDevice),
                isMultichannel: group.configuration.multichannel, playbackSession: nil)
    }

    func broadcastMultizone(_ message: MultizoneMessage) {
        broadcast(from: CastEndpoint.receiver, namespace: CastNamespace.multizone, json: message.json())
    }

    /// SET_VOLUME on the group: a level scales every member by the same factor (the loudest
    /// member gets exactly the level; from silence, all get it); `muted` applies to every
    /// member. Members are told, and DEVICE_UPDATED goes out for each one that changed.
    func applyGroupVolume(level: Double?, muted: Bool?) {
        guard var group = loop.value.group else { return }
        var changed: [Int] = []
        if let level, level.isFinite {
            let target = min(max(level, 0), 1)
            let loudest = group.members.compactMap(\.volume.level).max() ?? 0
            for index in group.members.indices {
                let old = group.members[index].volume.level ?? 0
                let new = (loudest <= 0 || old == loudest) ? target : old * target / loudest
                if new != old {
                    group.members[index].volume.level = new
                    changed.append(index)
                }
            }
        }
        if let muted {
            for index in group.members.indices where group.members[index].volume.muted != muted {
                group.members[index].volume.muted = muted
                if !changed.contains(index) { changed.append(index) }
            }
        }
        loop.value.group = group
        for index in changed.sorted() {
            let member = group.members[index]
            broadcastMultizone(.deviceUpdated(member.multizoneDevice))
            let device = member.device
            let volume = member.volume
            device.eventLoop.execute { device.applyVolumeFromGroup(volume) }
        }
    }

    /// A member's volume changed (its own SET_VOLUME, a remote, or the group): DEVICE_UPDATED,
    /// and the group's RECEIVER_STATUS when the group volume changed with it.
    func memberVolumeChanged(_ memberID: String, _ volume: StreamVolume) {
        guard var group = loop.value.group, let index = group.index(of: memberID),
              group.members[index].volume != volume
        else { return }
        let before = groupVolume(group)
        group.members[index].volume = volume
        loop.value.group = group
        broadcastMultizone(.deviceUpdated(group.members[index].multizoneDevice))
        if groupVolume(group) != before { broadcastReceiverStatus() }
    }

    /// The group's app started or stopped: members show it (no media of their own) or go back
    /// to idle.
    func groupAppChanged() {
        guard let group = loop.value.group else { return }
        let groupID = id
        let running = app.flatMap { $0.kind == .backdrop ? nil : $0.appId }
        for member in group.members {
            let device = member.device
            device.eventLoop.execute {
                if let running { device.followGroup(groupID, appId: running) } else { device.unfollowGroup(groupID) }
            }
        }
    }

    /// The membership every member keeps of this group (leader, address, port).
    func membership(_ group: GroupState) -> Membership {
        Membership(group: self, name: name, dynamic: group.configuration.dynamic, leaderID: group.leaderID,
                   leaderHost: host, castPort: port)
    }

    /// Tells every member (and `extra` devices that just left, with nil) what they are in.
    func pushMemberships(_ group: GroupState, removed: [SimulatedDevice] = []) {
        let info = membership(group)
        let groupID = id
        let running = app.flatMap { $0.kind == .backdrop ? nil : $0.appId }
        for member in group.members {
            let device = member.device
            device.eventLoop.execute {
                device.setMembership(groupID, info)
                if let running { device.followGroup(groupID, appId: running) }
            }
        }
        for device in removed {
            device.eventLoop.execute { device.setMembership(groupID, nil) }
        }
    }

    // MARK: - Membership changes (public through CastSimulator)

    /// Adds `device` with its current `volume`: DEVICE_ADDED, and the member learns it is in.
    func addGroupMember(_ device: SimulatedDevice, volume: StreamVolume) throws {
        guard var group = loop.value.group else { throw SimulatorError("\(id) is not a group") }
        guard group.index(of: device.id) == nil else { throw SimulatorError("\(device.id) is already in \(name)") }
        let before = groupVolume(group)
        group.members.append(GroupMember(device: device, volume: volume))
        group.configuration.members.append(device.id)
        loop.value.group = group
        broadcastMultizone(.deviceAdded(group.members[group.members.count - 1].multizoneDevice))
        if groupVolume(group) != before { broadcastReceiverStatus() }
        pushMemberships(group)
    }

    /// Removes a member (not the leader: move the leader first): DEVICE_REMOVED, the member
    /// forgets the group and stops showing its playback.
    func removeGroupMember(_ memberID: String) throws {
        guard var group = loop.value.group else { throw SimulatorError("\(id) is not a group") }
        guard let index = group.index(of: memberID) else { throw SimulatorError("\(memberID) is not in \(name)") }
        guard memberID != group.leaderID else { throw SimulatorError("\(memberID) leads \(name): move the leader first") }
        let before = groupVolume(group)
        let removed = group.members.remove(at: index)
        group.configuration.members.removeAll { $0 == memberID }
        loop.value.group = group
        broadcastMultizone(.deviceRemoved(deviceId: SimulatedDeviceConfiguration.dashedID(memberID)))
        if groupVolume(group) != before { broadcastReceiverStatus() }
        pushMemberships(group, removed: [removed.device])
    }

    /// Moves the endpoint to `leader`'s address (a leader election): every connection and the
    /// listener close, the group's session goes on (senders join it again), and it listens again
    /// at the new leader's address, on `requestedPort`, else its old port when the address
    /// changed (as real groups do), else (one shared address) a free port, so the move shows.
    func moveGroupEndpoint(to leader: SimulatedDevice, port requestedPort: Int?) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        guard let group = loop.value.group, group.index(of: leader.id) != nil, leader.id != group.leaderID else {
            return eventLoop.makeFailedFuture(SimulatorError("\(leader.id) is not another member of \(name)"))
        }
        let old = addressBox.withLock { $0 }
        let newHost = leader.host
        let port = requestedPort ?? (newHost == old.host ? 0 : old.port)
        // The group's session lives on at the new leader (its app and media are kept; the members
        // keep following it): only the endpoint moves, so every connection to it is closed.
        return closeEverything().flatMap { () -> EventLoopFuture<Void> in
            self.addressBox.withLock { $0 = BoundAddress(host: newHost, port: port) }
            return self.bindListeners().flatMapError { error in
                guard port != 0, requestedPort == nil else { return self.eventLoop.makeFailedFuture(error) }
                self.logger.notice("port \(port) is taken at \(newHost) (\(error)); the group takes a free one")
                self.addressBox.withLock { $0 = BoundAddress(host: newHost, port: 0) }
                return self.bindListeners()
            }
        }.map {
            self.loop.value.group?.leaderID = leader.id
            self.loop.value.group?.moves += 1
            if let moved = self.loop.value.group { self.pushMemberships(moved) }
            self.logger.info("group \(self.name) moved to its leader \(leader.name) at \(self.host):\(self.port)")
        }
    }
}
