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
/// - A group seen over mDNS for the first time (not remembered from an earlier run) waits for
///   its leader's `eureka_info`: a dynamic (temporary) group is followed for its members and is
///   no device; without an answer it counts as a static group.
struct DeviceFacts {
    /// What one answer taught about a device.
    struct Facts: Equatable {
        var name: String?
        var model: String?
        var manufacturer: String?
        var castType: Discovery.CastType?
        /// Where the group's endpoint is now (its leader's host and `cast_port`).
        var address: Address?
    }

    struct Address: Equatable, Hashable {
        var host: String
        var port: Int
    }

    let statics: [DeviceID: StaticDevice]
    let filter: DeviceFilter

    /// Every device's record as discovery last gave it (or as found through `eureka_info`).
    private(set) var seen: [DeviceID: CastDeviceRecord] = [:]
    /// The ids in `seen` by host (an answer concerns the devices at its host, not the fleet).
    private var byHost: [String: Set<DeviceID>] = [:]
    /// Waiting for their host's answer before anyone else hears of them.
    private(set) var held: [DeviceID: CastDeviceRecord] = [:]
    /// Passed on at least once: never held again.
    private var settled: Set<DeviceID> = []
    private(set) var facts: [DeviceID: Facts] = [:]
    private(set) var dynamicGroups: Set<DeviceID> = []
    /// Device id → the static entry it came from (its `configuredID`).
    private(set) var configured: [DeviceID: DeviceID] = [:]
    /// The stable id of a device given by its address → the id its `eureka_info` gave it.
    private(set) var aliases: [DeviceID: DeviceID] = [:]
    /// The newest answer of each host (bounded by the hosts the bridge knows).
    private var answers: [String: EurekaInfo] = [:]
    private(set) var fetching: Set<String> = []
    /// The connection generation each static device was last asked for.
    private var askedForGeneration: [DeviceID: Int] = [:]
    /// Static groups looking for their leader: the hosts asked so far.
    private(set) var searching: [DeviceID: Set<String>] = [:]
    /// When each host last answered or failed (many devices behind one address, as a test fleet
    /// has them, are not asked once each), and the hosts whose last fetch failed (logged once).
    private var lastAsked: [String: ContinuousClock.Instant] = [:]
    private var failing: Set<String> = []
    /// The time of the input being handled (set by the runner; tests set it).
    var now = ContinuousClock.now
    /// A host asked less than this long ago is not asked again for a new connection.
    static let reuseWindow: Duration = .seconds(10)

    init(statics: [StaticDevice], filter: DeviceFilter) {
        var byID: [DeviceID: StaticDevice] = [:]
        for device in statics where byID[device.effectiveID] == nil { byID[device.effectiveID] = device }
        self.statics = byID
        self.filter = filter
    }

    // MARK: - Inputs

    /// A discovery event. `known`: the bridge knew the device in an earlier run (such a group is
    /// not held: it was no dynamic group then).
    mutating func discovered(_ event: DiscoveryEvent, known: (DeviceID) -> Bool) -> [FactsAction] {
        switch event {
        case .added(var record), .updated(var record):
            let added = if case .added = event { true } else { false }
            if let real = aliases[record.id] { record.id = real }
            see(record.id, record)
            if held[record.id] != nil || shouldHold(record, known: known) {
                held[record.id] = record
                if let cached = classifying(record) { return answered(host: record.host, .success(cached)) }
                return fetch(record.host)
            }
            settled.insert(record.id)
            var actions = [pass(record, added: added)]
            if record.source == .static, askedForGeneration[record.id] == nil {
                // The first connection's facts are asked for right away.
                askedForGeneration[record.id] = 1
                actions += ask(current(record).host)
            }
            return actions
        case .removed(let raw):
            let id = aliases[raw] ?? raw
            if held.removeValue(forKey: id) != nil {
                see(id, nil)
                return []
            }
            if dynamicGroups.remove(id) != nil {
                see(id, nil)
                return [.removeDynamic(id)]
            }
            return [.discovery(.removed(id: id), dynamic: false, configuredID: nil)]
        }
    }

    /// A device's snapshot reached the bridge: a static device that came online on a new
    /// connection is asked again; a static group that went offline looks for its leader at its
    /// host and its members' hosts.
    mutating func snapshot(_ id: DeviceID, _ snapshot: DeviceSnapshot) -> [FactsAction] {
        guard let record = seen[id], record.source == .static else { return [] }
        if snapshot.isOnline {
            searching[id] = nil
            guard snapshot.generation > askedForGeneration[id] ?? 0 else { return [] }
            askedForGeneration[id] = snapshot.generation
            return ask(current(record).host)
        }
        guard case .offline = snapshot.link, current(record).castType == .group, searching[id] == nil else { return [] }
        var hosts = [current(record).host]
        for member in snapshot.multizone?.members ?? [] {
            guard let memberID = TXTRecordParser.normalizeID(member.deviceId), let host = seen[memberID]?.host else { continue }
            if !hosts.contains(host) { hosts.append(host) }
        }
        searching[id] = Set(hosts)
        return [.log("\(record.friendlyName) (\(id)): a static group went offline; asking \(hosts.joined(separator: ", ")) where its leader is now")]
            + hosts.flatMap { fetch($0) }
    }

    /// The answer (or failure) of `host`'s `eureka_info`.
    mutating func answered(host: String, _ result: Result<EurekaInfo, EurekaFetchError>) -> [FactsAction] {
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
        for id in held.keys.sorted() {
            guard var record = held[id], record.host == host else { continue }
            held[id] = nil
            if let info, isAddressOnly(record), let identified = identify(record, info) {
                see(record.id, nil)
                aliases[record.id] = identified.id
                configured[identified.id] = record.id
                record = identified
                see(record.id, record)
            }
            if let info, info.dynamicGroups.contains(where: { $0.id == record.id }), record.source == .mdns {
                dynamicGroups.insert(record.id)
            }
            settled.insert(record.id)
            if let info { learn(record, info, host: host, &actions) }
            actions.append(pass(record, added: true))
            if record.source == .static {
                askedForGeneration[record.id] = 1
                // Its own host is asked when it is not the one that answered (a group's leader moved).
                if current(record).host != host { actions += fetch(current(record).host) }
            }
        }
        guard let info else { return actions }
        // Facts of the static devices at this host, and of the groups it names.
        let named = (info.groups + info.dynamicGroups).compactMap(\.id)
        let moved = facts.compactMap { $0.value.address?.host == host ? $0.key : nil }
        for id in Set(byHost[host] ?? []).union(named).union(moved).sorted() {
            guard let record = seen[id], record.source == .static, held[id] == nil,
                  record.host == host || current(record).host == host || isHostedHere(id, info) else { continue }
            let before = facts[id]
            let beforeType = current(record).castType
            learn(record, info, host: host, &actions)
            guard facts[id] != before else { continue }
            actions.append(pass(record, added: false))
            if beforeType != .group, current(record).castType == .group { actions.append(.becomeGroup(id)) }
        }
        // Groups this host leads that nobody configured or announced: found through a static device.
        if let hostOwner = (byHost[host] ?? []).compactMap({ seen[$0] }).filter({ $0.source == .static && configured[$0.id] == nil })
            .min(by: { $0.id < $1.id }) {
            for group in info.groups {
                guard group.leader == .thisDevice, let gid = group.id, let port = group.castPort, seen[gid] == nil,
                      held[gid] == nil, filter.allows(id: gid, friendlyName: group.name ?? gid) else { continue }
                let record = CastDeviceRecord(
                    id: gid, friendlyName: group.name ?? gid, model: "Google Cast Group", manufacturer: "Google Inc.",
                    host: host, port: port, capabilities: [.audioOut, .multizoneGroup, .masterVolume], castType: .group,
                    source: .static)
                see(gid, record)
                settled.insert(gid)
                configured[gid] = configured[hostOwner.id] ?? hostOwner.id
                askedForGeneration[gid] = 1
                actions.append(.log("group \(record.friendlyName) (\(gid)) found at \(host):\(port) through the eureka_info of \(hostOwner.friendlyName)"))
                actions.append(pass(record, added: true))
            }
        }
        return actions
    }

    /// Every static group still looking for its leader asks the hosts it asked before again
    /// (called every `searchInterval`: a leader may come back later than the group went away).
    mutating func retrySearches() -> [FactsAction] {
        searching.keys.sorted().flatMap { id in (searching[id] ?? []).sorted().flatMap { fetch($0) } }
    }

    /// How often a static group that lost its leader asks again (pychromecast polls its known
    /// hosts every 30 s).
    static let searchInterval: Duration = .seconds(30)

    /// Sets (or with nil removes) what is known of a device, keeping `byHost` in step.
    private mutating func see(_ id: DeviceID, _ record: CastDeviceRecord?) {
        if let old = seen[id]?.host, old != record?.host {
            byHost[old]?.remove(id)
            if byHost[old]?.isEmpty == true { byHost[old] = nil }
        }
        if let record { byHost[record.host, default: []].insert(id) }
        seen[id] = record
    }

    // MARK: - Rules

    /// The record as the fleet and the bridge should see it: the facts applied (a configured
    /// name and what mDNS says win) and a moved group at its leader.
    func current(_ record: CastDeviceRecord) -> CastDeviceRecord {
        var r = record
        guard let f = facts[r.id] else { return r }
        let entry = statics[configured[r.id] ?? r.id]
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
        return .discovery(added ? .added(r) : .updated(r), dynamic: dynamicGroups.contains(r.id), configuredID: configured[r.id])
    }

    private func isAddressOnly(_ record: CastDeviceRecord) -> Bool {
        guard record.source == .static, let entry = statics[record.id] else { return false }
        return entry.id.flatMap(TXTRecordParser.normalizeID) == nil && aliases[record.id] == nil
    }

    /// A static device whose entry names it not, and that mDNS has not named either: its topic
    /// name is the slug of its friendly name, which only its `eureka_info` knows.
    private func isUnnamed(_ record: CastDeviceRecord) -> Bool {
        guard record.source == .static, record.serviceName == nil, let entry = statics[configured[record.id] ?? record.id]
        else { return false }
        return entry.name == nil
    }

    private func shouldHold(_ record: CastDeviceRecord, known: (DeviceID) -> Bool) -> Bool {
        guard !settled.contains(record.id) else { return false }
        if isAddressOnly(record) || isUnnamed(record) { return true }
        return record.source == .mdns && record.castType == .group && !known(record.id)
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
        info.groups.contains { $0.id == id && ($0.leader == .thisDevice || searching[id] != nil) }
    }

    /// What `info` (from `host`) says about `record`'s device: its own facts, or a group's.
    private mutating func learn(_ record: CastDeviceRecord, _ info: EurekaInfo, host: String, _ actions: inout [FactsAction]) {
        let id = record.id
        if info.id == id {
            facts[id] = Facts(name: info.friendlyName, model: info.model, manufacturer: info.manufacturer,
                              castType: info.displaySupported.map { $0 ? .video : .audio })
            return
        }
        guard let group = (info.groups + info.dynamicGroups).first(where: { $0.id == id }) else { return }
        var f = facts[id] ?? Facts()
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
            if record.source == .static, leader != current(record).host || searching[id] != nil {
                searching[id, default: []].insert(leader)
                actions += fetch(leader)
            }
        case .unknown:
            break
        }
        facts[id] = f
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

/// What `DeviceFacts` asks the daemon to do.
enum FactsAction: Equatable {
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
