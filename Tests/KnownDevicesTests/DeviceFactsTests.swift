import Bridge
import CastClient
import CastProtocol
import Discovery
import Testing

@testable import KnownDevices

/// What `eureka_info` adds to discovery (DeviceFacts, pure): facts of static devices, devices
/// given by their address, groups found through a static device, groups that moved, dynamic
/// groups held back from the bridge.
@Suite struct DeviceFactsTests {
    static let kitchenID = "11111111111111111111111111111111"
    static let denID = "22222222222222222222222222222222"
    static let groupID = "33333333333333333333333333333333"
    static let dynamicID = "44444444444444444444444444444444"

    static func info(id: String, name: String, model: String = "Nest Audio", display: Bool = false,
                     groups: [EurekaInfo.Group] = [], dynamic: [EurekaInfo.Group] = []) -> EurekaInfo {
        EurekaInfo(name: name, deviceName: name, model: model, manufacturer: "Google Inc.", id: id,
                   displaySupported: display, multizoneSupported: true, groups: groups, dynamicGroups: dynamic)
    }

    /// No Cast clients here: the rules never touch them.
    static func facts(_ statics: [StaticDevice] = []) -> DeviceFacts<Never> {
        DeviceFacts(statics: statics, filter: DeviceFilter(include: [], exclude: []))
    }

    /// The records handed on (to the fleet and the bridge), with their flags.
    static func passed(_ actions: [FactsAction]) -> [(event: DiscoveryEvent, dynamic: Bool, configured: DeviceID?)] {
        actions.compactMap { if case .discovery(let e, let d, let c) = $0 { return (e, d, c) } else { return nil } }
    }

    static func record(_ event: DiscoveryEvent) -> CastDeviceRecord? {
        switch event {
        case .added(let r), .updated(let r): return r
        case .removed: return nil
        }
    }

    @Test func aStaticDeviceGoesOnAtOnceAndGetsItsFactsAsAnUpdate() throws {
        let kitchen = StaticDevice(host: "192.0.2.10", name: "Kitchen", id: Self.kitchenID)
        var facts = Self.facts([kitchen])
        let first = facts.discovered(.added(kitchen.record), known: { _ in false })
        #expect(first.contains(.fetch(host: "192.0.2.10")))
        #expect(Self.passed(first).count == 1)  // not held
        let answer = facts.answered(host: "192.0.2.10", .success(Self.info(id: Self.kitchenID, name: "Kitchen Speaker")))
        let updated = try #require(Self.passed(answer).first.flatMap { Self.record($0.event) })
        #expect(updated.model == "Nest Audio" && updated.manufacturer == "Google Inc." && updated.castType == .audio)
        #expect(updated.friendlyName == "Kitchen")  // the configured name wins
        // The same connection is not asked again; a new one is.
        var online = DeviceSnapshot(generation: 1, link: .online)
        #expect(facts.snapshot(Self.kitchenID, online).isEmpty)
        // A new one soon after the last answer uses that answer (many devices behind one
        // address are not asked once each); later the host is asked again.
        online.generation = 2
        #expect(facts.snapshot(Self.kitchenID, online).isEmpty)
        facts.now += .seconds(11)
        online.generation = 3
        #expect(facts.snapshot(Self.kitchenID, online) == [.fetch(host: "192.0.2.10")])
        // A failure changes nothing and is logged once (then at debug level) until it answers.
        let failed = facts.answered(host: "192.0.2.10", .failure(EurekaFetchError(.timeout, "no answer")))
        #expect(Self.passed(failed).isEmpty && failed.count == 1)
        guard case .log(_, let debug)? = failed.first else { Issue.record("\(failed)"); return }
        #expect(!debug)
        facts.now += .seconds(11)
        online.generation = 4
        #expect(facts.snapshot(Self.kitchenID, online) == [.fetch(host: "192.0.2.10")])
        #expect(facts.answered(host: "192.0.2.10", .failure(EurekaFetchError(.timeout, "no answer"))).first
                    == .log("eureka_info of 192.0.2.10 could not be read (timeout: no answer); going on without it", debug: true))
    }

    @Test func aDeviceGivenByItsAddressWaitsForItsIdNameAndTopic() throws {
        let bare = StaticDevice(host: "192.0.2.11")
        var facts = Self.facts([bare])
        let first = facts.discovered(.added(bare.record), known: { _ in false })
        #expect(first == [.fetch(host: "192.0.2.11")])  // held
        let answer = facts.answered(host: "192.0.2.11", .success(Self.info(id: Self.denID, name: "Den")))
        let added = try #require(Self.passed(answer).first)
        let record = try #require(Self.record(added.event))
        #expect(record.id == Self.denID && record.friendlyName == "Den" && record.model == "Nest Audio")
        #expect(added.configured == bare.effectiveID)
        // Later events of its configured entry are about the same device.
        let again = facts.discovered(.updated(bare.record), known: { _ in true })
        #expect(Self.passed(again).first.flatMap { Self.record($0.event) }?.id == Self.denID)

        // Without an answer it is known by its address.
        let other = StaticDevice(host: "192.0.2.12")
        var lonely = Self.facts([other])
        _ = lonely.discovered(.added(other.record), known: { _ in false })
        let released = lonely.answered(host: "192.0.2.12", .failure(EurekaFetchError(.refused, "nothing listens")))
        #expect(Self.passed(released).first.flatMap { Self.record($0.event) }?.id == other.effectiveID)
    }

    /// Issue #26: a static device configured with host, port and id but no name (a speaker, and
    /// a group on its leader's port) waits for its `eureka_info`, so that its first record — and
    /// so its topic — carries its friendly name, not its address; without an answer it goes on,
    /// known by its address.
    @Test func anUnnamedStaticDeviceWaitsForItsNameAsAGroupDoes() throws {
        let kitchen = StaticDevice(host: "192.0.2.10", id: Self.kitchenID)
        let group = StaticDevice(host: "192.0.2.10", port: 32187, id: Self.groupID)
        var facts = Self.facts([kitchen, group])
        #expect(facts.discovered(.added(kitchen.record), known: { _ in false }) == [.fetch(host: "192.0.2.10")])
        #expect(facts.discovered(.added(group.record), known: { _ in false }).isEmpty, "held, its host already asked")
        let leads = EurekaInfo.Group(name: "Downstairs", id: Self.groupID, leader: .thisDevice, castPort: 32187)
        let answer = facts.answered(host: "192.0.2.10", .success(Self.info(id: Self.kitchenID, name: "Kitchen speaker", groups: [leads])))
        let added = Self.passed(answer).filter { if case .added = $0.event { true } else { false } }.compactMap { Self.record($0.event) }
        #expect(added.first { $0.id == Self.kitchenID }?.friendlyName == "Kitchen speaker")
        #expect(added.first { $0.id == Self.groupID }?.friendlyName == "Downstairs")
        #expect(added.first { $0.id == Self.groupID }?.castType == .group)
        // Nothing was passed on under its address before.
        #expect(!Self.passed(answer).compactMap { Self.record($0.event) }.contains { $0.friendlyName == "192.0.2.10" })

        // A configured name wins and does not wait.
        let named = StaticDevice(host: "192.0.2.13", name: "Den", id: Self.denID)
        var withName = Self.facts([named])
        #expect(Self.passed(withName.discovered(.added(named.record), known: { _ in false })).count == 1)

        // No answer: it goes on, known by its address (bounded by the fetch's timeout).
        var lonely = Self.facts([kitchen])
        _ = lonely.discovered(.added(kitchen.record), known: { _ in false })
        let released = lonely.answered(host: "192.0.2.10", .failure(EurekaFetchError(.timeout, "no answer")))
        let record = try #require(Self.passed(released).first.flatMap { Self.record($0.event) })
        #expect(record.id == Self.kitchenID && record.friendlyName == "192.0.2.10")

        // Seen over mDNS (which names it) before it was passed: not held for a name.
        var seen = kitchen.record
        seen.serviceName = "Chromecast-kitchen._googlecast._tcp.local"
        seen.friendlyName = "Kitchen speaker"
        var viaMDNS = Self.facts([kitchen])
        #expect(Self.passed(viaMDNS.discovered(.added(seen), known: { _ in false })).count == 1)
    }

    @Test func aStaticGroupIsKnownFoundAgainAfterItsLeaderMovedAndHostedGroupsAreFound() throws {
        let kitchen = StaticDevice(host: "192.0.2.10", id: Self.kitchenID)
        let den = StaticDevice(host: "192.0.2.11", id: Self.denID)
        let group = StaticDevice(host: "192.0.2.10", port: 32187, name: "Downstairs", id: Self.groupID)
        var facts = Self.facts([kitchen, den, group])
        for device in [kitchen, den, group] { _ = facts.discovered(.added(device.record), known: { _ in false }) }
        #expect(facts.fetching == ["192.0.2.10", "192.0.2.11"])
        let leads = EurekaInfo.Group(name: "Downstairs", id: Self.groupID, leader: .thisDevice, castPort: 32187)
        let other = EurekaInfo.Group(name: "Upstairs", id: Self.dynamicID, leader: .thisDevice, castPort: 32188)
        let answer = facts.answered(host: "192.0.2.10", .success(Self.info(id: Self.kitchenID, name: "Kitchen", groups: [leads, other])))
        // The configured group is a group (its client follows its members from now on).
        #expect(answer.contains(.becomeGroup(Self.groupID)))
        let records = Self.passed(answer).compactMap { Self.record($0.event) }
        #expect(records.first { $0.id == Self.groupID }?.castType == .group)
        // A group the kitchen leads that nobody configured is found, configured through the kitchen.
        let hosted = try #require(Self.passed(answer).first { Self.record($0.event)?.id == Self.dynamicID })
        #expect(Self.record(hosted.event)?.port == 32188 && Self.record(hosted.event)?.castType == .group)
        #expect(hosted.configured == Self.kitchenID)

        _ = facts.answered(host: "192.0.2.11", .success(Self.info(id: Self.denID, name: "Den")))
        // The group goes offline (its leader moved to the den): its host and its members are asked.
        var offline = DeviceSnapshot(generation: 1, link: .offline(reason: .closedByPeer, silentSince: nil))
        offline.multizone = MultizoneState(members: [MultizoneDevice(deviceId: "22222222-2222-2222-2222-222222222222")])
        let search = facts.snapshot(Self.groupID, offline)
        #expect(search.contains(.fetch(host: "192.0.2.10")) && search.contains(.fetch(host: "192.0.2.11")))
        #expect(facts.isSearching && facts.searching.keys.sorted() == [Self.groupID])
        // The old leader names the new one; the new one has the port.
        let moved = EurekaInfo.Group(name: "Downstairs", id: Self.groupID, leader: .member(host: "192.0.2.11", port: 10001))
        _ = facts.answered(host: "192.0.2.10", .success(Self.info(id: Self.kitchenID, name: "Kitchen", groups: [moved])))
        let leader = EurekaInfo.Group(name: "Downstairs", id: Self.groupID, leader: .thisDevice, castPort: 32187)
        let found = facts.answered(host: "192.0.2.11", .success(Self.info(id: Self.denID, name: "Den", groups: [leader])))
        let relocated = try #require(Self.passed(found).compactMap { Self.record($0.event) }.first { $0.id == Self.groupID })
        #expect(relocated.host == "192.0.2.11" && relocated.port == 32187)
        // Online again: the search is over.
        _ = facts.snapshot(Self.groupID, DeviceSnapshot(generation: 2, link: .online))
        #expect(facts.searching.isEmpty)
        #expect(!facts.isSearching)
    }

    @Test func aNewGroupOverMDNSWaitsForItsLeaderToSayWhetherItIsDynamic() throws {
        var facts = Self.facts()
        let group = CastDeviceRecord(id: Self.dynamicID, friendlyName: "Kitchen + Den", model: "Google Cast Group",
                                     host: "192.0.2.11", port: 32190, castType: .group, serviceName: "Google-Cast-Group-x")
        #expect(facts.discovered(.added(group), known: { _ in false }) == [.fetch(host: "192.0.2.11")])
        let temporary = EurekaInfo.Group(name: "Kitchen + Den", id: Self.dynamicID, leader: .thisDevice)
        let answer = facts.answered(host: "192.0.2.11", .success(Self.info(id: Self.denID, name: "Den", dynamic: [temporary])))
        let passed = try #require(Self.passed(answer).first)
        #expect(passed.dynamic && Self.record(passed.event)?.id == Self.dynamicID)
        #expect(facts.discovered(.removed(id: Self.dynamicID), known: { _ in true }) == [.removeDynamic(Self.dynamicID)])

        // A static group over mDNS (its leader lists it among its groups) goes on as a device;
        // one remembered from an earlier run is not held at all.
        var static1 = Self.facts()
        var known = group
        known.id = Self.groupID
        _ = static1.discovered(.added(known), known: { _ in false })
        let listed = EurekaInfo.Group(name: "Downstairs", id: Self.groupID, leader: .thisDevice, castPort: 32190)
        let released = static1.answered(host: "192.0.2.11", .success(Self.info(id: Self.denID, name: "Den", groups: [listed])))
        #expect(Self.passed(released).first?.dynamic == false)
        var remembered = Self.facts()
        #expect(Self.passed(remembered.discovered(.added(known), known: { $0 == Self.groupID })).count == 1)
        // Without an answer a held group counts as a static one.
        var unanswered = Self.facts()
        _ = unanswered.discovered(.added(known), known: { _ in false })
        let timedOut = unanswered.answered(host: "192.0.2.11", .failure(EurekaFetchError(.timeout, "no answer")))
        #expect(Self.passed(timedOut).first?.dynamic == false)
    }
}

/// The device table's clients: kept per entry, handed over once, and a group that already has
/// one is not held back.
@Suite struct DeviceTableTests {
    static let groupID = "55555555555555555555555555555555"

    @Test func aGroupWithAClientIsNotHeldAndClientsAreHandedOverOnce() {
        var facts = DeviceFacts<Int>(statics: [], filter: DeviceFilter(include: [], exclude: []))
        let group = CastDeviceRecord(id: Self.groupID, friendlyName: "Kitchen + Den", model: "Google Cast Group",
                                     host: "192.0.2.11", port: 32190, castType: .group, serviceName: "Google-Cast-Group-y")
        #expect(facts.setClient(7, for: Self.groupID) == nil)
        // Known through its client (announced again after vanishing): no wait for eureka_info.
        let actions = facts.discovered(.added(group), known: { _ in false })
        #expect(actions == [.discovery(.added(group), dynamic: false, configuredID: nil)])
        #expect(facts.entry(Self.groupID)?.record == group && facts.entry(Self.groupID)?.held == false)
        #expect(facts.client(Self.groupID) == 7)
        #expect(facts.takeClients() == [7])
        #expect(facts.client(Self.groupID) == nil && facts.takeClients().isEmpty)
        // Without a client the same announcement of a new group waits for its leader.
        var fresh = DeviceFacts<Int>(statics: [], filter: DeviceFilter(include: [], exclude: []))
        #expect(fresh.discovered(.added(group), known: { _ in false }) == [.fetch(host: "192.0.2.11")])
        #expect(fresh.entry(Self.groupID)?.held == true)
    }
}
