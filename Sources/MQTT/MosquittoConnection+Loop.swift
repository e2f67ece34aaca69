import CMosquitto
import Logging
import StageTrace
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The network thread of a connection: our own poll() loop over the mosquitto socket (libmosquitto's
// loop uses select(), which fails past descriptor 1024), connect attempts and reconnect backoff.
extension MosquittoConnection {
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
            changeShared { $0.threadRunning = false }
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
    func probeBroker(timeout: Duration) -> MQTTError? {
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
    func attemptConnect() -> MQTTError? {
        refusal = nil
        refusedProtocol = false
        disconnectCode = nil
        established = false
        libraryLogging(true)
        shared.withLock {
            $0.lastLibraryError = nil
            $0.connectAttempts += 1
        }
        let rc: Int32
        let port = Int32(address.port)
        let keepalive = Int32(configuration.keepalive)
        if speaksV5.load(ordering: .relaxed) {
            if let error = probeBroker(timeout: .seconds(configuration.keepalive)) { return error }
            var properties: OpaquePointer?
            defer { mosquitto_property_free_all(&properties) }
            if !configuration.cleanStart {
                _ = mosquitto_property_add_int32(
                    &properties, MQTTPropertyID.sessionExpiryInterval, configuration.sessionExpiry)
            }
            rc = mosquitto_connect_bind_v5(handle, address.host, port, keepalive, nil, properties)
        } else if configuration.protocolVersion == .v5 {
            // Fallen back to 3.1.1 (a broker without MQTT 5, `fallBackToV311`): the MQTT 5 connect
            // kept the Session Expiry property, which a 3.1.1 connect refuses (MOSQ_ERR_NOT_SUPPORTED)
            // unless it is cleared, and only this call clears it.
            if let error = probeBroker(timeout: .seconds(configuration.keepalive)) { return error }
            rc = mosquitto_connect_bind_v5(handle, address.host, port, keepalive, nil, nil)
        } else {
            rc = mosquitto_connect_bind_async(handle, address.host, port, keepalive, nil)
        }
        let savedErrno = errno
        if rc == MOSQ_ERR_SUCCESS.rawValue { return nil }
        return withLibraryDetail(MQTTError(returnCode: rc, operation: "connect to \(address)", errno: savedErrno))
    }

    /// Why the attempt's socket closed: the refused CONNACK, the broker's DISCONNECT reason or
    /// the code the disconnect callback or the loop reported.
    func endOfAttemptError(afterLoopCode rc: Int32) -> MQTTError {
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

    func run() {
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

        // Everything but the waits runs under io (see MosquittoConnection).
        io.lock()
        defer { io.unlock() }
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
                if clock.now - spinWindowStart < .seconds(1) { unlocked { usleep(1000) } }
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
                        let wait = waitBeforeNextAttempt(lost: false, delay: &delay, initial: initial, maximum: maximum)
                        nextAttempt = now.advanced(by: wait)
                        logger.warning("\(error.message); \(retryWords()) in \(wait)")
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
                if unlocked({ poll(&wakeFD, 1, Int32(timeout)) }) > 0 { drainWake() }
                continue
            }

            shared.withLock { $0.socket = socket }
            let wantWrite = mosquitto_want_write(handle)
            fds[0] = pollfd(fd: socket, events: Int16(POLLIN) | (wantWrite ? Int16(POLLOUT) : 0), revents: 0)
            fds[1] = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            let timeout: Int32 = stopDeadline == nil ? 1000 : 50
            let (ready, pollErrno) = unlocked { (poll(&fds, 2, timeout), errno) }
            if ready < 0 {
                if pollErrno != EINTR { unlocked { usleep(10_000) } }
                continue
            }
            var woken = false
            if fds[1].revents != 0 {
                drainWake()
                woken = true
            }
            let events = Int32(fds[0].revents)
            if events & POLLIN != 0 { StageTrace.mark(.mqttReadable) }
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
        changeShared { s in
            s.connected = false
            s.socket = -1
            s.threadRunning = false
        }
    }

    /// How long to wait after the attempt on `address` failed or its connection was lost
    /// (`lost`). One broker: the doubling backoff, reset by a lost connection. Several: a lost
    /// connection is tried again on the same broker after `initial` (a blip, a frozen process or a
    /// session taken over says nothing against a broker that works, and the other bridge instances
    /// are still on it: mqtt-api.md §10); an attempt that fails moves on to the next broker at once,
    /// and the backoff grows only when a whole round of them failed. There is no fail-back: a
    /// working broker is kept until it cannot be reached.
    func waitBeforeNextAttempt(lost: Bool, delay: inout Duration, initial: Duration, maximum: Duration) -> Duration {
        if lost { delay = initial }
        guard addresses.count > 1 else {
            let wait = delay
            delay = min(delay * 2, maximum)
            return wait
        }
        if lost { return initial }
        let index = shared.withLock { s in
            s.brokerIndex = (s.brokerIndex + 1) % addresses.count
            return s.brokerIndex
        }
        address = addresses[index]
        // A broker that refused MQTT 5 says nothing about the next one.
        if configuration.willDelay != nil, configuration.protocolVersion == .v5, !speaksV5.load(ordering: .relaxed) {
            do { try applyProtocol(v5: true) } catch { logger.error("cannot go back to MQTT 5: \(error.message)") }
        }
        guard index == 0 else { return .zero }
        let wait = delay
        delay = min(delay * 2, maximum)
        return wait
    }

    /// "retrying" (one broker), or which broker comes next.
    func retryWords() -> String {
        addresses.count > 1 ? "trying MQTT broker \(address) next" : "retrying"
    }

    /// The broker refused MQTT 5 and a will delay is set: speak 3.1.1 (whose will has no delay)
    /// from the next attempt on, which starts at once. False when the switch failed.
    func fallBackToV311() -> Bool {
        do {
            try applyProtocol(v5: false)
        } catch {
            logger.error("cannot fall back to MQTT 3.1.1: \(error.message)")
            return false
        }
        if !loggedFallback {
            loggedFallback = true
            logger.warning("the MQTT broker does not speak MQTT 5: using MQTT 3.1.1, whose last will has no delay")
        }
        return true
    }

    /// Runs `body` (a wait) with io released, so that publishing threads can write meanwhile.
    @discardableResult
    private func unlocked<R>(_ body: () -> R) -> R {
        io.unlock()
        defer { io.lock() }
        return body()
    }

    func reportShutdown() {
        logger.info("disconnected from MQTT broker (shutdown)")
        yield(.disconnected(reason: "client shut down"))
    }

    /// The socket of the current attempt closed: report it and schedule the next attempt.
    func attemptEnded(
        lastRC: Int32, stopping: Bool, delay: inout Duration, initial: Duration, maximum: Duration,
        now: ContinuousClock.Instant
    ) -> ContinuousClock.Instant {
        let wasEstablished = established
        established = false
        let error = endOfAttemptError(afterLoopCode: lastRC)
        let why = error.message
        changeShared { s in
            s.connected = false
            s.socket = -1
            s.lastError = error
        }
        if stopping {
            if wasEstablished { reportShutdown() }
            return now
        }
        if refusedProtocol, configuration.willDelay != nil, fallBackToV311() { return now }
        let failed = address
        let wait = waitBeforeNextAttempt(lost: wasEstablished, delay: &delay, initial: initial, maximum: maximum)
        let next = retryWords()
        if wasEstablished {
            let which = addresses.count > 1 ? " \(failed)" : ""
            logger.warning("disconnected from MQTT broker\(which): \(why); reconnecting in \(wait)")
        } else if refusal != nil {
            logger.error("\(why); \(next) in \(wait)")
        } else {
            logger.warning("connection to MQTT broker failed: \(why); \(next) in \(wait)")
        }
        if wasEstablished || refusal != nil {
            yield(.disconnected(reason: why))
        }
        return now.advanced(by: wait)
    }
}
