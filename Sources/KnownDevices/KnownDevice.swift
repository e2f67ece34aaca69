import Bridge
import Discovery

// The device table of `DeviceFacts`: its entries and what the daemon reads and writes of them.

/// One device in the daemon's table (`DeviceFacts`): what discovery and `eureka_info` told of
/// it, what the rules decided, and its Cast client.
public struct KnownDevice<Client> {
    /// The record as discovery last gave it (or as found through `eureka_info`); nil while the
    /// device is gone.
    public internal(set) var record: CastDeviceRecord?
    /// Waiting for its host's answer before anyone else hears of it.
    public internal(set) var held = false
    /// Passed on at least once: never held again.
    public internal(set) var settled = false
    /// What its host's `eureka_info` taught.
    public internal(set) var facts: DeviceFacts<Client>.Facts?
    /// A dynamic (temporary) group: followed for its members, no device of its own.
    public internal(set) var isDynamicGroup = false
    /// The static entry it came from (its descriptor's `configuredID`).
    public internal(set) var configuredID: DeviceID?
    /// The connection generation a static device was last asked for.
    var askedForGeneration: Int?
    /// A static group looking for its leader: the hosts asked so far.
    var searching: Set<String>?
    /// The daemon's Cast client of the device (set by the fleet).
    public internal(set) var client: Client?

    init() {}
}

extension DeviceFacts {
    /// Every device's record as discovery last gave it (or as found through `eureka_info`).
    public func record(_ id: DeviceID) -> CastDeviceRecord? { devices[id]?.record }

    /// The entry of a device (nil: never named).
    public func entry(_ id: DeviceID) -> KnownDevice<Client>? { devices[id] }

    /// The device's Cast client, when it has one.
    public func client(_ id: DeviceID) -> Client? { devices[id]?.client }

    /// Gives the device its client (nil: none any more); returns the one it had.
    @discardableResult
    public mutating func setClient(_ client: Client?, for id: DeviceID) -> Client? {
        if client == nil, devices[id]?.client == nil { return nil }
        let old = devices[id, default: KnownDevice()].client
        devices[id, default: KnownDevice()].client = client
        return old
    }

    /// Every client, handed over (shutdown); the entries keep no client.
    public mutating func takeClients() -> [Client] {
        var clients: [Client] = []
        for id in devices.keys {
            if let client = devices[id]?.client {
                clients.append(client)
                devices[id]?.client = nil
            }
        }
        return clients
    }

    /// Static groups looking for their leader: the hosts asked so far.
    public var searching: [DeviceID: Set<String>] {
        var out: [DeviceID: Set<String>] = [:]
        for id in searchingIDs { out[id] = devices[id]?.searching }
        return out
    }

    /// True while a static group looks for its leader.
    public var isSearching: Bool { !searchingIDs.isEmpty }
}

/// What `DeviceFacts` asks the daemon to do.
public enum FactsAction: Equatable, Sendable {
    /// Read `eureka_info` of a host (the answer comes back as `DeviceFacts.answered`).
    case fetch(host: String)
    /// Hand a discovery event to the fleet (which starts or moves the device's client) and what
    /// it makes of it to the bridge, with the descriptor's `isDynamicGroup` and `configuredID`.
    case discovery(DiscoveryEvent, dynamic: Bool, configuredID: DeviceID?)
    /// A dynamic group dissolved: the bridge forgets it (and closes its client).
    case removeDynamic(DeviceID)
    /// The device's client follows its multizone status from now on.
    case becomeGroup(DeviceID)
    /// One line for the operator (`debug`: for the debug log only).
    case log(String, debug: Bool = false)
}
