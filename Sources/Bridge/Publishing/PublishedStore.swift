import CastProtocol
import Foundation

/// What the bridge has published retained for each device, for `state_dir/published.json`: so
/// that a device that is gone after a restart (excluded in the configuration, or a static device
/// dropped from it while mDNS is off) has its discovery configs and retained device topics
/// cleared even though this run never saw it, and Home Assistant drops its entities.
///
/// The I/O side hands the saved snapshot to `restorePublished(_:staticIDs:)` right after
/// creating the core and writes `publishedSnapshot` whenever `BridgeOutput.publishedChanged`.
public struct PublishedSnapshot: Codable, Sendable, Hashable {
    public struct Device: Codable, Sendable, Hashable {
        /// The device's topic name (its retained topics are `<base>/<topic>/...`).
        public var topic: String
        public var name: String
        /// `mdns` or `static`.
        public var source: String
        /// Discovery config topics published for it.
        public var discovery: [String]
        /// A speaker group: it has a retained `members` topic too (absent in older files).
        public var group: Bool?
        /// The static configuration entry it came from when that is not its own id
        /// (`DeviceDescriptor.configuredID`).
        public var configured: DeviceID?
        /// SHA-256 of the device certificate of its last authenticated connection (device
        /// authentication, mqtt-api.md §11: `certificate_changed` compares against it across
        /// restarts; absent in older files and for devices never authenticated).
        public var certificate: String?

        public init(topic: String, name: String, source: String, discovery: [String], group: Bool? = nil,
                    configured: DeviceID? = nil, certificate: String? = nil) {
            self.topic = topic
            self.name = name
            self.source = source
            self.discovery = discovery
            self.group = group
            self.configured = configured
            self.certificate = certificate
        }
    }

    public var devices: [DeviceID: Device]
    /// The bridge device's discovery config topics.
    public var bridge: [String]

    public init(devices: [DeviceID: Device] = [:], bridge: [String] = []) {
        self.devices = devices
        self.bridge = bridge
    }
}

extension PublishedSnapshot {
    /// The retained device topics the bridge publishes for every device.
    /// (`keep` only for a device with a keep: cleared by the router when it was published.)
    static let retainedDeviceLeaves = DeviceLeaf.allCases.filter { $0.isRetained && $0 != .members && $0 != .keep }
    /// The retained topics a speaker group has besides those.
    static let retainedGroupLeaves: [DeviceLeaf] = [.members]
    /// The retained topic a device with a keep has besides those (cleared on removal when it was published).
    static let retainedKeepLeaves: [DeviceLeaf] = [.keep]

    /// A remembered device, by id, topic name or friendly name.
    func device(_ key: String) -> DeviceID? {
        let lower = key.lowercased()
        if devices[lower] != nil { return lower }
        return devices.keys.sorted().first { id in
            guard let e = devices[id] else { return false }
            return e.topic == key || e.name.lowercased() == lower
        }
    }
}
