import CMosquitto
import Logging

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
}

/// Owns one libmosquitto handle and the network thread that drives it.
///
/// Threading: every libmosquitto call except publish/subscribe/unsubscribe (which libmosquitto
/// makes thread-safe with `mosquitto_threaded_set`) happens on the network thread, and so do all
/// callbacks. State only the network thread touches is kept in plain properties (marked
/// "network thread"); state shared with other threads lives in `shared` behind a mutex, which is
/// never held while calling into libmosquitto.
final class MosquittoConnection: @unchecked Sendable {
    let configuration: MQTTConfiguration
    let address: MQTTBrokerAddress
    let logger: Logger
    let events: AsyncStream<MQTTEvent>
    private let continuation: AsyncStream<MQTTEvent>.Continuation
    private let handle: OpaquePointer
    private let wakeRead: Int32
    private let wakeWrite: Int32

    struct Shared {
        var threadRunning = false
        var stopRequested = false
        var connected = false
        var everConnected = false
        var reconnectCount = 0
        var socket: Int32 = -1
        var lastError: MQTTError?
        var subscriptions: [String: MQTTQoS] = [:]
        /// While true, the publish callback records completed message ids (used by shutdown).
        var trackCompletions = false
        var completedMids: Set<Int32> = []
        var lastLibraryError: String?
    }
    let shared = Locked(Shared())

    // Network thread only.
    private var refusal: MQTTError?
    private var disconnectCode: Int32?
    private var established = false

    init(configuration: MQTTConfiguration, logger: Logger) throws(MQTTError) {
        _ = MosquittoLibrary.initialized
        let address = try configuration.validate()
        let password = try configuration.resolvedPassword()
        var logger = logger
        logger[metadataKey: "mqtt.broker"] = "\(address)"

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
        self.address = address
        self.logger = logger
        self.handle = handle
        self.wakeRead = pipeFDs[0]
        self.wakeWrite = pipeFDs[1]
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

    private func configure(password: String?) throws(MQTTError) {
        let h = handle
        mosquitto_user_data_set(h, Unmanaged.passUnretained(self).toOpaque())
        try MQTTError.check(mosquitto_threaded_set(h, true), "mosquitto_threaded_set")
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try MQTTError.check(
            mosquitto_int_option(h, MOSQ_OPT_PROTOCOL_VERSION, version), "set protocol version")
        try MQTTError.check(mosquitto_int_option(h, MOSQ_OPT_TCP_NODELAY, 1), "set TCP_NODELAY")
        try MQTTError.check(
            mosquitto_int_option(h, MOSQ_OPT_SEND_MAXIMUM, Int32(configuration.maxInflight)), "set max inflight")
        if let username = configuration.username {
            try MQTTError.check(mosquitto_username_pw_set(h, username, password), "set username and password")
        }
        if let will = configuration.will {
            let rc = will.payload.withUnsafeBytes { buf in
                mosquitto_will_set(
                    h, will.topic, Int32(buf.count), buf.baseAddress, Int32(will.qos.rawValue), will.retain)
            }
            try MQTTError.check(rc, "set last will on \(will.topic)")
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
        mosquitto_log_callback_set(h) { _, object, level, text in
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

    // MARK: - Callbacks (network thread)

    private func libraryLog(level: Int32, _ text: String) {
        logger.trace("libmosquitto: \(text)")
        // Error lines carry details (e.g. OpenSSL's "certificate verify failed") that the return
        // codes lack; keep the last one to complete the next error message.
        if level == MOSQ_LOG_ERR { shared.withLock { $0.lastLibraryError = text } }
    }

    /// `error` with the last error line libmosquitto logged, if any, appended (and then forgotten).
    private func withLibraryDetail(_ error: MQTTError) -> MQTTError {
        guard let detail = shared.withLock({ s -> String? in
            defer { s.lastLibraryError = nil }
            return s.lastLibraryError
        }) else { return error }
        var error = error
        error.message += " (\(detail))"
        return error
    }

    private func didConnect(rc: Int32, flags: Int32) {
        guard rc == 0 else {
            refusal = MQTTError(connackCode: rc, protocolVersion: configuration.protocolVersion)
            return
        }
        established = true
        let sessionPresent = flags & 1 != 0
        let (reconnect, subscriptions) = shared.withLock { s in
            let reconnect = s.everConnected
            if reconnect { s.reconnectCount += 1 }
            s.everConnected = true
            s.connected = true
            s.lastError = nil
            return (reconnect, s.subscriptions.sorted { $0.key < $1.key })
        }
        logger.info(
            reconnect ? "reconnected to MQTT broker" : "connected to MQTT broker",
            metadata: ["mqtt.session_present": "\(sessionPresent)"])
        // Restore every subscription: the broker may have lost our session (restart without
        // persistence, expiry), and re-subscribing an existing subscription is harmless.
        for (filter, qos) in subscriptions {
            let rc = mosquitto_subscribe_v5(handle, nil, filter, Int32(qos.rawValue), 0, nil)
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                let error = MQTTError(returnCode: rc, operation: "restore subscription \(filter)")
                logger.warning("\(error.message)")
            }
        }
        continuation.yield(.connected(sessionPresent: sessionPresent))
    }

    private func didDisconnect(rc: Int32) {
        disconnectCode = rc
        shared.withLock { $0.connected = false }
    }

    private func didReceive(_ message: mosquitto_message, properties: OpaquePointer?) {
        let topic = message.topic.map { String(cString: $0) } ?? ""
        var payload: [UInt8] = []
        if let bytes = message.payload, message.payloadlen > 0 {
            payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
        }
        var responseTopic: String?
        var correlationData: [UInt8]?
        if let properties {
            var text: UnsafeMutablePointer<CChar>?
            if mosquitto_property_read_string(properties, MQTTPropertyID.responseTopic, &text, false) != nil,
                let text
            {
                responseTopic = String(cString: text)
                free(text)
            }
            var data: UnsafeMutableRawPointer?
            var length: UInt16 = 0
            if mosquitto_property_read_binary(
                properties, MQTTPropertyID.correlationData, &data, &length, false) != nil
            {
                correlationData = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
                free(data)
            }
        }
        continuation.yield(
            .message(
                MQTTMessage(
                    topic: topic, payload: payload, qos: MQTTQoS(rawValue: Int(message.qos)) ?? .atMostOnce,
                    retain: message.retain, responseTopic: responseTopic, correlationData: correlationData)))
    }

    private func didPublish(mid: Int32, reasonCode: Int32) {
        if reasonCode >= 0x80 {
            let text = mosquitto_reason_string(reasonCode).map { String(cString: $0) } ?? "\(reasonCode)"
            logger.warning("broker rejected a publication: \(text)")
        }
        shared.withLock { s in
            if s.trackCompletions { s.completedMids.insert(mid) }
        }
    }

    // MARK: - Operations from any thread

    @discardableResult
    func publish(_ message: MQTTMessage) throws(MQTTError) -> Int32 {
        guard message.payload.count <= 268_435_455 else {
            throw MQTTError(
                code: .payloadTooLarge,
                message: "payload of \(message.payload.count) bytes is over the MQTT limit")
        }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if configuration.protocolVersion == .v5 {
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
        wake()
        return mid
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
    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 256)
        var reads = 0
        while reads < 16, read(wakeRead, &buffer, buffer.count) == buffer.count { reads += 1 }
    }

    func yield(_ event: MQTTEvent) { continuation.yield(event) }
    func finishEvents() { continuation.finish() }

    // MARK: - Network thread

    /// Starts the network thread. The thread holds a strong reference until it exits.
    func startThread() throws(MQTTError) {
        shared.withLock { $0.threadRunning = true }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &thread, nil,
            { context in
                let connection = Unmanaged<MosquittoConnection>.fromOpaque(context!).takeRetainedValue()
                connection.run()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<MosquittoConnection>.fromOpaque(context).release()
            shared.withLock { $0.threadRunning = false }
            throw MQTTError(returnCode: MOSQ_ERR_ERRNO.rawValue, operation: "start MQTT network thread", errno: rc)
        }
        pthread_detach(thread)
    }

    func requestStop() {
        shared.withLock { $0.stopRequested = true }
        wake()
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(0, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    /// Checks with a non-blocking TCP connect that the broker accepts connections, bounded by
    /// `timeout` and cut short by a stop request. It runs before `mosquitto_connect_bind_v5`, whose
    /// blocking connect would otherwise hang the network thread for the kernel's SYN timeout
    /// (about two minutes) when the broker's host drops packets.
    private func probeBroker(timeout: Duration) -> MQTTError? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let lookup = getaddrinfo(address.host, String(address.port), &hints, &list)
        guard lookup == 0, let list else {
            let why = gai_strerror(lookup).map { String(cString: $0) } ?? "error \(lookup)"
            return MQTTError(code: .lookupFailed, message: "look up \(address.host): \(why)")
        }
        defer { freeaddrinfo(list) }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var failure: Int32 = ETIMEDOUT
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry?.pointee {
            entry = info.ai_next
            let fd = socket(
                info.ai_family, info.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                info.ai_protocol)
            guard fd >= 0 else {
                failure = errno
                continue
            }
            defer { close(fd) }
            if connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return nil }
            guard errno == EINPROGRESS else {
                failure = errno
                continue
            }
            while true {
                if shared.withLock({ $0.stopRequested }) {
                    return MQTTError(code: .shutDown, message: "connect to \(address): shutting down")
                }
                let remaining = deadline - clock.now
                guard remaining > .zero else {
                    failure = ETIMEDOUT
                    break
                }
                var fds = [
                    pollfd(fd: fd, events: Int16(POLLOUT), revents: 0),
                    pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                ]
                _ = poll(&fds, 2, Int32(min(1000, Self.milliseconds(remaining) + 1)))
                if fds[1].revents != 0 { drainWake() }
                if fds[0].revents != 0 {
                    var socketError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
                    if socketError == 0 { return nil }
                    failure = socketError
                    break
                }
            }
            if clock.now >= deadline { break }
        }
        return MQTTError(returnCode: MOSQ_ERR_ERRNO.rawValue, operation: "connect to \(address)", errno: failure)
    }

    /// One connect attempt. MQTT 5 needs the Session Expiry Interval in CONNECT for a persistent
    /// session, which only `mosquitto_connect_bind_v5` can send; it performs the TCP connect
    /// synchronously (after `probeBroker` showed it will succeed at once; TLS and MQTT handshakes
    /// still run in the poll loop). MQTT 3.1.1 connects fully asynchronously (libmosquitto gives up
    /// a pending connect after `keepalive` seconds).
    private func attemptConnect() -> MQTTError? {
        refusal = nil
        disconnectCode = nil
        established = false
        shared.withLock { $0.lastLibraryError = nil }
        let rc: Int32
        let port = Int32(address.port)
        let keepalive = Int32(configuration.keepalive)
        if configuration.protocolVersion == .v5 {
            if let error = probeBroker(timeout: .seconds(configuration.keepalive)) { return error }
            var properties: OpaquePointer?
            defer { mosquitto_property_free_all(&properties) }
            if !configuration.cleanStart {
                _ = mosquitto_property_add_int32(
                    &properties, MQTTPropertyID.sessionExpiryInterval, configuration.sessionExpiry)
            }
            rc = mosquitto_connect_bind_v5(handle, address.host, port, keepalive, nil, properties)
        } else {
            rc = mosquitto_connect_bind_async(handle, address.host, port, keepalive, nil)
        }
        let savedErrno = errno
        if rc == MOSQ_ERR_SUCCESS.rawValue { return nil }
        return withLibraryDetail(MQTTError(returnCode: rc, operation: "connect to \(address)", errno: savedErrno))
    }

    /// Why the attempt's socket closed: the refused CONNACK, the broker's DISCONNECT reason or
    /// the code the disconnect callback or the loop reported.
    private func endOfAttemptError(afterLoopCode rc: Int32) -> MQTTError {
        if let refusal { return refusal }
        let code = disconnectCode ?? rc
        if code == MOSQ_ERR_SUCCESS.rawValue {
            return MQTTError(code: .connectionLost, message: "connection closed")
        }
        if code >= 0x80 {
            // An MQTT 5 DISCONNECT from the broker carries a reason code.
            let text = mosquitto_reason_string(code).map { String(cString: $0) } ?? "reason \(code)"
            return MQTTError(code: .connectionLost, message: "broker disconnected us: \(text)")
        }
        return withLibraryDetail(MQTTError(returnCode: code, operation: "connection to broker", errno: errno))
    }

    private func run() {
        let clock = ContinuousClock()
        let initial = configuration.reconnectInitial
        let maximum = configuration.reconnectMax
        var delay = initial
        var nextAttempt: ContinuousClock.Instant? = clock.now
        var attemptActive = false
        var stopDeadline: ContinuousClock.Instant?
        var lastRC: Int32 = 0
        var fds = [pollfd](repeating: pollfd(), count: 2)
        var spinWindowStart = clock.now
        var spinCount = 0

        while true {
            let stop = shared.withLock { $0.stopRequested }
            let now = clock.now
            if stop && stopDeadline == nil {
                // Clean disconnect: reason 0 (normal), so the broker discards our last will. Keep
                // looping until the DISCONNECT is written and the socket closed, at most 2 s.
                stopDeadline = now.advanced(by: .seconds(2))
                // Before CONNACK there is no session to close politely: just stop.
                guard established, mosquitto_socket(handle) >= 0 else { break }
                _ = mosquitto_disconnect_v5(handle, 0, nil)
            }
            if let stopDeadline, now >= stopDeadline { break }

            // Safety net against a busy loop (e.g. a socket that stays ready while libmosquitto
            // makes no progress): at most 20 000 iterations per second.
            spinCount += 1
            if spinCount > 20_000 {
                if clock.now - spinWindowStart < .seconds(1) { usleep(1000) }
                spinWindowStart = clock.now
                spinCount = 0
            }

            var socket = mosquitto_socket(handle)
            if socket < 0 && attemptActive {
                attemptActive = false
                nextAttempt = attemptEnded(
                    lastRC: lastRC, stopping: stop, delay: &delay, initial: initial, maximum: maximum, now: now)
            }
            if socket < 0 {
                if stop { break }
                if let next = nextAttempt, now >= next {
                    if let error = attemptConnect() {
                        if error.code == .shutDown { continue }
                        shared.withLock { $0.lastError = error }
                        let wait = delay
                        delay = min(delay * 2, maximum)
                        nextAttempt = now.advanced(by: wait)
                        logger.warning("\(error.message); retrying in \(wait)")
                    } else {
                        attemptActive = true
                        nextAttempt = nil
                    }
                    socket = mosquitto_socket(handle)
                    shared.withLock { $0.socket = socket }
                    continue
                }
                var timeout = 1000
                if let next = nextAttempt { timeout = min(timeout, Self.milliseconds(next - now) + 1) }
                var wakeFD = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
                if poll(&wakeFD, 1, Int32(timeout)) > 0 { drainWake() }
                continue
            }

            shared.withLock { $0.socket = socket }
            let wantWrite = mosquitto_want_write(handle)
            fds[0] = pollfd(fd: socket, events: Int16(POLLIN) | (wantWrite ? Int16(POLLOUT) : 0), revents: 0)
            fds[1] = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            let timeout: Int32 = stopDeadline == nil ? 1000 : 50
            let ready = poll(&fds, 2, timeout)
            if ready < 0 {
                if errno != EINTR { usleep(10_000) }
                continue
            }
            var woken = false
            if fds[1].revents != 0 {
                drainWake()
                woken = true
            }
            let events = Int32(fds[0].revents)
            lastRC = MOSQ_ERR_SUCCESS.rawValue
            if events & (POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0 {
                lastRC = mosquitto_loop_read(handle, 1)
            }
            if mosquitto_socket(handle) >= 0
                && (events & POLLOUT != 0 || (woken && mosquitto_want_write(handle)))
            {
                lastRC = mosquitto_loop_write(handle, 1)
            }
            if mosquitto_socket(handle) >= 0 {
                // Keepalive: sends PINGREQ when due, drops the connection when PINGRESP is late.
                let rc = mosquitto_loop_misc(handle)
                if rc != MOSQ_ERR_SUCCESS.rawValue { lastRC = rc }
            }
        }

        // Still connected here only if the DISCONNECT could not be flushed in time.
        if established {
            established = false
            reportShutdown()
        }
        shared.withLock { s in
            s.connected = false
            s.socket = -1
            s.threadRunning = false
        }
    }

    private func reportShutdown() {
        logger.info("disconnected from MQTT broker (shutdown)")
        continuation.yield(.disconnected(reason: "client shut down"))
    }

    /// The socket of the current attempt closed: report it and schedule the next attempt.
    private func attemptEnded(
        lastRC: Int32, stopping: Bool, delay: inout Duration, initial: Duration, maximum: Duration,
        now: ContinuousClock.Instant
    ) -> ContinuousClock.Instant {
        let wasEstablished = established
        established = false
        let error = endOfAttemptError(afterLoopCode: lastRC)
        let why = error.message
        shared.withLock { s in
            s.connected = false
            s.socket = -1
            s.lastError = error
        }
        if stopping {
            if wasEstablished { reportShutdown() }
            return now
        }
        if wasEstablished { delay = initial }
        let wait = delay
        delay = min(delay * 2, maximum)
        if wasEstablished {
            logger.warning("disconnected from MQTT broker: \(why); reconnecting in \(wait)")
        } else if refusal != nil {
            logger.error("\(why); retrying in \(wait)")
        } else {
            logger.warning("connection to MQTT broker failed: \(why); retrying in \(wait)")
        }
        if wasEstablished || refusal != nil {
            continuation.yield(.disconnected(reason: why))
        }
        return now.advanced(by: wait)
    }
}
