import Bridge
import CastClient
import CastProtocol
import Discovery

/// What devices say about themselves at `eureka_info` (docs/discovery.md), applied to what
/// discovery reports before the fleet and the bridge see it. Pure: it takes discovery events,
/// the answers of `eureka_info` fetches and the devices' snapshots, and returns actions
/// (`FactsAction`); `DeviceFactsRunner` carries them out (fetches, the fleet, the core).
///
/// - A static device is asked once per connection (name, model, manufacturer, kind; a group's
///   leader); one configured by id and name goes on to the bridge at once and gets its facts as
///   an update, so a slow or failing `eureka_info` never delays it. One without a name (given by
///   its address alone, or by host, port and id) waits for the answer, bounded by the fetch's
///   timeout: the answer gives it its name and so its topic (and, given by its address alone,
///   its id); without an answer it is known by its address.
/// - A static device that its host's `eureka_info` lists among its groups is a group (its client
///   then follows the multizone status); a group whose leader moved is found again there
///   (`elected_leader`, `cast_port`), also by asking its members when it goes offline.
/// - A group hosted by a static device is found without mDNS (`elected_leader: self` with a
///   `cast_port`).
/// - A group seen over mDNS for the first time (not remembered from an earlier run, no client yet)
///   waits for its leader's `eureka_info`: a dynamic (temporary) group is followed for its members
///   and is no device; without an answer it counts as a static group. This is the one place that
///   decides "dynamic group": the flag goes on with the record (`FactsAction.discovery`, and so
///   `DeviceDescriptor.isDynamicGroup`).
///
/// It owns the daemon's one table of devices before the core (`KnownDevice`, one entry per id:
/// the record, its facts, held or settled, dynamic, the configured entry, the Cast client), so
/// that what the daemon knows about a device is in one place. `Client` is the daemon's client
/// type (tests use any type); the rules never touch it.
public struct DeviceFacts<Client> {
    /// What one answer taught about a device.
    public struct Facts: Equatable, Sendable {
        public var name: String?
        public var model: String?
        public var manufacturer: String?
        public var castType: Discovery.CastType?
        /// Where the group's endpoint is now (its leader's host and `cast_port`).
        public var address: Address?
    }

    public struct Address: Equatable, Hashable, Sendable {
        public var host: String
        public var port: Int
    }

    let statics: [DeviceID: StaticDevice]
    let filter: DeviceFilter

    /// The one device table: every device discovery or `eureka_info` named, by id. An entry
    /// stays when its device goes (its record nil): what was learnt of it (settled, its facts,
    /// its configured entry) holds when it comes back.
    var devices: [DeviceID: KnownDevice<Client>] = [:]
    /// The ids with a record, by the record's host (an answer concerns the devices at its host,
    /// not the fleet): an index into `devices`.
    var byHost: [String: Set<DeviceID>] = [:]
    /// The ids whose facts give them an address of their own (a static group led from another
    /// host), by that host: an index into `devices`, so that an answer does not walk the fleet
    /// (at 10 000 devices, one walk per answer was 10^8 entry copies at start-up).
    private var byFactsHost: [String: Set<DeviceID>] = [:]
    /// The static groups looking for their leader (their entries' `searching` set): the daemon
    /// asks every tick whether any is, which a walk of the table answered in 4-5 % of its idle
    /// CPU at 10 000 devices.
    private(set) var searchingIDs: Set<DeviceID> = []
    /// The stable id of a device given by its address → the id its `eureka_info` gave it.
    private(set) var aliases: [DeviceID: DeviceID] = [:]
    /// The newest answer of each host (bounded by the hosts the bridge knows).
    private var answers: [String: EurekaInfo] = [:]
    public private(set) var fetching: Set<String> = []
    /// When each host last answered or failed (many devices behind one address, as a test fleet
    /// has them, are not asked once each), and the hosts whose last fetch failed (logged once).
    private var lastAsked: [String: ContinuousClock.Instant] = [:]
    private var failing: Set<String> = []
    /// The time of the input being handled (set by the runner; tests set it).
    public var now = ContinuousClock.now
    /// A host asked less than this long ago is not asked again for a new connection.
    public static var reuseWindow: Duration { .seconds(10) }

    public init(statics: [StaticDevice], filter: DeviceFilter) {
        var byID: [DeviceID: StaticDevice] = [:]
        for device in statics where byID[device.effectiveID] == nil { byID[device.effectiveID] = device }
        self.statics = byID
        self.filter = filter
    }

    // MARK: - Inputs

    /// A discovery event. `known`: the bridge knew the device in an earlier run (such a group is
    /// not held: it was no dynamic group then; nor is one that has a client).
    public mutating func discovered(_ event: DiscoveryEvent, known: (DeviceID) -> Bool) -> [FactsAction] {
        switch event {
        case .added(var record), .updated(var record):
            let added = if case .added = event { true } else { false }
            if let real = aliases[record.id] { record.id = real }
            see(record.id, record)
            if devices[record.id]?.held == true || shouldHold(record, known: known) {
                devices[record.id]?.held = true
                if let cached = classifying(record) { return answered(host: record.host, .success(cached)) }
                return fetch(record.host)
            }
            devices[record.id]?.settled = true
            var actions = [pass(record, added: added)]
            if record.source == .static, devices[record.id]?.askedForGeneration == nil {
                // The first connection's facts are asked for right away.
                devices[record.id]?.askedForGeneration = 1
                actions += ask(current(record).host)
            }
            return actions
        case .removed(let raw):
            let id = aliases[raw] ?? raw
            if devices[id]?.held == true {
                devices[id]?.held = false
                see(id, nil)
                return []
            }
            if devices[id]?.isDynamicGroup == true {
                devices[id]?.isDynamicGroup = false
                see(id, nil)
                return [.removeDynamic(id)]
            }
            return [.discovery(.removed(id: id), dynamic: false, configuredID: nil)]
        }
    }

    /// A device's snapshot reached the bridge: a static device that came online on a new
    /// connection is asked again; a static group that went offline looks for its leader at its
    /// host and its members' hosts.
    public mutating func snapshot(_ id: DeviceID, _ snapshot: DeviceSnapshot) -> [FactsAction] {
        guard let record = devices[id]?.record, record.source == .static else { return [] }
        if snapshot.isOnline {
            if devices[id]?.searching != nil { setSearching(id, nil) }
            guard snapshot.generation > devices[id]?.askedForGeneration ?? 0 else { return [] }
            devices[id]?.askedForGeneration = snapshot.generation
            return ask(current(record).host)
        }
        guard case .offline = snapshot.link, current(record).castType == .group, devices[id]?.searching == nil else { return [] }
        var hosts = [current(record).host]
        for member in snapshot.multizone?.members ?? [] {
            guard let memberID = TXTRecordParser.normalizeID(member.deviceId), let host = devices[memberID]?.record?.host else { continue }
            if !hosts.contains(host) { hosts.append(host) }
        }
        setSearching(id, Set(hosts))
        return [.log("\(record.friendlyName) (\(id)): a static group went offline; asking \(hosts.joined(separator: ", ")) where its leader is now")]
            + hosts.flatMap { fetch($0) }
    }

    /// The answer (or failure) of `host`'s `eureka_info`.
    public mutating func answered(host: String, _ result: Result<EurekaInfo, EurekaFetchError>) -> [FactsAction] {
        fetching.remove(host)
        lastAsked[host] = now
        var actions: [FactsAction] = []
        let info: EurekaInfo?
        switch result {
        case .success(let answer):
            info = answer
            answers[host] = answer
            failing.remove(host)
        case .failure(let error):
            info = nil
            // Once per host until it answers again (the rest at debug level).
            let first = failing.insert(host).inserted
            actions.append(.log("eureka_info of \(host) could not be read (\(error)); going on without it", debug: !first))
        }
        // Held devices at this host go on, classified.
        for id in (byHost[host] ?? []).sorted() {
            guard devices[id]?.held == true, var record = devices[id]?.record, record.host == host else { continue }
            devices[id]?.held = false
            if let info, isAddressOnly(record), let identified = identify(record, info) {
                see(record.id, nil)
                aliases[record.id] = identified.id
                devices[identified.id, default: KnownDevice()].configuredID = record.id
                record = identified
                see(record.id, record)
            }
            if let info, info.dynamicGroups.contains(where: { $0.id == record.id }), record.source == .mdns {
                devices[record.id]?.isDynamicGroup = true
            }
            devices[record.id]?.settled = true
            if let info { learn(record, info, host: host, &actions) }
            actions.append(pass(record, added: true))
            if record.source == .static {
                devices[record.id]?.askedForGeneration = 1
                // Its own host is asked when it is not the one that answered (a group's leader moved).
                if current(record).host != host { actions += fetch(current(record).host) }
            }
        }
        guard let info else { return actions }
        // Facts of the static devices at this host, and of the groups it names.
        let named = (info.groups + info.dynamicGroups).compactMap(\.id)
        let moved = byFactsHost[host] ?? []
        for id in Set(byHost[host] ?? []).union(named).union(moved).sorted() {
            guard let entry = devices[id], let record = entry.record, record.source == .static, !entry.held,
                  record.host == host || current(record).host == host || isHostedHere(id, info) else { continue }
            let before = entry.facts
            let beforeType = current(record).castType
            learn(record, info, host: host, &actions)
            guard devices[id]?.facts != before else { continue }
            actions.append(pass(record, added: false))
            if beforeType != .group, current(record).castType == .group { actions.append(.becomeGroup(id)) }
        }
        // Groups this host leads that nobody configured or announced: found through a static device.
        if let hostOwner = (byHost[host] ?? []).compactMap({ devices[$0] }).filter({ $0.record?.source == .static && $0.configuredID == nil })
            .compactMap(\.record).min(by: { $0.id < $1.id }) {
            for group in info.groups {
                guard group.leader == .thisDevice, let gid = group.id, let port = group.castPort, devices[gid]?.record == nil,
                      devices[gid]?.held != true, filter.allows(id: gid, friendlyName: group.name ?? gid) else { continue }
                let record = CastDeviceRecord(
                    id: gid, friendlyName: group.name ?? gid, model: "Google Cast Group", manufacturer: "Google Inc.",
                    host: host, port: port, capabilities: [.audioOut, .multizoneGroup, .masterVolume], castType: .group,
                    source: .static)
                see(gid, record)
                devices[gid]?.settled = true
                let configuredID = devices[hostOwner.id]?.configuredID ?? hostOwner.id
                devices[gid]?.configuredID = configuredID
                devices[gid]?.askedForGeneration = 1
                actions.append(.log("group \(record.friendlyName) (\(gid)) found at \(host):\(port) through the eureka_info of \(hostOwner.friendlyName)"))
                actions.append(pass(record, added: true))
            }
        }
        return actions
    }

    /// Every static group still looking for its leader asks the hosts it asked before again
    /// (called every `searchInterval`: a leader may come back later than the group went away).
    public mutating func retrySearches() -> [FactsAction] {
        let searching = self.searching
        return searching.keys.sorted().flatMap { id in (searching[id] ?? []).sorted().flatMap { fetch($0) } }
    }

    /// How often a static group that lost its leader asks again (pychromecast polls its known
    /// hosts every 30 s).
    public static var searchInterval: Duration { .seconds(30) }

    /// Sets (or with nil removes) what is known of a device, keeping `byHost` in step.
    private mutating func see(_ id: DeviceID, _ record: CastDeviceRecord?) {
        if let old = devices[id]?.record?.host, old != record?.host {
            byHost[old]?.remove(id)
            if byHost[old]?.isEmpty == true { byHost[old] = nil }
        }
        if let record { byHost[record.host, default: []].insert(id) }
        if record == nil, devices[id] == nil { return }
        devices[id, default: KnownDevice()].record = record
    }

    // MARK: - Rules

    /// The record as the fleet and the bridge should see it: the facts applied (a configured
    /// name and what mDNS says win) and a moved group at its leader.
    public func current(_ record: CastDeviceRecord) -> CastDeviceRecord {
        var r = record
        guard let f = devices[r.id]?.facts else { return r }
        let entry = statics[devices[r.id]?.configuredID ?? r.id]
        let fromMDNS = r.serviceName != nil
        if entry?.name == nil, !fromMDNS, let name = f.name { r.friendlyName = name }
        if r.model == nil { r.model = f.model }
        if r.manufacturer == nil { r.manufacturer = f.manufacturer }
        if !fromMDNS, let type = f.castType {
            r.castType = type
            if type == .group, r.manufacturer == nil { r.manufacturer = "Google Inc." }
        }
        if r.source == .static, let address = f.address {
            r.host = address.host
            r.port = address.port
        }
        return r
    }

    private func pass(_ record: CastDeviceRecord, added: Bool) -> FactsAction {
        let r = current(record)
        let entry = devices[r.id]
        return .discovery(added ? .added(r) : .updated(r), dynamic: entry?.isDynamicGroup ?? false, configuredID: entry?.configuredID)
    }

    private func isAddressOnly(_ record: CastDeviceRecord) -> Bool {
        guard record.source == .static, let entry = statics[record.id] else { return false }
        return entry.id.flatMap(TXTRecordParser.normalizeID) == nil && aliases[record.id] == nil
    }

    /// A static device whose entry names it not, and that mDNS has not named either: its topic
    /// name is the slug of its friendly name, which only its `eureka_info` knows.
    private func isUnnamed(_ record: CastDeviceRecord) -> Bool {
        guard record.source == .static, record.serviceName == nil,
              let entry = statics[devices[record.id]?.configuredID ?? record.id] else { return false }
        return entry.name == nil
    }

    private func shouldHold(_ record: CastDeviceRecord, known: (DeviceID) -> Bool) -> Bool {
        guard devices[record.id]?.settled != true else { return false }
        if isAddressOnly(record) || isUnnamed(record) { return true }
        return record.source == .mdns && record.castType == .group && devices[record.id]?.client == nil && !known(record.id)
    }

    /// The host's last answer, when it already names a held group (one that does not name it
    /// may be older than the group).
    private func classifying(_ record: CastDeviceRecord) -> EurekaInfo? {
        guard !isAddressOnly(record), let cached = answers[record.host],
              (cached.groups + cached.dynamicGroups).contains(where: { $0.id == record.id }) else { return nil }
        return cached
    }

    /// A device given by its address, as its answer names it: a group when this host leads one
    /// on the configured port, else the device itself.
    private func identify(_ record: CastDeviceRecord, _ info: EurekaInfo) -> CastDeviceRecord? {
        var r = record
        if let group = info.groups.first(where: { $0.leader == .thisDevice && $0.castPort == record.port }), let id = group.id {
            r.id = id
            return r
        }
        guard record.port == 8009, let id = info.id else { return nil }
        r.id = id
        return r
    }

    private func isHostedHere(_ id: DeviceID, _ info: EurekaInfo) -> Bool {
        info.groups.contains { $0.id == id && ($0.leader == .thisDevice || devices[id]?.searching != nil) }
    }

    /// What `info` (from `host`) says about `record`'s device: its own facts, or a group's.
    private mutating func learn(_ record: CastDeviceRecord, _ info: EurekaInfo, host: String, _ actions: inout [FactsAction]) {
        let id = record.id
        if info.id == id {
            setFacts(id, Facts(
                name: info.friendlyName, model: info.model, manufacturer: info.manufacturer,
                castType: info.displaySupported.map { $0 ? .video : .audio }))
            return
        }
        guard let group = (info.groups + info.dynamicGroups).first(where: { $0.id == id }) else { return }
        var f = devices[id]?.facts ?? Facts()
        f.name = group.name ?? f.name
        f.model = "Google Cast Group"
        f.manufacturer = "Google Inc."
        f.castType = .group
        switch group.leader {
        case .thisDevice:
            if record.source == .static, let port = group.castPort {
                let address = Address(host: host, port: port)
                if address != (f.address ?? Address(host: record.host, port: record.port)) {
                    actions.append(.log("group \(f.name ?? id) (\(id)) is led from \(host):\(port) now"))
                }
                f.address = address
            }
        case .member(let leader, _):
            // Another member leads: its own eureka_info has the group's port.
            if record.source == .static, leader != current(record).host || devices[id]?.searching != nil {
                let hosts = (devices[id]?.searching ?? []).union([leader])
                setSearching(id, hosts)
                actions += fetch(leader)
            }
        case .unknown:
            break
        }
        setFacts(id, f)
    }

    /// Sets (nil: ends) a static group's search for its leader, keeping `searchingIDs` in step.
    private mutating func setSearching(_ id: DeviceID, _ hosts: Set<String>?) {
        devices[id, default: KnownDevice()].searching = hosts
        if hosts == nil { searchingIDs.remove(id) } else { searchingIDs.insert(id) }
    }

    /// Sets a device's facts, keeping `byFactsHost` in step.
    private mutating func setFacts(_ id: DeviceID, _ facts: Facts) {
        let old = devices[id]?.facts?.address?.host
        if let old, old != facts.address?.host {
            byFactsHost[old]?.remove(id)
            if byFactsHost[old]?.isEmpty == true { byFactsHost[old] = nil }
        }
        if let new = facts.address?.host { byFactsHost[new, default: []].insert(id) }
        devices[id, default: KnownDevice()].facts = facts
    }

    private mutating func fetch(_ host: String) -> [FactsAction] {
        guard !host.isEmpty, fetching.insert(host).inserted else { return [] }
        return [.fetch(host: host)]
    }

    /// A new connection's facts: a host asked within `reuseWindow` is not asked again (its
    /// answer, when it gave one, is used as it is).
    private mutating func ask(_ host: String) -> [FactsAction] {
        guard let last = lastAsked[host], now - last < Self.reuseWindow, !fetching.contains(host) else { return fetch(host) }
        guard let cached = answers[host], !failing.contains(host) else { return [] }
        return answered(host: host, .success(cached))
    }
}
