import CMosquitto
import Logging
import StageTrace
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `mosquitto_lib_init` exactly once per process (a static let is initialised once, thread-safely).
enum MosquittoLibrary {
    static let initialized: Bool = {
        mosquitto_lib_init()
        return true
    }()
}

/// MQTT 5 property identifiers (from the MQTT 5 specification, §2.2.2.2; `mqtt_protocol.h` is not
/// part of the module map).
enum MQTTPropertyID {
    static let responseTopic: Int32 = 0x08
    static let correlationData: Int32 = 0x09
    static let sessionExpiryInterval: Int32 = 0x11
    static let willDelayInterval: Int32 = 0x18
}

/// MQTT 5 CONNACK reason 0x84 "unsupported protocol version"; libmosquitto also reports a 3.1.1
/// broker's own CONNACK ("unacceptable protocol version", 1) with it.
let unsupportedProtocolVersion: Int32 = 0x84

/// Owns one libmosquitto handle and the network thread that drives it.
///
/// Threading: publish/subscribe/unsubscribe (which libmosquitto makes thread-safe with
/// `mosquitto_threaded_set`) may be called from any thread. Every other libmosquitto call, and
/// with it every callback, happens under `io`: the network thread holds it except while it
/// waits in poll(); a publishing thread takes it with `tryLock` to write its message itself
/// (one thread wake-up less per publication) and wakes the network thread instead when it is
/// busy. State touched under `io` is kept in plain properties (marked "under io"); state shared
/// with other threads otherwise lives in `shared` behind a mutex, which is never held while
/// calling into libmosquitto.
final class MosquittoConnection: @unchecked Sendable {
    let configuration: MQTTConfiguration
    /// The brokers in order (`mqtt.url`'s list; usually one).
    let addresses: [MQTTBrokerAddress]
    let logger: Logger
    let events: AsyncStream<MQTTEvent>
    let continuation: AsyncStream<MQTTEvent>.Continuation
    /// When set, events go to this handler (called on the thread that produced them, under
    /// `io`) instead of `events`.
    let handler: (@Sendable (MQTTEvent) -> Void)?
    /// Serializes every call into libmosquitto's I/O (read, write, keepalive, connect,
    /// disconnect) and the state its callbacks touch (see the threading note above).
    let io = PthreadMutex()
    let handle: OpaquePointer
    let wakeRead: Int32
    let wakeWrite: Int32

    struct Shared {
        var threadRunning = false
        var stopRequested = false
        var connected = false
        var everConnected = false
        var reconnectCount = 0
        /// Connect attempts started in this run (the first included).
        var connectAttempts = 0
        var socket: Int32 = -1
        var lastError: MQTTError?
        var subscriptions: [String: MQTTQoS] = [:]
        /// Index in `addresses` of the broker being used or tried (the network thread moves it).
        var brokerIndex = 0
        /// While true, the publish callback records completed message ids (used by shutdown).
        var trackCompletions = false
        var completedMids: Set<Int32> = []
        var lastLibraryError: String?
        /// libmosquitto's log callback is set (`libraryLogging`).
        var libraryLogOn = false
        /// Tasks waiting for the network thread to change `connected`, `completedMids` or
        /// `threadRunning` (shutdown); resumed by `changeShared`.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    let shared = Mutex(Shared())
    /// Retained publications handed over in bulk, fed to libmosquitto as they complete.
    let bulk = BulkPublisher()
    /// True while the client speaks MQTT 5: the configured protocol, until a broker refuses MQTT 5
    /// while a will delay is set (then 3.1.1; see `MQTTConfiguration.willDelay`). Read by
    /// publishing threads, changed by the network thread between attempts.
    let speaksV5: Atomic<Bool>

    // Under io.
    /// The broker being used or tried (`addresses[shared.brokerIndex]`).
    var address: MQTTBrokerAddress
    var refusal: MQTTError?
    /// The last CONNACK refused the protocol version (MQTT 5 not spoken by the broker).
    var refusedProtocol = false
    /// The fallback to 3.1.1 was logged (once per run).
    var loggedFallback = false
    var disconnectCode: Int32?
    var established = false

    init(configuration: MQTTConfiguration, logger: Logger,
         handler: (@Sendable (MQTTEvent) -> Void)? = nil) throws(MQTTError) {
        _ = MosquittoLibrary.initialized
        let addresses = try configuration.validateBrokers()
        let password = try configuration.resolvedPassword()
        var logger = logger
        logger[metadataKey: "mqtt.broker"] = "\(addresses.map(\.description).joined(separator: ","))"

        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            throw MQTTError(returnCode: MOSQ_ERR_ERRNO.rawValue, operation: "create wake-up pipe", errno: errno)
        }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        guard
            let handle = mosquitto_new(
                configuration.clientID.isEmpty ? nil : configuration.clientID, configuration.cleanStart, nil)
        else {
            let savedErrno = errno
            close(pipeFDs[0])
            close(pipeFDs[1])
            throw MQTTError(returnCode: MOSQ_ERR_ERRNO.rawValue, operation: "mosquitto_new", errno: savedErrno)
        }
        self.configuration = configuration
        self.addresses = addresses
        self.address = addresses[0]
        self.logger = logger
        self.handle = handle
        self.wakeRead = pipeFDs[0]
        self.wakeWrite = pipeFDs[1]
        self.handler = handler
        speaksV5 = Atomic(configuration.protocolVersion == .v5)
        (events, continuation) = AsyncStream.makeStream(of: MQTTEvent.self, bufferingPolicy: .unbounded)
        // Fully initialised: from here on a throw runs deinit, which frees the handle.
        try configure(password: password)
    }

    deinit {
        mosquitto_destroy(handle)
        close(wakeRead)
        close(wakeWrite)
        continuation.finish()
    }

    func configure(password: String?) throws(MQTTError) {
        let h = handle
        mosquitto_user_data_set(h, Unmanaged.passUnretained(self).toOpaque())
        try MQTTError.check(mosquitto_threaded_set(h, true), "mosquitto_threaded_set")
        try applyProtocol(v5: configuration.protocolVersion == .v5)
        try MQTTError.check(mosquitto_int_option(h, MOSQ_OPT_TCP_NODELAY, 1), "set TCP_NODELAY")
        try MQTTError.check(
            mosquitto_int_option(h, MOSQ_OPT_SEND_MAXIMUM, Int32(configuration.maxInflight)), "set max inflight")
        if let username = configuration.username {
            try MQTTError.check(mosquitto_username_pw_set(h, username, password), "set username and password")
        }
        if address.tls {
            // Without a CA file, trust the system's CAs. They are passed as a CA file (or directory)
            // rather than only with MOSQ_OPT_TLS_USE_OS_CERTS, because libmosquitto 2.0 refuses to
            // reconnect (MOSQ_ERR_INVAL) when its TLS context exists and no CA file/path is set.
            var caFile = configuration.caFile
            var caPath: String?
            if caFile == nil {
                try MQTTError.check(mosquitto_int_option(h, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "use system CAs")
                caFile = Self.systemCAFiles.first { access($0, R_OK) == 0 }
                if caFile == nil { caPath = "/etc/ssl/certs" }
            }
            try MQTTError.check(
                mosquitto_tls_set(h, caFile, caPath, configuration.certFile, configuration.keyFile, nil),
                "set TLS files")
            if configuration.insecure {
                try MQTTError.check(mosquitto_tls_insecure_set(h, true), "disable TLS host name check")
                // 0 is SSL_VERIFY_NONE: do not verify the broker's certificate chain either.
                try MQTTError.check(mosquitto_tls_opts_set(h, 0, nil, nil), "disable TLS verification")
            }
        }

        mosquitto_connect_v5_callback_set(h) { _, object, rc, flags, _ in
            guard let object else { return }
            Unmanaged<MosquittoConnection>.fromOpaque(object).takeUnretainedValue()
                .didConnect(rc: rc, flags: flags)
        }
        mosquitto_disconnect_v5_callback_set(h) { _, object, rc, _ in
            guard let object else { return }
            Unmanaged<MosquittoConnection>.fromOpaque(object).takeUnretainedValue().didDisconnect(rc: rc)
        }
        mosquitto_message_v5_callback_set(h) { _, object, message, properties in
            guard let object, let message else { return }
            Unmanaged<MosquittoConnection>.fromOpaque(object).takeUnretainedValue()
                .didReceive(message.pointee, properties: properties)
        }
        mosquitto_publish_v5_callback_set(h) { _, object, mid, reasonCode, _ in
            guard let object else { return }
            Unmanaged<MosquittoConnection>.fromOpaque(object).takeUnretainedValue()
                .didPublish(mid: mid, reasonCode: reasonCode)
        }
        libraryLogging(true)
    }

    /// Sets the protocol version and, with it, the last will: under MQTT 5 with the configured
    /// Will Delay Interval, under 3.1.1 without (it has none). Called at init and, on the network
    /// thread under io, between attempts when the broker refused MQTT 5.
    func applyProtocol(v5: Bool) throws(MQTTError) {
        speaksV5.store(v5, ordering: .relaxed)
        try MQTTError.check(
            mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311),
            "set protocol version")
        guard let will = configuration.will else { return }
        var properties: OpaquePointer?
        if v5, let delay = configuration.willDelay {
            try MQTTError.check(
                mosquitto_property_add_int32(&properties, MQTTPropertyID.willDelayInterval, delay),
                "add will delay interval")
        }
        let h = handle
        let rc = will.payload.withUnsafeBytes { buf in
            mosquitto_will_set_v5(
                h, will.topic, Int32(buf.count), buf.baseAddress, Int32(will.qos.rawValue), will.retain, properties)
        }
        // On success the library owns the property list; on failure it is ours to free.
        if rc != MOSQ_ERR_SUCCESS.rawValue { mosquitto_property_free_all(&properties) }
        try MQTTError.check(rc, "set last will on \(will.topic)")
    }

    /// libmosquitto formats a line (malloc + vsnprintf) for every packet it sends or receives,
    /// but only while a log callback is set. The callback is set while connecting, where its error
    /// lines (e.g. OpenSSL's "certificate verify failed") complete our error messages, and taken
    /// away once the broker has accepted us unless this component logs at trace: one formatted
    /// line less on every command and every publication. (A connection that fails later is
    /// reported with libmosquitto's return code and errno, without its text.)
    func libraryLogging(_ on: Bool) {
        shared.withLock { $0.libraryLogOn = on }
        guard on else {
            mosquitto_log_callback_set(handle, nil)
            return
        }
        mosquitto_log_callback_set(handle) { _, object, level, text in
            guard let object, let text else { return }
            Unmanaged<MosquittoConnection>.fromOpaque(object).takeUnretainedValue()
                .libraryLog(level: level, String(cString: text))
        }
    }

    /// Where distributions keep the system CA bundle (Debian/Ubuntu, Fedora/RHEL, Alpine/macOS, SUSE).
    static let systemCAFiles = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
        "/etc/ssl/ca-bundle.pem",
    ]

    // MARK: - Operations from any thread

    /// Publishes `message` now, ahead of held bulk publications; a held one of its topic is stale.
    @discardableResult
    func publish(_ message: MQTTMessage) throws(MQTTError) -> Int32 {
        bulk.supersede(message.topic)
        return try publishNow(message)
    }

    /// Holds a retained publication of a bulk (BulkPublisher) and hands over what the window allows.
    func publishBulk(_ message: MQTTMessage) {
        bulk.add(message)
        pumpBulk()
    }

    /// Hands held bulk publications to libmosquitto while there is room (any thread).
    func pumpBulk() {
        bulk.pump { message in
            do {
                return try publishNow(message)
            } catch {
                logger.warning("publish failed", metadata: ["mqtt.topic": "\(message.topic)", "mqtt.error": "\(error)"])
                return nil
            }
        }
    }

    @discardableResult
    private func publishNow(_ message: MQTTMessage) throws(MQTTError) -> Int32 {
        guard message.payload.count <= 268_435_455 else {
            throw MQTTError(
                code: .payloadTooLarge,
                message: "payload of \(message.payload.count) bytes is over the MQTT limit")
        }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if speaksV5.load(ordering: .relaxed) {
            if let responseTopic = message.responseTopic {
                try MQTTError.check(
                    mosquitto_property_add_string(&properties, MQTTPropertyID.responseTopic, responseTopic),
                    "add response topic")
            }
            if let data = message.correlationData {
                guard data.count <= 65535 else {
                    throw MQTTError(code: .invalidArgument, message: "correlation data is over 65535 bytes")
                }
                let rc = data.withUnsafeBytes { buf in
                    mosquitto_property_add_binary(
                        &properties, MQTTPropertyID.correlationData, buf.baseAddress, UInt16(buf.count))
                }
                try MQTTError.check(rc, "add correlation data")
            }
        }
        StageTrace.mark(.publishing)
        defer { StageTrace.mark(.published) }
        var mid: Int32 = 0
        let rc = message.payload.withUnsafeBytes { buf in
            mosquitto_publish_v5(
                handle, &mid, message.topic, Int32(buf.count), buf.baseAddress, Int32(message.qos.rawValue),
                message.retain, properties)
        }
        // QoS 1/2 messages stay in libmosquitto's queue while disconnected and are sent after the
        // next connect; only QoS 0 is lost.
        if !(rc == MOSQ_ERR_NO_CONN.rawValue && message.qos != .atMostOnce) {
            try MQTTError.check(rc, "publish to \(message.topic)")
        }
        writeOrWake()
        return mid
    }

    /// Writes what libmosquitto has queued on this thread when the network thread is idle in
    /// poll() and the connection is up; otherwise (busy, not connected, the socket would block,
    /// or the write failed) wakes the network thread, which writes or handles the failure.
    func writeOrWake() {
        guard io.tryLock() else { return wake() }
        var needsNetworkThread = true
        if established, mosquitto_socket(handle) >= 0 {
            // On failure libmosquitto closes the socket and calls the disconnect callback here,
            // under io; the network thread then sees the closed socket and reconnects.
            let rc = mosquitto_loop_write(handle, 1)
            needsNetworkThread = rc != MOSQ_ERR_SUCCESS.rawValue || mosquitto_want_write(handle)
        }
        io.unlock()
        if needsNetworkThread { wake() }
    }

    func subscribe(_ filter: String, qos: MQTTQoS) throws(MQTTError) {
        try MQTTError.check(mosquitto_sub_topic_check(filter), "subscribe to \"\(filter)\"")
        // Send it now only when the broker has accepted us; otherwise the connect callback sends
        // it with the others. Deciding under the lock that also guards the callback's snapshot
        // sends every subscription exactly once per connection (twice would deliver retained
        // messages twice).
        let sendNow = shared.withLock { s in
            s.subscriptions[filter] = qos
            return s.connected
        }
        guard sendNow else { return }
        let rc = mosquitto_subscribe_v5(handle, nil, filter, Int32(qos.rawValue), 0, nil)
        if rc != MOSQ_ERR_NO_CONN.rawValue {
            try MQTTError.check(rc, "subscribe to \(filter)")
        }
        wake()
    }

    func unsubscribe(_ filter: String) throws(MQTTError) {
        shared.withLock { _ = $0.subscriptions.removeValue(forKey: filter) }
        let rc = mosquitto_unsubscribe_v5(handle, nil, filter, nil)
        if rc != MOSQ_ERR_NO_CONN.rawValue {
            try MQTTError.check(rc, "unsubscribe from \(filter)")
        }
        wake()
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Empties the wake-up pipe (non-blocking; at most 16 reads).
    func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 256)
        var reads = 0
        while reads < 16, read(wakeRead, &buffer, buffer.count) == buffer.count { reads += 1 }
    }

    func yield(_ event: MQTTEvent) {
        if let handler { handler(event) } else { continuation.yield(event) }
    }
    func finishEvents() { continuation.finish() }

}
