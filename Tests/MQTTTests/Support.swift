import Foundation
import Logging
import MQTT
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Consumes a client's event stream (the single consumer) and keeps every event for assertions.
final class EventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [MQTTEvent] = []
    private var finished = false
    private var task: Task<Void, Never>?

    init(_ client: MosquittoClient) {
        let stream = client.events
        task = Task { [weak self] in
            for await event in stream { self?.append(event) }
            self?.markFinished()
        }
    }

    deinit { task?.cancel() }

    private func append(_ event: MQTTEvent) {
        lock.lock()
        recorded.append(event)
        lock.unlock()
    }

    private func markFinished() {
        lock.lock()
        finished = true
        lock.unlock()
    }

    var events: [MQTTEvent] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    var isFinished: Bool {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    var messages: [MQTTMessage] {
        events.compactMap { if case .message(let m) = $0 { m } else { nil } }
    }

    var connectedCount: Int {
        events.filter { if case .connected = $0 { true } else { false } }.count
    }

    var disconnectReasons: [String] {
        events.compactMap { if case .disconnected(let reason) = $0 { reason } else { nil } }
    }

    /// Waits (bounded) until `count` connected events were seen.
    func waitConnected(count: Int = 1, timeout: Duration = .seconds(30)) async -> Bool {
        await waitUntil(timeout: timeout) { self.connectedCount >= count }
    }

    /// Waits (bounded) for a message on `topic` and returns the first one.
    func waitMessage(on topic: String, timeout: Duration = .seconds(30)) async -> MQTTMessage? {
        _ = await waitUntil(timeout: timeout) { self.messages.contains { $0.topic == topic } }
        return messages.first { $0.topic == topic }
    }
}

let testLogger: Logger = {
    var logger = Logger(label: "mqtt-test")
    logger.logLevel = .info
    return logger
}()

func uniqueID(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

/// Keeps every line a client logs, for tests that check what the client said (the wait before
/// the next attempt, libmosquitto's packet log at trace, a shutdown that timed out).
final class RecordingLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    struct Handler: LogHandler {
        let log: RecordingLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { log.append("\(event.message)") }
    }

    static func logger(level: Logger.Level = .info) -> (Logger, RecordingLog) {
        let log = RecordingLog()
        return (Logger(label: "mqtt-test") { _ in Handler(log: log, logLevel: level) }, log)
    }

    private func append(_ line: String) { lock.withLock { lines.append(line) } }

    var messages: [String] { lock.withLock { lines } }

    func count(containing text: String) -> Int { messages.filter { $0.contains(text) }.count }

    /// The waits the client announced after failed or refused attempts ("…; retrying in 0.2
    /// seconds"), in order, as it wrote them.
    var retryDelays: [String] {
        messages.compactMap { line in line.range(of: "retrying in ").map { String(line[$0.upperBound...]) } }
    }
}

/// A started client plus its recorder.
func startClient(
    _ url: String, id: String = uniqueID("c"), logger: Logger = testLogger,
    _ configure: (inout MQTTConfiguration) -> Void = { _ in }
) throws -> (MosquittoClient, EventRecorder) {
    var configuration = MQTTConfiguration(url: url, clientID: id)
    configuration.reconnectInitial = .milliseconds(200)
    configuration.reconnectMax = .seconds(2)
    configure(&configuration)
    let client = try MosquittoClient(configuration: configuration, logger: logger)
    let recorder = EventRecorder(client)
    try client.start()
    return (client, recorder)
}

/// Makes sure `client`'s subscription to `filter`'s topic `probeTopic` is active at the broker:
/// publishes probes on the same connection until one comes back (bounded).
func confirmSubscription(
    _ client: MosquittoClient, _ recorder: EventRecorder, probeTopic: String
) async throws -> Bool {
    for _ in 0..<20 {
        try client.publish(MQTTMessage(topic: probeTopic, string: "probe", qos: .atLeastOnce))
        if await recorder.waitMessage(on: probeTopic, timeout: .milliseconds(500)) != nil { return true }
    }
    return false
}

/// Opens /dev/null until the next descriptor number is above `target`; closes them on `close()`.
final class DescriptorHog {
    private(set) var descriptors: [Int32] = []

    init(above target: Int32) throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let needed = rlim_t(target) + 256
        if limit.rlim_cur < needed {
            limit.rlim_cur = min(limit.rlim_max, needed)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        for _ in 0..<Int(target) + 64 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                close()
                throw TestSupportError("open(/dev/null) failed with errno \(errno) after \(descriptors.count) descriptors")
            }
            descriptors.append(fd)
            if fd > target { return }
        }
    }

    /// Takes again every descriptor below `target` that other code (tests running in parallel)
    /// closed since: the kernel hands out the lowest free number, so a freed low number would go
    /// to the next socket. Bounded.
    func topUp(above target: Int32) {
        for _ in 0..<Int(target) + 64 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return }
            if fd > target {
                _ = Glibc.close(fd)
                return
            }
            descriptors.append(fd)
        }
    }

    func close() {
        for fd in descriptors { _ = Glibc.close(fd) }
        descriptors.removeAll()
    }

    deinit { close() }
}

/// A listening TCP socket on 127.0.0.1 and a port the kernel picks, with its bound address.
func loopbackListener(backlog: Int32) throws -> (Int32, sockaddr_in) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { throw TestSupportError("socket() failed: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0, listen(listener, backlog) == 0 else {
        let error = errno
        close(listener)
        throw TestSupportError("bind/listen failed: errno \(error)")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    return (listener, address)
}

/// A TCP listener on 127.0.0.1 that never accepts, with its accept queue filled, so further
/// connection attempts get no answer at all (the kernel drops their SYNs): a broker host that
/// silently drops packets.
final class SilentListener {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let (listener, bound) = try loopbackListener(backlog: 0)
        var address = bound
        descriptors.append(listener)
        port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the accept queue (backlog 0 holds one connection; a few more to be sure).
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            descriptors.append(fd)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        // Until the first queued connection is established (the queue is then full); the
        // kernel drops the later ones' SYNs.
        if descriptors.count > 1 {
            var ready = pollfd(fd: descriptors[1], events: Int16(POLLOUT), revents: 0)
            _ = poll(&ready, 1, 30_000)
        }
    }

    deinit {
        for fd in descriptors { close(fd) }
    }
}
