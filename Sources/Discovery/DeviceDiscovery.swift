import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Finds Cast devices: static devices from the configuration plus `_googlecast._tcp` services
/// browsed with avahi, merged by id into one ordered stream of `DiscoveryEvent`s.
///
/// ```swift
/// let discovery = DeviceDiscovery(configuration: config, logger: logger)
/// discovery.start()
/// for await event in discovery.events { ... }   // single consumer
/// discovery.stop()                               // finishes the stream
/// ```
///
/// Without a reachable avahi-daemon, discovery logs that once (per outage), keeps emitting static
/// devices and retries in the background; mDNS devices appear when the daemon comes back.
public final class DeviceDiscovery: Sendable {
    /// The merged device events. One consumer; the stream finishes on `stop()`.
    public let events: AsyncStream<DiscoveryEvent>

    public let configuration: DiscoveryConfiguration
    private let logger: Logger
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private let browserOptions: AvahiBrowser.Options
    private let state: Mutex<State>

    private struct State: ~Copyable {
        var merger: DeviceMerger
        var browser: AvahiBrowser?
        var started = false
        var stopped = false
        var unavailableLogged = false
        var skipped: [ServiceInstance: TXTParseError] = [:]
    }

    public convenience init(configuration: DiscoveryConfiguration, logger: Logger) {
        self.init(configuration: configuration, logger: logger, connectHook: nil)
    }

    /// `connectHook` (tests): called before each avahi client creation; returning false simulates
    /// an unreachable daemon. `retryInitial`/`retryMax`: client re-creation backoff.
    init(
        configuration: DiscoveryConfiguration,
        logger: Logger,
        connectHook: (@Sendable () -> Bool)?,
        retryInitial: Duration = .seconds(1),
        retryMax: Duration = .seconds(30)
    ) {
        self.configuration = configuration
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self, bufferingPolicy: .unbounded)
        var options = AvahiBrowser.Options()
        options.interfaces = configuration.interfaces
        options.connectHook = connectHook
        options.retryInitialMilliseconds = UInt32(clamping: retryInitial.milliseconds)
        options.retryMaxMilliseconds = UInt32(clamping: retryMax.milliseconds)
        browserOptions = options
        state = Mutex(State(merger: DeviceMerger(
            staticDevices: configuration.devices,
            filter: configuration.filter,
            preferIPv6: configuration.preferIPv6)))
    }

    deinit {
        // Normally stop() ran already. If not, the last reference may go away on the avahi poll
        // thread (inside an event callback), where the poll cannot be stopped: stop it elsewhere.
        if let browser = state.withLock({ $0.browser.take() }) {
            Task.detached { browser.stop() }
        }
        continuation.finish()
    }

    /// The devices announced so far (and not removed), by id.
    /// True while a rescan's sweep has known instances it has not seen again (for tests).
    package var awaitingSweep: Bool { state.withLock { $0.merger.awaitingSweep } }

    public var devices: [String: CastDeviceRecord] {
        state.withLock { $0.merger.devices }
    }

    /// Emits the static devices, then starts browsing (when `mdns` is on). Call once.
    public func start() {
        let browser: AvahiBrowser? = state.withLock { state in
            guard !state.started, !state.stopped else { return nil }
            state.started = true
            emit(state.merger.start(), state: &state)
            guard configuration.mdns else {
                logger.info("mDNS discovery disabled; static devices only")
                return nil
            }
            for name in configuration.interfaces where if_nametoindex(name) == 0 {
                logger.warning("discovery.interfaces: no network interface \"\(name)\" (yet); devices on it appear if it comes up")
            }
            do {
                let browser = try AvahiBrowser(options: browserOptions) { [weak self] event in
                    self?.handle(event)
                }
                state.browser = browser
                return browser
            } catch {
                reportUnavailable("\(error)", state: &state)
                return nil
            }
        }
        // Outside the mutex: the first avahi callbacks run inside start() and take the mutex.
        do {
            try browser?.start()
        } catch {
            state.withLock { reportUnavailable("\(error)", state: &$0) }
        }
    }

    /// Stops browsing, frees every avahi object and finishes `events`. Idempotent.
    public func stop() {
        let browser = state.withLock { state -> AvahiBrowser? in
            state.stopped = true
            defer { state.browser = nil }
            return state.browser
        }
        // Outside the mutex: stopping takes the avahi lock, which callbacks hold while they wait
        // for the mutex.
        browser?.stop()
        continuation.finish()
    }

    /// Forgets what mDNS reported and browses again; devices that are still there stay as they
    /// are, the others are removed after the new sweep.
    public func rescan() {
        let browser = state.withLock { $0.browser }
        browser?.rescan()
    }

    // MARK: - Events from the avahi thread

    private func handle(_ event: AvahiBrowser.Event) {
        state.withLock { state in
            guard !state.stopped else { return }
            switch event {
            case .browsed(let instance):
                emit(state.merger.browsed(instance), state: &state)
            case .resolved(let instance, let record):
                state.skipped[instance] = nil
                emit(state.merger.resolved(instance, record: record), state: &state)
            case .skipped(let instance, let error):
                if state.skipped[instance] != error {
                    state.skipped[instance] = error
                    logger.warning("Skipping Cast service \"\(instance.name)\": \(error)",
                                   metadata: ["mdns.service": "\(instance.name)"])
                }
                emit(state.merger.invalidated(instance), state: &state)
            case .resolveFailed(let instance, let reason):
                logger.debug("Could not resolve Cast service \"\(instance.name)\": \(reason)")
            case .removed(let instance):
                state.skipped[instance] = nil
                emit(state.merger.removed(instance), state: &state)
            case .allForNow:
                emit(state.merger.browseComplete(), state: &state)
            case .unavailable(let reason):
                reportUnavailable(reason, state: &state)
            case .available:
                if state.unavailableLogged {
                    state.unavailableLogged = false
                    logger.notice("avahi-daemon is reachable again; mDNS discovery resumed")
                } else {
                    logger.debug("avahi-daemon reachable; browsing _googlecast._tcp")
                }
            case .rescanning:
                emit(state.merger.daemonLost(), state: &state)
            }
        }
    }

    private func reportUnavailable(_ reason: String, state: inout State) {
        emit(state.merger.daemonLost(), state: &state)
        guard !state.unavailableLogged else { return }
        state.unavailableLogged = true
        logger.warning(
            "avahi-daemon is not reachable (\(reason)); continuing with static devices only, mDNS discovery resumes when it comes back")
    }

    private func emit(_ events: [DiscoveryEvent], state: inout State) {
        // The removed devices' last records, for their log lines (the merger is the one table of
        // what the consumer was told).
        let departed = events.contains { if case .removed = $0 { true } else { false } } ? state.merger.takeDeparted() : []
        for event in events {
            switch event {
            case .added(let record):
                logger.info("Cast device found: \"\(record.friendlyName)\" at \(record.address) (\(record.source.rawValue))",
                            metadata: [DiscoveryLogKey.device: "\(record.id)"])
            case .updated(let record):
                logger.info("Cast device updated: \"\(record.friendlyName)\" at \(record.address)",
                            metadata: [DiscoveryLogKey.device: "\(record.id)"])
            case .removed(let id):
                let record = departed.last { $0.id == id }
                logger.info("Cast device removed: \"\(record?.friendlyName ?? "?")\" at \(record?.address ?? "?")",
                            metadata: [DiscoveryLogKey.device: "\(id)"])
            }
            continuation.yield(event)
        }
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
