import Testing
@testable import Discovery

@Suite struct DeviceMergerTests {
    static let id = "0123456789abcdef0123456789abcdef"
    let v4 = ServiceInstance(interfaceIndex: 2, isIPv6: false, name: "Chromecast-0123")
    let v6 = ServiceInstance(interfaceIndex: 2, isIPv6: true, name: "Chromecast-0123")
    let otherIf = ServiceInstance(interfaceIndex: 3, isIPv6: false, name: "Chromecast-0123")

    func record(host: String = "192.0.2.5", name: String = "TV", busy: Bool = false, id: String = Self.id) -> CastDeviceRecord {
        CastDeviceRecord(id: id, friendlyName: name, model: "Chromecast", manufacturer: "Google Inc.", host: host,
                         capabilities: [.videoOut, .audioOut], castType: .video, busy: busy,
                         serviceName: "Chromecast-0123", interface: "eth0")
    }

    func merger(statics: [StaticDevice] = [], include: [String] = [], exclude: [String] = [], preferIPv6: Bool = false) -> DeviceMerger {
        var merger = DeviceMerger(staticDevices: statics, filter: DeviceFilter(include: include, exclude: exclude),
                                  preferIPv6: preferIPv6)
        _ = merger.start()
        return merger
    }

    @Test func addUpdateRemove() {
        var m = merger()
        #expect(m.browsed(v4) == [])
        #expect(m.resolved(v4, record: record()) == [.added(record())])
        #expect(m.resolved(v4, record: record()) == [])
        #expect(m.resolved(v4, record: record(busy: true)) == [.updated(record(busy: true))])
        #expect(m.resolved(v4, record: record(host: "192.0.2.6", busy: true)) == [.updated(record(host: "192.0.2.6", busy: true))])
        #expect(m.resolved(v4, record: record(host: "192.0.2.6", name: "New", busy: true))
            == [.updated(record(host: "192.0.2.6", name: "New", busy: true))])
        #expect(m.removed(v4) == [.removed(id: Self.id)])
        #expect(m.removed(v4) == [])
        #expect(m.devices.isEmpty)
    }

    @Test func severalInstancesAreOneDeviceChosenByPreference() {
        var m = merger()
        #expect(m.resolved(v6, record: record(host: "fd00::5")) == [.added(record(host: "fd00::5"))])
        #expect(m.resolved(v4, record: record(host: "192.0.2.5")) == [.updated(record(host: "192.0.2.5"))])
        #expect(m.resolved(otherIf, record: record(host: "198.51.100.5")) == [])  // higher interface index
        #expect(m.removed(v4) == [.updated(record(host: "198.51.100.5"))])
        #expect(m.removed(otherIf) == [.updated(record(host: "fd00::5"))])
        #expect(m.removed(v6) == [.removed(id: Self.id)])
    }

    @Test func preferIPv6() {
        var m = merger(preferIPv6: true)
        #expect(m.resolved(v4, record: record(host: "192.0.2.5")) == [.added(record(host: "192.0.2.5"))])
        #expect(m.resolved(v6, record: record(host: "fd00::5")) == [.updated(record(host: "fd00::5"))])
        #expect(m.removed(v4) == [])
    }

    @Test func staticDevicesComeFirstAndAreNeverRemoved() {
        let device = StaticDevice(host: "192.0.2.9", port: 8009, name: "Static TV", id: Self.id.uppercased(), topic: "tv")
        var m = DeviceMerger(staticDevices: [device, StaticDevice(host: "192.0.2.10")],
                             filter: DeviceFilter(include: [], exclude: []), preferIPv6: false)
        let start = m.start()
        #expect(start == [.added(device.record), .added(StaticDevice(host: "192.0.2.10").record)])

        var merged = device.record
        merged.model = "Chromecast"
        merged.manufacturer = "Google Inc."
        merged.capabilities = [.videoOut, .audioOut]
        merged.busy = false
        merged.serviceName = "Chromecast-0123"
        merged.interface = "eth0"
        #expect(m.resolved(v4, record: record(host: "192.0.2.5", name: "mDNS name")) == [.updated(merged)])
        #expect(merged.host == "192.0.2.9" && merged.friendlyName == "Static TV" && merged.source == .static)
        #expect(merged.topicOverride == "tv")
        #expect(m.devices.count == 2)
        // mDNS goes away: the device falls back to its static record, it is not removed.
        #expect(m.removed(v4) == [.updated(device.record)])
        #expect(m.devices.count == 2)
    }

    @Test func staticWithoutNameTakesMDNSName() {
        let device = StaticDevice(host: "192.0.2.9", id: Self.id)
        var m = DeviceMerger(staticDevices: [device], filter: DeviceFilter(include: [], exclude: []), preferIPv6: false)
        _ = m.start()
        let events = m.resolved(v4, record: record(name: "Bedroom"))
        guard case .updated(let merged)? = events.first else { Issue.record("expected update, got \(events)"); return }
        #expect(merged.friendlyName == "Bedroom")
        #expect(merged.host == "192.0.2.9")
    }

    @Test func filterAppliesBeforeEmitting() {
        var m = merger(exclude: ["tv"])
        #expect(m.resolved(v4, record: record(name: "TV")) == [])
        // Renamed: now visible.
        #expect(m.resolved(v4, record: record(name: "Den")) == [.added(record(name: "Den"))])
        // Renamed back: filtered out again, announced as removed.
        #expect(m.resolved(v4, record: record(name: "tv")) == [.removed(id: Self.id)])
        #expect(m.removed(v4) == [])

        var included = merger(include: [Self.id])
        #expect(included.resolved(v4, record: record()) == [.added(record())])
        let other = ServiceInstance(interfaceIndex: 2, isIPv6: false, name: "Other")
        #expect(included.resolved(other, record: record(id: "ffffffffffffffffffffffffffffffff")) == [])
    }

    /// The same rule for a device known only by id and name (the bridge's remembered devices).
    @Test func filterByIdAndName() {
        let filter = DeviceFilter(include: [], exclude: ["Kitchen", "0123-4567-89AB-CDEF-0123-4567-89ab-cdef"])
        #expect(!filter.allows(id: "ffffffffffffffffffffffffffffffff", friendlyName: "kitchen"))
        #expect(!filter.allows(id: "0123456789abcdef0123456789abcdef", friendlyName: "Den"))
        #expect(filter.allows(id: "ffffffffffffffffffffffffffffffff", friendlyName: "Den"))
        let only = DeviceFilter(include: ["Den"], exclude: [])
        #expect(only.allows(id: "x", friendlyName: "DEN"))
        #expect(!only.allows(id: "x", friendlyName: "Attic"))
    }

    @Test func daemonLossKeepsDevicesUntilTheNextSweep() {
        var m = merger()
        let gone = ServiceInstance(interfaceIndex: 2, isIPv6: false, name: "Gone")
        let goneID = "ffffffffffffffffffffffffffffffff"
        _ = m.resolved(v4, record: record())
        _ = m.resolved(gone, record: record(id: goneID))
        #expect(m.daemonLost() == [])
        #expect(m.devices.count == 2)
        #expect(m.browsed(v4) == [])
        #expect(m.browseComplete() == [.removed(id: goneID)])
        #expect(m.devices.keys.sorted() == [Self.id])
        #expect(m.browseComplete() == [])
    }

    @Test func instanceChangingIDMovesTheDevice() {
        var m = merger()
        _ = m.resolved(v4, record: record())
        let newID = "ffffffffffffffffffffffffffffffff"
        #expect(m.resolved(v4, record: record(id: newID)) == [.removed(id: Self.id), .added(record(id: newID))])
        #expect(m.invalidated(v4) == [.removed(id: newID)])
    }
}
