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

        public init(topic: String, name: String, source: String, discovery: [String], group: Bool? = nil,
                    configured: DeviceID? = nil) {
            self.topic = topic
            self.name = name
            self.source = source
            self.discovery = discovery
            self.group = group
            self.configured = configured
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
    static let retainedDeviceLeaves = ["availability", "info", "receiver", "media", "state"]
    /// The retained topics a speaker group has besides those.
    static let retainedGroupLeaves = ["members"]

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

extension BridgeCore {
    public var publishedSnapshot: PublishedSnapshot { publisher.published }

    /// Seeds what a previous run published. `staticIDs`: the ids of the configured static
    /// devices (as Discovery computes them); `admitted`: Discovery's include/exclude rule (id,
    /// friendly name). Devices that are gone are cleared on the first broker connect.
    public mutating func restorePublished(_ snapshot: PublishedSnapshot, staticIDs: Set<DeviceID>,
                                          admitted: (DeviceID, String) -> Bool = { _, _ in true }) {
        publisher.published = snapshot
        publisher.goneAtStart = snapshot.devices.keys.filter { id in
            guard let entry = snapshot.devices[id] else { return false }
            if !admitted(id, entry.name) { return true }
            let configured = staticIDs.contains(id) || entry.configured.map(staticIDs.contains) == true
            return entry.source == DeviceSource.static.rawValue && !configured && !configuration.discovery.mdns
        }.sorted()
    }

    /// First broker connect: devices that are gone since the previous run are cleared; with Home
    /// Assistant discovery switched off, every config a previous run published is cleared.
    mutating func clearGoneDevices(_ out: inout BridgeOutput) {
        for id in publisher.goneAtStart where registry[id] == nil {
            out.logs.append("clearing the retained topics of \(publisher.published.devices[id]?.name ?? id) (\(id)): it is no longer configured")
            publisher.forget(id, topic: nil, topics: topics, &out)
        }
        publisher.goneAtStart = []
        guard !configuration.homeassistant.enabled else { return }
        for id in publisher.published.devices.keys.sorted() {
            for t in publisher.published.devices[id]?.discovery ?? [] { publisher.clear(t, &out) }
            if publisher.published.devices[id]?.discovery.isEmpty == false {
                publisher.published.devices[id]?.discovery = []
                out.publishedChanged = true
            }
        }
        for t in publisher.published.bridge { publisher.clear(t, &out) }
        if !publisher.published.bridge.isEmpty {
            publisher.published.bridge = []
            out.publishedChanged = true
        }
    }
}
