import CAvahi

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Thin owners of avahi C handles: one final class per handle, freed in deinit. None of these are
// thread-safe: they are created, used and released either on the threaded poll's own thread
// (inside avahi callbacks, where avahi holds the poll lock) or by another thread that holds the
// poll lock (`ThreadedPoll.withLock`). Nothing here appears in public API.

/// An avahi error code with the context it happened in.
struct AvahiError: Error, CustomStringConvertible, Sendable {
    var code: Int32
    var context: String

    init(_ code: Int32, _ context: String) {
        self.code = code
        self.context = context
    }

    var message: String { String(cString: avahi_strerror(code)) }
    var description: String { "\(context): \(message)" }
}

/// Owns an `AvahiThreadedPoll`: the event loop thread every avahi callback runs on.
final class ThreadedPoll {
    let pointer: OpaquePointer
    private var running = false

    init() throws {
        guard let pointer = avahi_threaded_poll_new() else {
            throw AvahiError(Int32(AVAHI_ERR_NO_MEMORY), "avahi_threaded_poll_new")
        }
        self.pointer = pointer
    }

    var api: UnsafePointer<AvahiPoll> { avahi_threaded_poll_get(pointer) }

    func start() throws {
        guard !running else { return }
        let rc = avahi_threaded_poll_start(pointer)
        guard rc >= 0 else { throw AvahiError(rc, "avahi_threaded_poll_start") }
        running = true
    }

    /// Runs `body` holding the poll lock. Never call from the poll thread (avahi callbacks already
    /// hold the lock there; taking it again deadlocks).
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        avahi_threaded_poll_lock(pointer)
        defer { avahi_threaded_poll_unlock(pointer) }
        return try body()
    }

    /// Stops and joins the poll thread. Must not be called from the poll thread or with the lock held.
    func stop() {
        guard running else { return }
        running = false
        avahi_threaded_poll_stop(pointer)
    }

    deinit {
        stop()
        avahi_threaded_poll_free(pointer)
    }
}

/// Owns an `AvahiClient` (the D-Bus connection to avahi-daemon).
final class ClientHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    var state: AvahiClientState { avahi_client_get_state(pointer) }
    var errno: Int32 { avahi_client_errno(pointer) }
    deinit { avahi_client_free(pointer) }
}

/// Owns an `AvahiServiceBrowser`.
final class ServiceBrowserHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { avahi_service_browser_free(pointer) }
}

/// Owns an `AvahiServiceResolver`. It stays alive while the service exists and reports again
/// when the service's address or TXT record changes.
final class ServiceResolverHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { avahi_service_resolver_free(pointer) }
}

/// Owns an `AvahiEntryGroup` (published records).
final class EntryGroupHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { avahi_entry_group_free(pointer) }
}

/// Owns an `AvahiTimeout` of a poll API.
final class TimeoutHandle {
    let pointer: OpaquePointer
    let api: UnsafePointer<AvahiPoll>

    /// Schedules `callback` after `milliseconds`; nil when the poll refused.
    init?(api: UnsafePointer<AvahiPoll>, milliseconds: UInt32, callback: AvahiTimeoutCallback, userdata: UnsafeMutableRawPointer) {
        var tv = timeval()
        avahi_elapse_time(&tv, milliseconds, 0)
        guard let make = api.pointee.timeout_new, let pointer = make(api, &tv, callback, userdata) else { return nil }
        self.pointer = pointer
        self.api = api
    }

    deinit { api.pointee.timeout_free?(pointer) }
}

enum AvahiText {
    /// The strings of a TXT record, as raw bytes, in the order avahi hands them over.
    static func strings(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var node = list
        var guardCount = 0
        while let current = node, guardCount < 4096 {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                out.append(Array(UnsafeBufferPointer(start: text, count: size)))
            }
            node = avahi_string_list_get_next(current)
            guardCount += 1
        }
        // avahi stores the list reversed; give it back in record order.
        return out.reversed()
    }

    /// Builds an avahi string list from key=value pairs (sorted by key, for a stable record).
    /// The caller frees it with `avahi_string_list_free`.
    static func list(_ txt: [String: String]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>?
        for (key, value) in txt.sorted(by: { $0.key < $1.key }).reversed() {
            list = avahi_string_list_add_pair(list, key, value)
        }
        return list
    }

    /// An address as an IP literal; IPv6 link-local addresses get `%interface`.
    static func address(_ address: UnsafePointer<AvahiAddress>, interface: String?) -> String {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX) + 1)
        avahi_address_snprint(&buffer, buffer.count, address)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6),
           text.lowercased().hasPrefix("fe80:"), let interface {
            return "\(text)%\(interface)"
        }
        return text
    }

    static func interfaceName(_ index: AvahiIfIndex) -> String? {
        guard index >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
