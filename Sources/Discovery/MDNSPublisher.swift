import CAvahi
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One DNS-SD service for `MDNSPublisher`, optionally on a host name with an address of its own.
public struct PublishedService: Sendable, Hashable {
    public var name: String
    public var type: String
    public var port: Int
    public var txt: [String: String]
    /// The SRV target (e.g. `"<dashed uuid>.local"`); nil = avahi's own host name.
    public var hostName: String?
    /// An address record for `hostName`, published with the service (nil: the host name's
    /// address is published by another service of this publisher, or elsewhere).
    public var address: String?
    /// Restricts the records to one interface (e.g. "lo"); nil = all.
    public var interface: String?

    public init(name: String, type: String = "_googlecast._tcp", port: Int, txt: [String: String],
                hostName: String? = nil, address: String? = nil, interface: String? = nil) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
        self.hostName = hostName
        self.address = address
        self.interface = interface
    }
}

/// Announces many DNS-SD services through one avahi-daemon connection and one poll thread, each
/// in an `AvahiEntryGroup` of its own (keyed by the caller), optionally with an address record
/// for its host name, as a LAN of real devices shows: each device's service points at a host
/// name of its own, which resolves to the device's address.
///
/// Name collisions are resolved the avahi way (`"Name #2"`, host `"name-2.local"`); a service
/// that points at a host name another entry renamed follows the new name. When the daemon
/// restarts or its host name changes, everything is announced again.
///
/// Threading: all mutable state is touched only with the threaded poll's lock held (every public
/// method takes it) or on the poll thread inside avahi callbacks (which hold it). That lock is
/// the confinement `@unchecked Sendable` stands on.
public final class MDNSPublisher: @unchecked Sendable {
    public struct Error: Swift.Error, CustomStringConvertible, Sendable {
        public var code: Int32
        public var description: String
    }

    /// One published service and its entry group.
    fileprivate final class Entry {
        unowned let owner: MDNSPublisher
        var service: PublishedService
        var interfaceIndex: AvahiIfIndex
        /// The instance and host name in use (differ from the requested ones after a collision).
        var name: String
        var hostName: String?
        var group: EntryGroupHandle?
        var established = false

        init(owner: MDNSPublisher, service: PublishedService, interfaceIndex: AvahiIfIndex) {
            self.owner = owner
            self.service = service
            self.interfaceIndex = interfaceIndex
            self.name = service.name
            self.hostName = service.hostName
        }
    }

    private let logger: Logger
    private let poll: ThreadedPoll
    private var client: ClientHandle?
    private var entries: [String: Entry] = [:]
    private var stopped = false

    /// Connects to avahi-daemon. Throws when it is not reachable.
    public init(logger: Logger = Logger(label: "cast2mqtt.discovery.publisher")) throws {
        self.logger = logger
        poll = try ThreadedPoll()
        var error: Int32 = 0
        // The poll thread is not running yet, so no lock is needed for this first call.
        guard let pointer = avahi_client_new(
            poll.api, AvahiClientFlags(0), mdnsPublisherClientCallback, Unmanaged.passUnretained(self).toOpaque(), &error
        ) else {
            throw Error(code: error, description: "avahi-daemon is not reachable: \(AvahiError(error, "avahi_client_new").message)")
        }
        client = ClientHandle(pointer)
        do {
            try poll.start()
        } catch {
            client = nil
            throw Error(code: (error as? AvahiError)?.code ?? -1, description: "\(error)")
        }
    }

    deinit { stop() }

    /// Announces `service` under `key`, replacing what was announced under it. When only the
    /// TXT record changed, it is updated in place (no goodbye and new announcement), as a real
    /// device does when `st`/`rs` change.
    public func publish(_ service: PublishedService, key: String) throws {
        guard (1...65_535).contains(service.port) else { throw Error(code: -1, description: "port \(service.port) out of range") }
        var index = AvahiIfIndex(AVAHI_IF_UNSPEC)
        if let interface = service.interface {
            let found = if_nametoindex(interface)
            guard found != 0 else { throw Error(code: -1, description: "no network interface \"\(interface)\"") }
            index = AvahiIfIndex(found)
        }
        if let address = service.address {
            var parsed = AvahiAddress()
            guard service.hostName != nil, avahi_address_parse(address, AvahiProtocol(AVAHI_PROTO_UNSPEC), &parsed) != nil else {
                throw Error(code: -1, description: "address \"\(address)\" needs a host name and must be an IP literal")
            }
        }
        try poll.withLock {
            guard !stopped else { throw Error(code: -1, description: "publisher stopped") }
            if let entry = entries[key] {
                // Nothing changed (`sync` hands over every service each time): nothing to do.
                if entry.service == service, entry.interfaceIndex == index, entry.group != nil { return }
                var same = entry.service
                same.txt = service.txt
                if same == service, entry.interfaceIndex == index, entry.established, let group = entry.group {
                    let list = AvahiText.list(service.txt)
                    defer { avahi_string_list_free(list) }
                    let rc = avahi_entry_group_update_service_txt_strlst(
                        group.pointer, index, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0), entry.name,
                        service.type, nil, list)
                    guard rc >= 0 else { throw Error(code: rc, description: AvahiError(rc, "update TXT").description) }
                    entry.service = service
                    return
                }
            }
            // A new instance name without an address record of its own (a group whose leader
            // moved) is announced before the old one says goodbye, as the new leader does;
            // otherwise the old records go first (they would collide with the new ones).
            let old = entries[key]
            if let old, old.service.name == service.name || service.address != nil {
                old.group = nil  // frees it: withdrawn
            }
            let entry = Entry(owner: self, service: service, interfaceIndex: index)
            entries[key] = entry
            defer { old?.group = nil }
            if let client, client.state == AVAHI_CLIENT_S_RUNNING { try register(entry, client.pointer) }
        }
    }

    /// Announces exactly `services` (by key): new ones are published, changed ones updated,
    /// missing ones withdrawn. Failures are logged, one line per service.
    public func sync(_ services: [String: PublishedService]) {
        let gone = poll.withLock { entries.keys.filter { services[$0] == nil } }
        for key in gone { withdraw(key: key) }
        for (key, service) in services.sorted(by: { $0.key < $1.key }) {
            do { try publish(service, key: key) } catch { logger.error("cannot announce \"\(service.name)\": \(error)") }
        }
    }

    /// Withdraws the service of `key` (a goodbye packet goes out).
    public func withdraw(key: String) {
        poll.withLock {
            entries[key]?.group = nil
            entries[key] = nil
        }
    }

    /// Withdraws everything, disconnects from avahi-daemon and stops the poll thread. Idempotent.
    public func stop() {
        poll.withLock {
            stopped = true
            for entry in entries.values { entry.group = nil }
            entries.removeAll()
            client = nil
        }
        poll.stop()
    }

    /// True once avahi confirmed the service of `key` (no collision pending).
    public func isEstablished(key: String) -> Bool { poll.withLock { entries[key]?.established ?? false } }

    /// The instance name in use for `key` (differs from the requested one after a collision).
    public func publishedName(key: String) -> String? { poll.withLock { entries[key]?.name } }

    /// The host name in use for `key`'s service.
    public func publishedHostName(key: String) -> String? { poll.withLock { entries[key]?.hostName } }

    // MARK: - With the poll lock held (or on the poll thread)

    /// The host name in use for a requested one (another entry may have renamed it).
    private func hostInUse(_ requested: String?) -> String? {
        guard let requested else { return nil }
        return entries.values.first { $0.service.hostName == requested && $0.service.address != nil }?.hostName ?? requested
    }

    fileprivate func register(_ entry: Entry, _ clientPointer: OpaquePointer) throws {
        if entry.group == nil {
            let userdata = Unmanaged.passUnretained(entry).toOpaque()
            guard let pointer = avahi_entry_group_new(clientPointer, mdnsPublisherGroupCallback, userdata) else {
                let code = avahi_client_errno(clientPointer)
                throw Error(code: code, description: AvahiError(code, "avahi_entry_group_new").description)
            }
            entry.group = EntryGroupHandle(pointer)
        }
        guard let group = entry.group else { return }
        let service = entry.service
        let hostBefore = entry.hostName
        defer {
            // This entry's host got a new name: services pointing at it follow.
            if service.address != nil, entry.hostName != hostBefore, let requested = service.hostName {
                reregisterServices(on: requested)
            }
        }
        let list = AvahiText.list(service.txt)
        defer { avahi_string_list_free(list) }
        for _ in 0..<16 {
            avahi_entry_group_reset(group.pointer)
            entry.established = false
            if let host = entry.hostName, let address = service.address {
                var parsed = AvahiAddress()
                guard avahi_address_parse(address, AvahiProtocol(AVAHI_PROTO_UNSPEC), &parsed) != nil else {
                    throw Error(code: -1, description: "address \"\(address)\" is not an IP literal")
                }
                let rc = avahi_entry_group_add_address(group.pointer, entry.interfaceIndex, AvahiProtocol(AVAHI_PROTO_UNSPEC),
                                                       AVAHI_PUBLISH_NO_REVERSE, host, &parsed)
                if rc == Int32(AVAHI_ERR_COLLISION) {
                    entry.hostName = Self.alternativeHost(host)
                    continue
                }
                guard rc >= 0 else { throw Error(code: rc, description: AvahiError(rc, "add address \(host)").description) }
            }
            let target = service.address == nil ? hostInUse(service.hostName) : entry.hostName
            let rc = avahi_entry_group_add_service_strlst(
                group.pointer, entry.interfaceIndex, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                entry.name, service.type, nil, target, UInt16(service.port), list)
            if rc == Int32(AVAHI_ERR_COLLISION) {
                entry.name = Self.alternativeName(entry.name)
                continue
            }
            guard rc >= 0 else { throw Error(code: rc, description: AvahiError(rc, "add service \"\(entry.name)\"").description) }
            let committed = avahi_entry_group_commit(group.pointer)
            guard committed >= 0 else { throw Error(code: committed, description: AvahiError(committed, "commit").description) }
            return
        }
        throw Error(code: Int32(AVAHI_ERR_COLLISION), description: "no free name near \"\(service.name)\"")
    }

    /// Re-registers every entry whose service points at `hostName` without publishing it.
    private func reregisterServices(on hostName: String) {
        guard let client else { return }
        for entry in entries.values where entry.service.address == nil && entry.service.hostName == hostName {
            do { try register(entry, client.pointer) } catch { logger.error("Could not publish \"\(entry.name)\": \(error)") }
        }
    }

    static func alternativeName(_ name: String) -> String {
        guard let next = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(next) }
        return String(cString: next)
    }

    /// `name-2.local` for `name.local` (avahi's rule on the first label).
    static func alternativeHost(_ host: String) -> String {
        let label = host.split(separator: ".", maxSplits: 1).first.map(String.init) ?? host
        let domain = host.dropFirst(label.count)
        guard let next = avahi_alternative_host_name(label) else { return label + "-2" + domain }
        defer { avahi_free(next) }
        return String(cString: next) + domain
    }

    fileprivate func clientChanged(_ pointer: OpaquePointer?, _ state: AvahiClientState) {
        guard !stopped, let pointer else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            for entry in entries.values.sorted(by: { ($0.service.address == nil ? 1 : 0) < ($1.service.address == nil ? 1 : 0) }) {
                do { try register(entry, pointer) } catch { logger.error("Could not publish \"\(entry.name)\": \(error)") }
            }
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            for entry in entries.values {
                entry.established = false
                if let group = entry.group { avahi_entry_group_reset(group.pointer) }
            }
        case AVAHI_CLIENT_FAILURE:
            for entry in entries.values { entry.established = false }
            logger.error("avahi client failed: \(AvahiError(avahi_client_errno(pointer), "publisher"))")
        default:
            break
        }
    }

    fileprivate func groupChanged(_ entry: Entry, _ state: AvahiEntryGroupState) {
        guard !stopped, entry.group != nil else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            entry.established = true
            logger.debug("Published \"\(entry.name)\"")
        case AVAHI_ENTRY_GROUP_COLLISION:
            // A record collided with another host's: new names for the service and its host.
            guard let client else { return }
            let oldHost = entry.service.address == nil ? nil : entry.hostName
            entry.name = Self.alternativeName(entry.name)
            if let oldHost { entry.hostName = Self.alternativeHost(oldHost) }
            logger.notice("Name collision; renaming to \"\(entry.name)\"\(oldHost == nil ? "" : " on \(entry.hostName ?? "")")")
            do { try register(entry, client.pointer) } catch { logger.error("Could not publish \"\(entry.name)\": \(error)") }
            if let requested = entry.service.hostName, oldHost != nil { reregisterServices(on: requested) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            entry.established = false
            logger.error("Publishing \"\(entry.name)\" failed: \(AvahiError(client.map(\.errno) ?? -1, "entry group"))")
        default:
            break
        }
    }
}

private func mdnsPublisherClientCallback(_ client: OpaquePointer?, _ state: AvahiClientState,
                                         _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    Unmanaged<MDNSPublisher>.fromOpaque(userdata).takeUnretainedValue().clientChanged(client, state)
}

private func mdnsPublisherGroupCallback(_ group: OpaquePointer?, _ state: AvahiEntryGroupState,
                                        _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    let entry = Unmanaged<MDNSPublisher.Entry>.fromOpaque(userdata).takeUnretainedValue()
    entry.owner.groupChanged(entry, state)
}
