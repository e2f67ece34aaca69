import CAvahi
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Announces one DNS-SD service through avahi-daemon (an `AvahiEntryGroup`), e.g. a simulated
/// Cast device: `publish(name:port:txt:)`, `withdraw()`, `stop()`.
///
/// Name collisions are resolved the avahi way (`"Name #2"`); `publishedName` tells the name in use.
/// When the daemon restarts or its host name changes, the service is announced again.
/// Threading: every method takes the threaded poll's lock; avahi callbacks run on the poll thread.
public final class ServicePublisher: @unchecked Sendable {
    public struct Error: Swift.Error, CustomStringConvertible, Sendable {
        public var code: Int32
        public var description: String
    }

    private struct Service {
        var name: String
        var type: String
        var port: Int
        var txt: [String: String]
        var interfaceIndex: AvahiIfIndex
    }

    private let logger: Logger
    private let poll: ThreadedPoll
    private var client: ClientHandle?
    private var group: EntryGroupHandle?
    private var service: Service?
    private var requestedName: String?
    private var established = false
    private var stopped = false

    /// Connects to avahi-daemon. Throws when it is not reachable.
    public init(logger: Logger = Logger(label: "cast2mqtt.discovery.publisher")) throws {
        self.logger = logger
        poll = try ThreadedPoll()
        var error: Int32 = 0
        // The poll thread is not running yet, so no lock is needed for this first call.
        guard let pointer = avahi_client_new(
            poll.api, AvahiClientFlags(0), publisherClientCallback, Unmanaged.passUnretained(self).toOpaque(), &error
        ) else {
            let failure = AvahiError(error, "avahi_client_new")
            throw Error(code: error, description: "avahi-daemon is not reachable: \(failure.message)")
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

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Announces `name` (an instance of `type`) on `port` with `txt`, replacing what this publisher
    /// announced before. Publishing the same name, type, port and interface again only updates
    /// the TXT record (no goodbye/re-announce). `interface` restricts it to one interface (e.g. "lo"); nil = all.
    public func publish(
        name: String, port: Int, txt: [String: String],
        type: String = "_googlecast._tcp", interface: String? = nil
    ) throws {
        var index = AvahiIfIndex(AVAHI_IF_UNSPEC)
        if let interface {
            let found = if_nametoindex(interface)
            guard found != 0 else { throw Error(code: -1, description: "no network interface \"\(interface)\"") }
            index = AvahiIfIndex(found)
        }
        guard (1...65_535).contains(port) else { throw Error(code: -1, description: "port \(port) out of range") }
        try poll.withLock {
            guard !stopped, let client else { throw Error(code: -1, description: "publisher stopped") }
            // Same service, new TXT (a device changing `st`/`rs`): update in place, as a real
            // device does, instead of withdrawing and announcing again.
            if let current = service, let group, established, current.type == type, current.port == port,
               current.interfaceIndex == index, current.name == name || requestedName == name {
                let list = AvahiText.list(txt)
                defer { avahi_string_list_free(list) }
                let rc = avahi_entry_group_update_service_txt_strlst(
                    group.pointer, index, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                    current.name, type, nil, list)
                guard rc >= 0 else { throw Error(code: rc, description: AvahiError(rc, "update TXT").description) }
                service?.txt = txt
                return
            }
            requestedName = name
            service = Service(name: name, type: type, port: port, txt: txt, interfaceIndex: index)
            if client.state == AVAHI_CLIENT_S_RUNNING {
                try register(client.pointer)
            }
        }
    }

    /// Removes the announcement (a goodbye packet goes out). The publisher can publish again.
    public func withdraw() {
        poll.withLock {
            service = nil
            established = false
            if let group { avahi_entry_group_reset(group.pointer) }
        }
    }

    /// Withdraws, disconnects from avahi-daemon and stops the poll thread. Idempotent.
    public func stop() {
        poll.withLock {
            stopped = true
            service = nil
            established = false
            group = nil
            client = nil
        }
        poll.stop()
    }

    /// True once avahi confirmed the announcement (no collision).
    public var isEstablished: Bool { poll.withLock { established } }

    /// The instance name in use (differs from the requested one after a collision).
    public var publishedName: String? { poll.withLock { service?.name } }

    /// The TXT keys a real Cast device publishes, derived from its id (32 hex digits):
    /// `id`, `cd` (upper-case id), `rm` (16 hex), `ve=05`, `md`, `ic=/setup/icon.png`, `fn`, `ca`,
    /// `st`, `bs` (12 hex), `nf=1`, `rs`.
    public static func castTXT(
        id: String,
        name: String,
        model: String = "Chromecast",
        capabilities: CastCapabilities = [.videoOut, .audioOut, .attenuationVolume],
        status: Int = 0,
        statusText: String = ""
    ) -> [String: String] {
        let digest = FNV1a128.hex(Array(id.utf8))
        return [
            "id": id,
            "cd": id.uppercased(),
            "rm": String(digest.prefix(16)).uppercased(),
            "ve": "05",
            "md": model,
            "ic": "/setup/icon.png",
            "fn": name,
            "ca": String(capabilities.rawValue),
            "st": String(status),
            "bs": String(digest.suffix(12)).uppercased(),
            "nf": "1",
            "rs": statusText,
        ]
    }

    // MARK: - With the poll lock held (or on the poll thread)

    private func register(_ clientPointer: OpaquePointer) throws {
        guard let current = service else { return }
        if group == nil {
            guard let pointer = avahi_entry_group_new(clientPointer, publisherGroupCallback, userdata) else {
                let code = avahi_client_errno(clientPointer)
                throw Error(code: code, description: AvahiError(code, "avahi_entry_group_new").description)
            }
            group = EntryGroupHandle(pointer)
        }
        guard let group else { return }
        avahi_entry_group_reset(group.pointer)
        established = false
        var name = current.name
        let list = AvahiText.list(current.txt)
        defer { avahi_string_list_free(list) }
        for _ in 0..<16 {
            let rc = avahi_entry_group_add_service_strlst(
                group.pointer, current.interfaceIndex, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                name, current.type, nil, nil, UInt16(current.port), list)
            if rc == Int32(AVAHI_ERR_COLLISION) {
                name = Self.alternative(name)
                continue
            }
            guard rc >= 0 else { throw Error(code: rc, description: AvahiError(rc, "add service \"\(name)\"").description) }
            service?.name = name
            let committed = avahi_entry_group_commit(group.pointer)
            guard committed >= 0 else { throw Error(code: committed, description: AvahiError(committed, "commit").description) }
            return
        }
        throw Error(code: Int32(AVAHI_ERR_COLLISION), description: "no free service name near \"\(current.name)\"")
    }

    private static func alternative(_ name: String) -> String {
        guard let next = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(next) }
        return String(cString: next)
    }

    fileprivate func clientChanged(_ pointer: OpaquePointer?, _ state: AvahiClientState) {
        guard !stopped, let pointer else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            do { try register(pointer) } catch { logger.error("Could not publish service: \(error)") }
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            established = false
            if let group { avahi_entry_group_reset(group.pointer) }
        case AVAHI_CLIENT_FAILURE:
            established = false
            logger.error("avahi client failed: \(AvahiError(avahi_client_errno(pointer), "publisher"))")
        default:
            break
        }
    }

    fileprivate func groupChanged(_ state: AvahiEntryGroupState) {
        guard !stopped else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            established = true
            logger.debug("Published \"\(service?.name ?? "?")\"")
        case AVAHI_ENTRY_GROUP_COLLISION:
            guard var current = service, let client else { return }
            current.name = Self.alternative(current.name)
            logger.notice("Service name collision; renaming to \"\(current.name)\"")
            service = current
            do { try register(client.pointer) } catch { logger.error("Could not publish service: \(error)") }
        case AVAHI_ENTRY_GROUP_FAILURE:
            established = false
            logger.error("Publishing failed: \(AvahiError(client.map(\.errno) ?? -1, "entry group"))")
        default:
            break
        }
    }
}

private func publisherClientCallback(_ client: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    Unmanaged<ServicePublisher>.fromOpaque(userdata).takeUnretainedValue().clientChanged(client, state)
}

private func publisherGroupCallback(_ group: OpaquePointer?, _ state: AvahiEntryGroupState, _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    Unmanaged<ServicePublisher>.fromOpaque(userdata).takeUnretainedValue().groupChanged(state)
}
