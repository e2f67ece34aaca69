import CastProtocol
import NIOCore

/// Runs async operations one at a time, in the order they arrive.
actor SerialAsyncQueue {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        while busy { await withCheckedContinuation { waiting.append($0) } }
        busy = true
        defer {
            busy = false
            if !waiting.isEmpty { waiting.removeFirst().resume() }
        }
        return try await body()
    }
}

/// The services to announce and the observer of changes (`CastSimulator.announcements`).
struct AnnouncementRegistry: Sendable {
    var services: [String: ServiceAnnouncement] = [:]
    var handler: (@Sendable ([ServiceAnnouncement]) -> Void)?

    var sorted: [ServiceAnnouncement] { services.values.sorted { $0.key < $1.key } }
}

// Speaker groups: a group's endpoint is a device of the simulator (it is in `devices`, so every
// device route and fault applies to it) that is hosted at its leader's address.
extension CastSimulator {
    /// The group endpoints, in the order they were added.
    public var groups: [SimulatedDevice] { devices.filter(\.isGroup) }

    /// Starts a group of existing devices (named by id or name): its endpoint listens at the
    /// leader's address on the group's port, and every member learns it is in the group.
    @discardableResult
    public func addGroup(_ configuration: SimulatedGroupConfiguration) async throws -> SimulatedDevice {
        try await groupOperations.run {
            guard self.device(id: configuration.id) == nil else {
                throw SimulatorError("a device or group with id \(configuration.id) already exists")
            }
            var members: [SimulatedDevice] = []
            for key in configuration.members {
                guard let member = self.device(idOrName: key), !member.isGroup else {
                    throw SimulatorError("group \(configuration.name): no device \(key)")
                }
                guard !members.contains(where: { $0 === member }) else {
                    throw SimulatorError("group \(configuration.name): \(key) is listed twice")
                }
                members.append(member)
            }
            guard let first = members.first else { throw SimulatorError("group \(configuration.name) has no members") }
            let leader = try configuration.leader.map { key -> SimulatedDevice in
                guard let leader = self.device(idOrName: key), members.contains(where: { $0 === leader }) else {
                    throw SimulatorError("group \(configuration.name): leader \(key) is not a member")
                }
                return leader
            } ?? first
            var volumes: [StreamVolume] = []
            for member in members { volumes.append(try await member.currentVolume()) }
            var normalized = configuration
            normalized.members = members.map(\.id)
            normalized.leader = leader.id
            let state = GroupState(configuration: normalized,
                                   members: zip(members, volumes).map { GroupMember(device: $0, volume: $1) },
                                   leaderID: leader.id)
            let hosting = leader.configuration
            let endpointConfiguration = SimulatedDeviceConfiguration(
                name: configuration.name, id: configuration.id, host: leader.host, port: configuration.port,
                castType: .group, launchLatency: hosting.launchLatency, stopLatency: hosting.stopLatency,
                replyLatency: hosting.replyLatency, heartbeatInterval: hosting.heartbeatInterval, idleScreen: false,
                supportedMediaCommands: hosting.supportedMediaCommands, clock: hosting.clock,
                tickInterval: hosting.tickInterval)
            let endpoint = try SimulatedDevice(configuration: endpointConfiguration, eventLoop: self.group.next(),
                                               logger: self.logger, group: state)
            try await endpoint.start()
            self.deviceList.withLock { $0.append(endpoint) }
            let summary = try await endpoint.eventLoop.submit { () throws -> SimulatedGroupSummary in
                guard let group = endpoint.loop.value.group else { throw SimulatorError("group state lost") }
                endpoint.pushMemberships(group)
                return endpoint.groupSummary(group)
            }.get()
            self.announce(self.groupAnnouncement(endpoint, summary))
            self.logger.info("group \(configuration.name) at \(endpoint.host):\(endpoint.port), led by \(leader.name)")
            return endpoint
        }
    }

    /// Ends a group (a dynamic group's end, or a static group deleted in the app): its members
    /// forget it, its endpoint closes, its mDNS announcement goes.
    public func removeGroup(id: String) async throws {
        try await groupOperations.run {
            let endpoint = try self.groupEndpoint(id)
            try await endpoint.eventLoop.submit {
                for member in endpoint.loop.value.group?.members ?? [] {
                    let device = member.device
                    device.eventLoop.execute { device.setMembership(endpoint.id, nil) }
                }
            }.get()
            await endpoint.shutdown()
            self.deviceList.withLock { $0.removeAll { $0 === endpoint } }
            self.withdraw(key: endpoint.id)
        }
    }

    /// Moves a group's leader to `memberID` (default: the member after the current leader): the
    /// endpoint closes and listens again at the new leader's address (see
    /// `SimulatedDevice.moveGroupEndpoint`), announced under a new instance name.
    @discardableResult
    public func moveLeader(ofGroup id: String, to memberID: String? = nil, port: Int? = nil) async throws
        -> SimulatedGroupSummary
    {
        try await groupOperations.run { try await self.moveLeaderNow(self.groupEndpoint(id), to: memberID, port: port) }
    }

    /// A device joins a group: DEVICE_ADDED on the group, the device shows the group's playback.
    public func addMember(_ memberID: String, toGroup id: String) async throws {
        try await groupOperations.run {
            let endpoint = try self.groupEndpoint(id)
            guard let member = self.device(idOrName: memberID), !member.isGroup else {
                throw SimulatorError("no device \(memberID)")
            }
            let volume = try await member.currentVolume()
            try await endpoint.eventLoop.submit { try endpoint.addGroupMember(member, volume: volume) }.get()
        }
    }

    /// A member leaves a group: DEVICE_REMOVED on the group. When the leader leaves, the leader
    /// moves to the next member first (the group endpoint moves), as on a real network.
    public func removeMember(_ memberID: String, fromGroup id: String) async throws {
        try await groupOperations.run {
            let endpoint = try self.groupEndpoint(id)
            guard let member = self.device(idOrName: memberID) else { throw SimulatorError("no device \(memberID)") }
            let summary = try await endpoint.groupSummary()
            if summary.leader == member.id {
                guard summary.members.count > 1 else {
                    throw SimulatorError("\(member.name) is the only member of \(summary.name): remove the group")
                }
                try await self.moveLeaderNow(endpoint, to: nil, port: nil)
            }
            try await endpoint.eventLoop.submit { try endpoint.removeGroupMember(member.id) }.get()
        }
    }

    /// Every group as `GET /groups` shows it.
    public func groupSummaries() async -> [SimulatedGroupSummary] {
        var summaries: [SimulatedGroupSummary] = []
        for endpoint in groups {
            if let summary = try? await endpoint.groupSummary() { summaries.append(summary) }
        }
        return summaries
    }

    // MARK: - mDNS announcements

    /// Calls `handler` now with every service to announce, and again with the whole list after
    /// every change (a device added, a group added, moved or removed), one call at a time.
    public func onAnnouncementsChanged(_ handler: @escaping @Sendable ([ServiceAnnouncement]) -> Void) {
        announcements.withLock { registry in
            registry.handler = handler
            handler(registry.sorted)
        }
    }

    /// What should be announced over mDNS now.
    public var serviceAnnouncements: [ServiceAnnouncement] { announcements.withLock { $0.sorted } }

    func announce(_ service: ServiceAnnouncement) {
        announcements.withLock { registry in
            guard registry.services[service.key] != service else { return }
            registry.services[service.key] = service
            registry.handler?(registry.sorted)
        }
    }

    func withdraw(key: String) {
        announcements.withLock { registry in
            guard registry.services.removeValue(forKey: key) != nil else { return }
            registry.handler?(registry.sorted)
        }
    }

    /// A device's service, named like a real one (model with dashes, then the id).
    func deviceAnnouncement(_ device: SimulatedDevice) -> ServiceAnnouncement {
        let configuration = device.configuration
        let instance = configuration.model.replacingOccurrences(of: " ", with: "-") + "-" + device.id
        let hostName = configuration.mdnsHostName
        return ServiceAnnouncement(key: device.id, instanceName: String(instance.prefix(63)), port: device.port,
                                   txt: configuration.txtRecord, hostName: hostName,
                                   address: hostName == nil ? nil : device.host)
    }

    /// A group's service: at its leader's host name and address, on the group's port.
    func groupAnnouncement(_ endpoint: SimulatedDevice, _ summary: SimulatedGroupSummary) -> ServiceAnnouncement {
        let hostName = device(id: summary.leader)?.configuration.mdnsHostName
        return ServiceAnnouncement(key: endpoint.id, instanceName: summary.instanceName, port: summary.port,
                                   txt: endpoint.configuration.txtRecord, hostName: hostName,
                                   address: hostName == nil ? nil : summary.host)
    }

    // MARK: - Helpers

    func groupEndpoint(_ id: String) throws -> SimulatedDevice {
        guard let endpoint = device(id: id), endpoint.isGroup else { throw SimulatorError("no group \(id)") }
        return endpoint
    }

    /// Moves the leader (inside a group operation).
    @discardableResult
    func moveLeaderNow(_ endpoint: SimulatedDevice, to memberID: String?, port: Int?) async throws
        -> SimulatedGroupSummary
    {
        let current = try await endpoint.groupSummary()
        let targetID: String
        if let memberID {
            guard let target = device(idOrName: memberID) else { throw SimulatorError("no device \(memberID)") }
            targetID = target.id
        } else {
            guard current.members.count > 1, let index = current.members.firstIndex(of: current.leader) else {
                throw SimulatorError("group \(current.name) has no other member to lead it")
            }
            targetID = current.members[(index + 1) % current.members.count]
        }
        guard let target = device(id: targetID) else { throw SimulatorError("no device \(targetID)") }
        try await endpoint.eventLoop.flatSubmit { endpoint.moveGroupEndpoint(to: target, port: port) }.get()
        let summary = try await endpoint.groupSummary()
        announce(groupAnnouncement(endpoint, summary))
        return summary
    }
}

extension SimulatedDevice {
    /// The group this endpoint serves, as `GET /groups` shows it.
    func groupSummary(_ group: GroupState) -> SimulatedGroupSummary {
        SimulatedGroupSummary(
            id: id, name: name, host: host, port: port, leader: group.leaderID, members: group.members.map(\.device.id),
            multichannel: group.configuration.multichannel, dynamic: group.configuration.dynamic,
            instanceName: group.configuration.instanceName(afterMoves: group.moves))
    }

    public func groupSummary() async throws -> SimulatedGroupSummary {
        try await eventLoop.submit { () throws -> SimulatedGroupSummary in
            guard let group = self.loop.value.group else { throw SimulatorError("\(self.id) is not a group") }
            return self.groupSummary(group)
        }.get()
    }
}
