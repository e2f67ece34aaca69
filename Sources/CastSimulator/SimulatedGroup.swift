import CastProtocol
import NIOCore

/// A speaker group served by the simulator: a Cast endpoint of its own (a full receiver) on its
/// own port, hosted at its leader member's address, with the multizone namespace.
public struct SimulatedGroupConfiguration: Sendable, Hashable {
    /// Friendly name (`fn`).
    public var name: String
    /// The group's UUID as 32 lower-case hex digits (announced dashed, as real groups do).
    public var id: String
    /// Ids of the member devices, in order. A device can be in several groups.
    public var members: [String]
    /// The member that hosts the group; nil = the first member.
    public var leader: String?
    /// The group's Cast port at its leader's address; 0 picks a free one.
    public var port: Int
    /// A stereo pair: MULTIZONE_STATUS says `isMultichannel: true`.
    public var multichannel: Bool
    /// A dynamic (temporary) group: listed in its members' `eureka_info` `dynamic_groups` (not
    /// `groups`), an endpoint only while it exists.
    public var dynamic: Bool

    public init(name: String, id: String? = nil, members: [String], leader: String? = nil, port: Int = 0,
                multichannel: Bool = false, dynamic: Bool = false) {
        self.name = name
        self.id = id.flatMap(SimulatedDeviceConfiguration.normalizedID)
            ?? SimulatedDeviceConfiguration.deviceID(forName: "group:" + name)
        self.members = members
        self.leader = leader
        self.port = port
        self.multichannel = multichannel
        self.dynamic = dynamic
    }

    /// The DNS-SD instance name of a group after `moves` leader moves: `Google-Cast-Group-<id>`,
    /// then with `-1`, `-2`, … appended (a group that comes back after its leader changed may
    /// carry a new instance name, and the bridge must still know it by its id).
    public func instanceName(afterMoves moves: Int) -> String {
        let base = "Google-Cast-Group-" + id
        return moves > 0 ? base + "-\(moves)" : base
    }
}

/// One member as its group's endpoint knows it (kept on the group's event loop).
struct GroupMember: Sendable {
    let device: SimulatedDevice
    /// The member's volume as last reported by the member (or set by the group).
    var volume: StreamVolume

    var multizoneDevice: MultizoneDevice {
        MultizoneDevice(deviceId: SimulatedDeviceConfiguration.dashedID(device.id), name: device.name,
                        capabilities: device.configuration.castType.capabilities, volume: volume)
    }
}

/// What a group's endpoint keeps (in its `DeviceLoopState`).
struct GroupState: Sendable {
    var configuration: SimulatedGroupConfiguration
    var members: [GroupMember]
    var leaderID: String
    /// Leader moves so far (the instance name's suffix).
    var moves = 0

    func index(of memberID: String) -> Int? { members.firstIndex { $0.device.id == memberID } }
}

/// A group as one of its members knows it (in the member's `DeviceLoopState`), for the
/// member's `eureka_info` and for telling the group about volume changes.
struct Membership: Sendable {
    let group: SimulatedDevice
    var name: String
    var dynamic: Bool
    var leaderID: String
    /// The leader's address and the group's Cast port there.
    var leaderHost: String
    var castPort: Int
}

/// A service the simulator wants announced over mDNS (`_googlecast._tcp`), as a real device or
/// group announces itself. `cast-sim --mdns` hands these to the avahi publisher.
public struct ServiceAnnouncement: Sendable, Hashable, Codable {
    /// The device or group id this announcement is for.
    public var key: String
    public var instanceName: String
    public var port: Int
    public var txt: [String: String]
    /// The SRV target, with an address record of its own (`<dashed id>.local` of the device, of
    /// the leader for a group); nil = the avahi host itself (shared-address devices).
    public var hostName: String?
    /// The address of `hostName`.
    public var address: String?

    public init(key: String, instanceName: String, port: Int, txt: [String: String], hostName: String?,
                address: String?) {
        self.key = key
        self.instanceName = instanceName
        self.port = port
        self.txt = txt
        self.hostName = hostName
        self.address = address
    }
}

/// A JSON-friendly view of a group (`GET /groups`, cast-sim's start-up lines).
public struct SimulatedGroupSummary: Sendable, Codable, Hashable {
    public var id: String
    public var name: String
    public var host: String
    public var port: Int
    public var leader: String
    public var members: [String]
    public var multichannel: Bool
    public var dynamic: Bool
    public var instanceName: String
}
