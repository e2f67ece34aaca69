import Logging
import Synchronization

/// An MQTT client on libmosquitto, driven by its own poll() thread (see docs/mqtt.md).
///
/// Create it, consume `events` from one task, call `start()`, and end with
/// `shutdown(finalMessage:)`. `publish`, `subscribe` and `unsubscribe` may be called from any
/// thread or task, before or after the connection is up.
public final class MosquittoClient: MQTTClientProtocol, Sendable {
    private let connection: MosquittoConnection
    private let lifecycle = Mutex(Lifecycle())

    private struct Lifecycle {
        var started = false
        var shutDown = false
    }

    /// Checks the configuration (URL, files, options) and prepares the client; no I/O yet.
    ///
    /// With `onEvent`, every event is handed to it on the thread that produced it (normally
    /// the network thread; it must not block) and `events` stays empty: one thread hop less
    /// for each incoming message than a task reading `events`.
    public init(configuration: MQTTConfiguration, logger: Logger,
                onEvent: (@Sendable (MQTTEvent) -> Void)? = nil) throws {
        connection = try MosquittoConnection(configuration: configuration, logger: logger, handler: onEvent)
    }

    deinit {
        // Without shutdown(), at least stop the thread; it releases the connection when it exits.
        connection.requestStop()
    }

    public var events: AsyncStream<MQTTEvent> { connection.events }

    /// libmosquitto's log is being read (while connecting, or always at trace); for tests.
    var readsLibraryLog: Bool { connection.shared.withLock { $0.libraryLogOn } }

    /// Starts the network thread, which connects and keeps reconnecting until shutdown.
    public func start() throws {
        let (shutDown, alreadyStarted) = lifecycle.withLock { state in
            let result = (state.shutDown, state.started)
            state.started = true
            return result
        }
        if shutDown { throw MQTTError(code: .shutDown, message: "the MQTT client was shut down") }
        if alreadyStarted { return }
        do {
            try connection.startThread()
        } catch {
            lifecycle.withLock { $0.started = false }
            throw error
        }
    }

    public func publish(_ message: MQTTMessage) throws {
        try checkNotShutDown()
        try connection.publish(message)
    }

    /// Publishes a retained message of a bulk (everything republished after a connect): held
    /// and handed to libmosquitto a window at a time as the broker acknowledges, so that what
    /// `publish` sends meanwhile is not queued behind the whole bulk; a later `publish` or
    /// `publishBulk` on the same topic replaces it while it is held. Held messages do not
    /// survive `shutdown`.
    public func publishBulk(_ message: MQTTMessage) throws {
        try checkNotShutDown()
        connection.publishBulk(message)
    }

    /// Bulk publications held, and handed to libmosquitto but not yet acknowledged.
    public var bulkCounts: (held: Int, outstanding: Int) { connection.bulk.counts }

    public func subscribe(_ filter: String, qos: MQTTQoS) throws {
        try checkNotShutDown()
        try connection.subscribe(filter, qos: qos)
    }

    public func unsubscribe(_ filter: String) throws {
        try checkNotShutDown()
        try connection.unsubscribe(filter)
    }

    private func checkNotShutDown() throws(MQTTError) {
        if lifecycle.withLock({ $0.shutDown }) {
            throw MQTTError(code: .shutDown, message: "the MQTT client was shut down")
        }
    }

    /// Number of successful connects after the first one.
    public var reconnectCount: Int { connection.shared.withLock { $0.reconnectCount } }

    /// True while the broker has accepted our connection.
    public var isConnected: Bool { connection.shared.withLock { $0.connected } }

    /// The most recent connection problem (refused CONNACK, failed connect, lost connection);
    /// nil after a successful connect.
    public var lastError: MQTTError? { connection.shared.withLock { $0.lastError } }

    /// The broker in use (or being tried while disconnected): `mqtt://host:port` or
    /// `mqtts://host:port` from `mqtt.url`'s list; never credentials.
    public var currentBroker: String {
        let index = connection.shared.withLock { $0.brokerIndex }
        return connection.addresses[index].url
    }

    /// The protocol spoken: the configured one, or 3.1.1 after a broker refused MQTT 5 while a
    /// will delay is set (the will then has no delay).
    public var protocolVersion: MQTTProtocolVersion {
        connection.speaksV5.load(ordering: .relaxed) ? .v5 : .v311
    }

    /// Connect attempts started so far, the first included (an attempt counts from the moment
    /// the network thread begins it: a test can tell that one is under way).
    public var connectAttempts: Int { connection.shared.withLock { $0.connectAttempts } }

    /// The MQTT socket's descriptor, -1 when there is none (for tests).
    package var socketDescriptor: Int32 { connection.shared.withLock { $0.socket } }

    /// Publishes `finalMessage` (e.g. a retained "offline") and waits until it is written (QoS 0)
    /// or acknowledged (QoS 1/2), at most 5 s; then disconnects cleanly, so the broker discards
    /// the last will; stops the network thread (waiting at most 5 s) and finishes `events`.
    public func shutdown(finalMessage: MQTTMessage?) async {
        let wasStarted = lifecycle.withLock { state -> Bool? in
            guard !state.shutDown else { return nil }
            state.shutDown = true
            return state.started
        }
        guard let wasStarted else { return }
        let clock = ContinuousClock()
        if finalMessage != nil && !(wasStarted && isConnected) {
            connection.logger.info("not connected to the MQTT broker: final message not sent")
        }
        if let finalMessage, wasStarted, isConnected {
            connection.shared.withLock { $0.trackCompletions = true }
            do {
                let mid = try connection.publish(finalMessage)
                _ = await connection.waitForShared(until: clock.now.advanced(by: .seconds(5))) {
                    $0.completedMids.contains(mid) || !$0.connected
                }
            } catch {
                connection.logger.warning("could not publish the final message: \(error)")
            }
        }
        connection.requestStop()
        if wasStarted {
            let stopped = await connection.waitForShared(until: clock.now.advanced(by: .seconds(5))) { !$0.threadRunning }
            if !stopped {
                connection.logger.warning("MQTT network thread did not stop within 5 s")
            }
        }
        connection.finishEvents()
    }
}
