/// One DNS-SD service instance as the browser reports it. The same Cast device can appear as
/// several instances (one per interface and IP protocol).
struct ServiceInstance: Sendable, Hashable, CustomStringConvertible {
    var interfaceIndex: Int32
    /// The IP protocol the instance was seen on (not necessarily the address family).
    var isIPv6: Bool
    var name: String
    var type: String
    var domain: String

    init(interfaceIndex: Int32, isIPv6: Bool, name: String, type: String = "_googlecast._tcp", domain: String = "local") {
        self.interfaceIndex = interfaceIndex
        self.isIPv6 = isIPv6
        self.name = name
        self.type = type
        self.domain = domain
    }

    var description: String { "\(name) (if \(interfaceIndex), \(isIPv6 ? "IPv6" : "IPv4"))" }
}

/// Merges static devices and mDNS service instances into one stream of device events keyed by id.
/// Pure: no I/O, no clock; the avahi browser feeds it and emits what it returns.
///
/// State: the static devices (by id), the last resolved record of every mDNS instance, and the
/// record the consumer last saw for every id (`emitted`). After each input the merged view of the
/// affected ids is recomputed and diffed against `emitted`:
/// nothing → something = `.added`, something → nothing = `.removed`, changed = `.updated`.
///
/// Rules:
/// - instances of one id: the one whose address family matches the preference wins, then the
///   lowest interface index, then IPv4 transport, then the name; the device goes away only when
///   its last instance does.
/// - a static device with the same id: static host, port, name and topic win; mDNS fills model,
///   capabilities, status, type; the source stays `static`; it is never removed.
/// - the include/exclude filter applies to the merged record: a device that is filtered out is
///   not announced (and is announced as removed if it gets filtered out later, e.g. renamed).
/// - after the daemon is lost, instances are kept but marked stale; instances the new browser
///   reports again are fresh; `browseComplete()` drops those still stale.
struct DeviceMerger: Sendable {
    let preferIPv6: Bool
    let filter: DeviceFilter
    private var statics: [String: StaticDevice] = [:]
    private var staticOrder: [String] = []
    private var instances: [ServiceInstance: CastDeviceRecord] = [:]
    private var seen: Set<ServiceInstance> = []
    private var stale: Set<ServiceInstance> = []
    private var emitted: [String: CastDeviceRecord] = [:]
    /// The records of the devices announced as removed since the last `takeDeparted()` (for the
    /// log line that names them; the event carries the id only).
    private var departed: [CastDeviceRecord] = []

    init(staticDevices: [StaticDevice], filter: DeviceFilter, preferIPv6: Bool) {
        self.preferIPv6 = preferIPv6
        self.filter = filter
        for device in staticDevices {
            let id = device.effectiveID
            if statics[id] == nil { staticOrder.append(id) }
            statics[id] = device
        }
    }

    /// The devices the consumer currently knows, by id.
    var devices: [String: CastDeviceRecord] { emitted }
    /// The records of the devices removed since the last call, oldest first.
    mutating func takeDeparted() -> [CastDeviceRecord] {
        defer { departed = [] }
        return departed
    }

    /// True while a sweep after a rescan has instances it has not seen again yet (for tests).
    var awaitingSweep: Bool { !stale.isEmpty }

    /// Announces the static devices (call once, first).
    mutating func start() -> [DiscoveryEvent] {
        staticOrder.flatMap { reconcile(id: $0) }
    }

    /// The browser saw an instance (before resolving it).
    mutating func browsed(_ instance: ServiceInstance) -> [DiscoveryEvent] {
        seen.insert(instance)
        stale.remove(instance)
        return []
    }

    /// An instance resolved (first time or again with new data).
    mutating func resolved(_ instance: ServiceInstance, record: CastDeviceRecord) -> [DiscoveryEvent] {
        seen.insert(instance)
        stale.remove(instance)
        let previous = instances.updateValue(record, forKey: instance)
        var events: [DiscoveryEvent] = []
        if let previous, previous.id != record.id { events += reconcile(id: previous.id) }
        return events + reconcile(id: record.id)
    }

    /// An instance resolved to something unusable (e.g. its TXT lost the id): forget its record.
    mutating func invalidated(_ instance: ServiceInstance) -> [DiscoveryEvent] {
        guard let previous = instances.removeValue(forKey: instance) else { return [] }
        return reconcile(id: previous.id)
    }

    /// The browser reported the instance gone.
    mutating func removed(_ instance: ServiceInstance) -> [DiscoveryEvent] {
        seen.remove(instance)
        stale.remove(instance)
        return invalidated(instance)
    }

    /// The avahi daemon went away: keep what we know, but mark every instance stale.
    mutating func daemonLost() -> [DiscoveryEvent] {
        stale = seen
        return []
    }

    /// A (new) browser finished its initial sweep: instances not seen again are gone.
    mutating func browseComplete() -> [DiscoveryEvent] {
        let gone = stale
        stale = []
        return gone.flatMap { removed($0) }
    }

    /// The merged record for `id`, before filtering.
    func merged(id: String) -> CastDeviceRecord? {
        let best = instances
            .filter { $0.value.id == id }
            .min { preferenceKey($0.key, $0.value) < preferenceKey($1.key, $1.value) }?
            .value
        guard let device = statics[id] else { return best }
        var record = device.record
        guard let best else { return record }
        record.model = best.model
        record.manufacturer = best.manufacturer
        record.capabilities = best.capabilities
        // What the TXT record says about the kind of device (its `ca`, `md`, or its port).
        record.castType = best.castType
        record.busy = best.busy
        record.statusText = best.statusText
        record.protocolVersion = best.protocolVersion
        record.iconPath = best.iconPath
        record.serviceName = best.serviceName
        record.interface = best.interface
        if device.name == nil { record.friendlyName = best.friendlyName }
        return record
    }

    private func preferenceKey(_ instance: ServiceInstance, _ record: CastDeviceRecord) -> PreferenceKey {
        let ipv6Address = record.host.contains(":")
        return PreferenceKey(
            familyMismatch: ipv6Address == preferIPv6 ? 0 : 1,
            interfaceIndex: instance.interfaceIndex,
            transport: instance.isIPv6 == preferIPv6 ? 0 : 1,
            name: instance.name,
            host: record.host
        )
    }

    private mutating func reconcile(id: String) -> [DiscoveryEvent] {
        let now = merged(id: id).flatMap { filter.allows($0) ? $0 : nil }
        let before = emitted[id]
        emitted[id] = now
        switch (before, now) {
        case (nil, nil): return []
        case (nil, let record?): return [.added(record)]
        case (let old?, nil):
            departed.append(old)
            return [.removed(id: id)]
        case (let old?, let record?): return old == record ? [] : [.updated(record)]
        }
    }
}

private struct PreferenceKey: Comparable {
    var familyMismatch: Int
    var interfaceIndex: Int32
    var transport: Int
    var name: String
    var host: String

    static func < (lhs: PreferenceKey, rhs: PreferenceKey) -> Bool {
        (lhs.familyMismatch, lhs.interfaceIndex, lhs.transport, lhs.name, lhs.host)
            < (rhs.familyMismatch, rhs.interfaceIndex, rhs.transport, rhs.name, rhs.host)
    }
}
