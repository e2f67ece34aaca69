/// The `discovery:` section of the configuration.
public struct DiscoveryConfiguration: Sendable, Equatable {
    /// Browse `_googlecast._tcp` with avahi. Off: static devices only.
    public var mdns: Bool
    /// Interface names to browse on (e.g. `["eth0"]`); empty = all interfaces.
    public var interfaces: [String]
    /// When a device is seen over both IPv4 and IPv6, connect over IPv6.
    public var preferIPv6: Bool
    /// Devices from the configuration, merged with mDNS by id.
    public var staticDevices: [StaticDevice]
    /// Friendly names (case-insensitive) or ids; empty = every device.
    public var include: [String]
    /// Friendly names (case-insensitive) or ids; wins over `include`.
    public var exclude: [String]

    public init(
        mdns: Bool = true,
        interfaces: [String] = [],
        preferIPv6: Bool = false,
        staticDevices: [StaticDevice] = [],
        include: [String] = [],
        exclude: [String] = []
    ) {
        self.mdns = mdns
        self.interfaces = interfaces
        self.preferIPv6 = preferIPv6
        self.staticDevices = staticDevices
        self.include = include
        self.exclude = exclude
    }
}

/// The include/exclude rule — its only implementation; the daemon hands it to the bridge core
/// for devices a previous run published: an entry matches a device when it equals its friendly
/// name (case-insensitive) or its id (dashes and case ignored). Exclude wins; an empty include
/// list includes everything.
public struct DeviceFilter: Sendable, Equatable {
    private let includeNames: Set<String>
    private let includeIDs: Set<String>
    private let excludeNames: Set<String>
    private let excludeIDs: Set<String>
    private let includeAll: Bool

    public init(include: [String], exclude: [String]) {
        includeAll = include.isEmpty
        includeNames = Set(include.map { $0.lowercased() })
        includeIDs = Set(include.compactMap(TXTRecordParser.normalizeID))
        excludeNames = Set(exclude.map { $0.lowercased() })
        excludeIDs = Set(exclude.compactMap(TXTRecordParser.normalizeID))
    }

    public func allows(_ record: CastDeviceRecord) -> Bool {
        allows(id: record.id, friendlyName: record.friendlyName)
    }

    /// The rule for a device known by id and name only (e.g. remembered from an earlier run).
    public func allows(id: String, friendlyName: String) -> Bool {
        let name = friendlyName.lowercased()
        let id = TXTRecordParser.normalizeID(id) ?? id.lowercased()
        if excludeNames.contains(name) || excludeIDs.contains(id) { return false }
        return includeAll || includeNames.contains(name) || includeIDs.contains(id)
    }
}
