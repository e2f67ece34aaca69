import Settings

/// The `discovery:` section of the configuration, as the configuration model has it (one type:
/// the daemon hands its section over as it is).
public typealias DiscoveryConfiguration = BridgeConfiguration.Discovery

extension BridgeConfiguration.Discovery {
    /// A section with the given fields (the others at their defaults).
    public init(
        mdns: Bool = true,
        interfaces: [String] = [],
        preferIPv6: Bool = false,
        devices: [StaticDevice] = [],
        include: [String] = [],
        exclude: [String] = []
    ) {
        self.init()
        self.mdns = mdns
        self.interfaces = interfaces
        self.preferIPv6 = preferIPv6
        self.devices = devices
        self.include = include
        self.exclude = exclude
    }

    /// The include/exclude rule of this section.
    public var filter: DeviceFilter { DeviceFilter(include: include, exclude: exclude) }
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
