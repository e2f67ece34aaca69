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

        public init(topic: String, name: String, source: String, discovery: [String]) {
            self.topic = topic
            self.name = name
            self.source = source
            self.discovery = discovery
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

extension BridgeCore {
    /// The retained device topics the bridge publishes for every device.
    static let retainedDeviceLeaves = ["availability", "info", "receiver", "media", "state"]

    public var publishedSnapshot: PublishedSnapshot { published }

    /// Seeds what a previous run published. `staticIDs`: the ids of the configured static
    /// devices (as Discovery computes them); `admitted`: Discovery's include/exclude rule (id,
    /// friendly name). Devices that are gone are cleared on the first broker connect.
    public mutating func restorePublished(_ snapshot: PublishedSnapshot, staticIDs: Set<DeviceID>,
                                          admitted: (DeviceID, String) -> Bool = { _, _ in true }) {
        published = snapshot
        goneAtStart = snapshot.devices.keys.filter { id in
            guard let entry = snapshot.devices[id] else { return false }
            if !admitted(id, entry.name) { return true }
            return entry.source == DeviceSource.static.rawValue && !staticIDs.contains(id) && !configuration.discovery.mdns
        }.sorted()
    }

    /// Records what is retained for a device now.
    mutating func remember(_ d: DeviceState, discovery: [String], _ out: inout BridgeOutput) {
        let entry = PublishedSnapshot.Device(topic: d.topic, name: d.descriptor.friendlyName,
                                             source: d.descriptor.source.rawValue, discovery: discovery)
        if published.devices[d.id] != entry {
            published.devices[d.id] = entry
            out.publishedChanged = true
        }
    }

    /// Clears everything retained for a device the bridge published before (by this or an
    /// earlier run), each topic once: discovery configs first (remembered ones and `discovery`;
    /// Home Assistant then drops the entities), then the device topics.
    mutating func forgetPublished(_ id: DeviceID, topic: String?, discovery: [String] = [], _ out: inout BridgeOutput) {
        let entry = published.devices.removeValue(forKey: id)
        if entry != nil { out.publishedChanged = true }
        for t in Set((entry?.discovery ?? []) + discovery).sorted() { clearRetained(t, &out) }
        var topicNames = Set<String>()
        if let name = entry?.topic { topicNames.insert(name) }
        if let topic { topicNames.insert(topic) }
        for name in topicNames.sorted() {
            for leaf in Self.retainedDeviceLeaves { clearRetained(topics.device(name, leaf), &out) }
        }
    }

    /// First broker connect: devices that are gone since the previous run are cleared; with Home
    /// Assistant discovery switched off, every config a previous run published is cleared.
    mutating func clearGoneDevices(_ out: inout BridgeOutput) {
        for id in goneAtStart where devices[id] == nil {
            out.logs.append("clearing the retained topics of \(published.devices[id]?.name ?? id) (\(id)): it is no longer configured")
            forgetPublished(id, topic: nil, &out)
        }
        goneAtStart = []
        if !configuration.homeassistant.enabled {
            for id in published.devices.keys.sorted() {
                for t in published.devices[id]?.discovery ?? [] { clearRetained(t, &out) }
                if published.devices[id]?.discovery.isEmpty == false {
                    published.devices[id]?.discovery = []
                    out.publishedChanged = true
                }
            }
            for t in published.bridge { clearRetained(t, &out) }
            if !published.bridge.isEmpty {
                published.bridge = []
                out.publishedChanged = true
            }
        }
    }

    /// A remembered device this run does not know (an mDNS device not seen yet), by id, topic
    /// name or friendly name.
    func rememberedDevice(_ key: String) -> DeviceID? {
        let lower = key.lowercased()
        if published.devices[lower] != nil { return lower }
        return published.devices.keys.sorted().first { id in
            guard let e = published.devices[id] else { return false }
            return e.topic == key || e.name.lowercased() == lower
        }
    }
}
