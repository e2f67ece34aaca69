import CAvahi

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Browses and resolves one DNS-SD service type with avahi and reports what it sees as `Event`s.
///
/// Threading: all mutable state is touched only on the threaded poll's thread (inside avahi
/// callbacks, where avahi holds the poll lock) or by `start`/`stop`/`rescan`, which take the poll
/// lock first. `sink` runs on the poll thread with the lock held: it must not call back into this
/// class. That is why the class can be `@unchecked Sendable`.
///
/// Availability: the client is created with `AVAHI_CLIENT_NO_FAIL`, so a missing avahi-daemon
/// puts it in CONNECTING and avahi reconnects by itself when the daemon appears. When even that
/// fails (no system bus) or the client fails later, the client is freed and re-created after a
/// delay that doubles up to `retryMax`.
final class AvahiBrowser: @unchecked Sendable {
    enum Event: Sendable {
        /// The browser saw an instance (resolution follows).
        case browsed(ServiceInstance)
        case resolved(ServiceInstance, CastDeviceRecord)
        /// The instance resolved but its TXT record is unusable.
        case skipped(ServiceInstance, TXTParseError)
        case resolveFailed(ServiceInstance, String)
        case removed(ServiceInstance)
        /// The browser finished its initial sweep.
        case allForNow
        /// avahi-daemon is not reachable (reason); browsing is paused.
        case unavailable(String)
        /// avahi-daemon is reachable and browsing.
        case available
        /// `rescan()` dropped the browser; a new sweep follows (ending with `allForNow`).
        case rescanning
    }

    struct Options: Sendable {
        var serviceType = "_googlecast._tcp"
        /// Interface names to accept; empty = all.
        var interfaces: [String] = []
        var retryInitialMilliseconds: UInt32 = 1_000
        var retryMaxMilliseconds: UInt32 = 30_000
        /// Test hook: called before each client creation; false simulates avahi_client_new failing
        /// with "Daemon not running".
        var connectHook: (@Sendable () -> Bool)?
    }

    private let options: Options
    private let sink: @Sendable (Event) -> Void
    private let poll: ThreadedPoll
    private let allowedInterfaces: Set<String>
    private var client: ClientHandle?
    private var browser: ServiceBrowserHandle?
    private var resolvers: [ServiceInstance: ServiceResolverHandle] = [:]
    private var retryTimer: TimeoutHandle?
    private var retryDelay: UInt32
    private var started = false
    private var stopped = false

    init(options: Options, sink: @escaping @Sendable (Event) -> Void) throws {
        self.options = options
        self.sink = sink
        self.allowedInterfaces = Set(options.interfaces)
        self.retryDelay = options.retryInitialMilliseconds
        self.poll = try ThreadedPoll()
    }

    deinit { stop() }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Starts the poll thread and connects. Safe to call once; later calls do nothing.
    func start() throws {
        try poll.start()
        poll.withLock {
            guard !started, !stopped else { return }
            started = true
            connect()
        }
    }

    /// Frees every avahi object, then stops and joins the poll thread. Idempotent.
    func stop() {
        poll.withLock {
            stopped = true
            retryTimer = nil
            dropBrowsing()
            client = nil
        }
        poll.stop()
    }

    /// Drops the browser and resolvers and browses again from scratch.
    func rescan() {
        poll.withLock {
            guard !stopped, let client, client.state == AVAHI_CLIENT_S_RUNNING else { return }
            dropBrowsing()
            sink(.rescanning)
            startBrowsing(client.pointer)
        }
    }

    // MARK: - On the poll thread (or with the lock held)

    private func connect() {
        guard !stopped else { return }
        retryTimer = nil
        dropBrowsing()
        client = nil
        if let hook = options.connectHook, !hook() {
            failed(AvahiError(Int32(AVAHI_ERR_NO_DAEMON), "avahi_client_new").description)
            return
        }
        var error: Int32 = 0
        guard let pointer = avahi_client_new(
            poll.api, AVAHI_CLIENT_NO_FAIL, browserClientCallback, userdata, &error
        ) else {
            failed(AvahiError(error, "avahi_client_new").description)
            return
        }
        client = ClientHandle(pointer)
        // The first state callback ran inside avahi_client_new; if it was RUNNING, browsing started.
    }

    private func failed(_ reason: String) {
        dropBrowsing()
        sink(.unavailable(reason))
        scheduleRetry()
    }

    private func scheduleRetry() {
        guard !stopped else { return }
        let delay = retryDelay
        retryDelay = min(retryDelay.multipliedReportingOverflow(by: 2).partialValue, options.retryMaxMilliseconds)
        retryTimer = TimeoutHandle(api: poll.api, milliseconds: delay, callback: browserRetryCallback, userdata: userdata)
    }

    private func dropBrowsing() {
        resolvers.removeAll()
        browser = nil
    }

    private func startBrowsing(_ clientPointer: OpaquePointer) {
        guard browser == nil, !stopped else { return }
        guard let pointer = avahi_service_browser_new(
            clientPointer, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
            options.serviceType, nil, AvahiLookupFlags(0), browserCallback, userdata
        ) else {
            failed(AvahiError(avahi_client_errno(clientPointer), "avahi_service_browser_new").description)
            return
        }
        browser = ServiceBrowserHandle(pointer)
    }

    fileprivate func clientChanged(_ pointer: OpaquePointer?, _ state: AvahiClientState) {
        guard !stopped, let pointer else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            retryDelay = options.retryInitialMilliseconds
            sink(.available)
            startBrowsing(pointer)
        case AVAHI_CLIENT_CONNECTING:
            // NO_FAIL: the daemon is gone (or not there yet); avahi reconnects by itself.
            dropBrowsing()
            sink(.unavailable("avahi-daemon is not running (waiting for it)"))
        case AVAHI_CLIENT_FAILURE:
            // Do not free the client inside its own callback: the retry timer does.
            failed(AvahiError(avahi_client_errno(pointer), "avahi client").description)
        default:
            break  // REGISTERING / COLLISION concern the daemon's host name, not browsing.
        }
    }

    fileprivate func retryFired() {
        retryTimer = nil
        connect()
    }

    fileprivate func browserEvent(
        _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent,
        _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?
    ) {
        guard !stopped else { return }
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            guard let name, let type, let domain else { return }
            let instance = ServiceInstance(
                interfaceIndex: interface, isIPv6: proto == AvahiProtocol(AVAHI_PROTO_INET6),
                name: String(cString: name), type: String(cString: type), domain: String(cString: domain))
            if !allowedInterfaces.isEmpty {
                guard let ifName = AvahiText.interfaceName(interface), allowedInterfaces.contains(ifName) else { return }
            }
            if event == AVAHI_BROWSER_REMOVE {
                resolvers[instance] = nil
                sink(.removed(instance))
                return
            }
            sink(.browsed(instance))
            guard resolvers[instance] == nil, let client else { return }
            // Resolve the address in the family the instance was seen on, so each (interface,
            // protocol) instance carries its own address and the merger can choose by preference.
            if let pointer = avahi_service_resolver_new(
                client.pointer, interface, proto, name, type, domain, proto,
                AvahiLookupFlags(0), resolverCallback, userdata
            ) {
                resolvers[instance] = ServiceResolverHandle(pointer)
            } else {
                sink(.resolveFailed(instance, AvahiError(client.errno, "avahi_service_resolver_new").description))
            }
        case AVAHI_BROWSER_ALL_FOR_NOW:
            sink(.allForNow)
        case AVAHI_BROWSER_FAILURE:
            let code = client.map(\.errno) ?? Int32(AVAHI_ERR_FAILURE)
            failed(AvahiError(code, "avahi service browser").description)
        default:
            break  // CACHE_EXHAUSTED
        }
    }

    fileprivate func resolverEvent(
        _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiResolverEvent,
        _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
        _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16, _ txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard !stopped, let name, let type, let domain else { return }
        let instance = ServiceInstance(
            interfaceIndex: interface, isIPv6: proto == AvahiProtocol(AVAHI_PROTO_INET6),
            name: String(cString: name), type: String(cString: type), domain: String(cString: domain))
        guard resolvers[instance] != nil else { return }
        guard event == AVAHI_RESOLVER_FOUND, let address else {
            let code = client.map(\.errno) ?? Int32(AVAHI_ERR_FAILURE)
            sink(.resolveFailed(instance, AvahiError(code, "resolve").description))
            return
        }
        let ifName = AvahiText.interfaceName(interface)
        let host = AvahiText.address(address, interface: ifName)
        let pairs = TXTRecordParser.split(AvahiText.strings(txt))
        switch TXTRecordParser.parse(pairs, host: host, port: Int(port), serviceName: instance.name, interface: ifName) {
        case .success(let record): sink(.resolved(instance, record))
        case .failure(let error): sink(.skipped(instance, error))
        }
    }
}

// C callbacks: recover the owner from the user data pointer (unretained: the owner frees every
// avahi object before it goes away, so no callback can outlive it).

private func browserClientCallback(_ client: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    Unmanaged<AvahiBrowser>.fromOpaque(userdata).takeUnretainedValue().clientChanged(client, state)
}

private func browserRetryCallback(_ timeout: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    Unmanaged<AvahiBrowser>.fromOpaque(userdata).takeUnretainedValue().retryFired()
}

private func browserCallback(
    _ browser: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    guard let userdata else { return }
    Unmanaged<AvahiBrowser>.fromOpaque(userdata).takeUnretainedValue()
        .browserEvent(interface, proto, event, name, type, domain)
}

private func resolverCallback(
    _ resolver: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiResolverEvent,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ hostName: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16,
    _ txt: UnsafeMutablePointer<AvahiStringList>?, _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    guard let userdata else { return }
    Unmanaged<AvahiBrowser>.fromOpaque(userdata).takeUnretainedValue()
        .resolverEvent(interface, proto, event, name, type, domain, address, port, txt)
}
