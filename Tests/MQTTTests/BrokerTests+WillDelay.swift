import Foundation
import MQTT
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The MQTT 5 will delay (instance mode's last will): a will that waits, a blip that cancels it,
/// and the fall-back to 3.1.1 when the broker does not speak MQTT 5.
extension BrokerTests {
    /// Two clients with the same will delay. A loses its socket without a DISCONNECT and comes
    /// back within the delay; B is killed after that. B's will arrives only after the delay (a
    /// probe sent once the broker saw B go arrives first); A's will, due before B's had it not
    /// been cancelled, never comes.
    @Test(.timeLimit(.minutes(1)))
    func willDelayHoldsTheWillAndAReconnectCancelsIt() async throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let (observer, events) = try startClient(broker.url)
        try observer.subscribe("delay/#", qos: .atLeastOnce)
        #expect(await events.waitConnected())
        #expect(try await confirmSubscription(observer, events, probeTopic: "delay/probe0"))

        let (blipper, blipperEvents) = try startClient(broker.url, id: uniqueID("blipper")) {
            $0.will = MQTTMessage(topic: "delay/a", string: "gone", qos: .atLeastOnce, retain: true)
            $0.willDelay = 3
        }
        #expect(await blipperEvents.waitConnected())
        #expect(blipper.protocolVersion == .v5)

        let killedID = uniqueID("killed")
        let child = try ManagedProcess(
            try builtExecutable("mqtt-test-client"), [broker.url, killedID, "delay/b", "gone", "3"],
            logName: "mqtt-test-client")
        defer { child.stop() }
        #expect(await waitUntil { child.output.contains("connected") }, "mqtt-test-client did not connect:\n\(child.output)")

        // A's TCP connection breaks (no DISCONNECT: the broker starts the will's delay); the
        // client reconnects with its client id at once, which cancels the will.
        let socket = blipper.socketDescriptor
        #expect(socket >= 0)
        shutdown(socket, Int32(SHUT_RDWR))
        #expect(await blipperEvents.waitConnected(count: 2), "no reconnect: \(String(describing: blipper.lastError))")

        // The killed client's socket is closed (and readable at the broker) before the probes are
        // even sent, and mosquitto handles ready sockets in turn: a will without delay would be
        // published before the probes come back.
        child.signal(SIGKILL)
        #expect(try await confirmSubscription(observer, events, probeTopic: "delay/probe1"))
        #expect(try await confirmSubscription(observer, events, probeTopic: "delay/probe2"))
        #expect(events.messages.first { $0.topic == "delay/b" } == nil, "the will came before its delay")

        #expect(await events.waitMessage(on: "delay/b")?.string == "gone")
        #expect(try await confirmSubscription(observer, events, probeTopic: "delay/probe3"))
        #expect(events.messages.first { $0.topic == "delay/a" } == nil, "the reconnect did not cancel the will")
        await blipper.shutdown(finalMessage: nil)
        await observer.shutdown(finalMessage: nil)
    }

    /// A broker that speaks only 3.1.1 refuses the MQTT 5 CONNECT: with a will delay the client
    /// falls back to 3.1.1 (once, logged) and still registers its will; without one it keeps the
    /// configured MQTT 5 (as before) and reports the refusal.
    @Test(.timeLimit(.minutes(1)))
    func willDelayFallsBackTo311WhenTheBrokerRefusesMQTT5() async throws {
        let broker = try MQTT311OnlyBroker()
        defer { broker.stop() }
        let (logger, log) = RecordingLog.logger()
        let (client, recorder) = try startClient(broker.url, logger: logger) {
            $0.will = MQTTMessage(topic: "fallback/state", string: "gone", qos: .atLeastOnce, retain: true)
            $0.willDelay = 5
        }
        #expect(await recorder.waitConnected(), "no connect: \(String(describing: client.lastError)) \(log.messages)")
        #expect(client.protocolVersion == .v311)
        #expect(broker.refusedV5 >= 1)
        #expect(broker.acceptedWithWill >= 1)
        #expect(log.count(containing: "does not speak MQTT 5") == 1)
        #expect(recorder.disconnectReasons.isEmpty)
        await client.shutdown(finalMessage: nil)

        let (plain, plainEvents) = try startClient(broker.url) {
            $0.will = MQTTMessage(topic: "fallback/state", string: "gone", qos: .atLeastOnce, retain: true)
        }
        #expect(await waitUntil { plainEvents.disconnectReasons.count >= 2 })
        #expect(plain.protocolVersion == .v5)
        #expect(plainEvents.connectedCount == 0)
        #expect(plain.lastError?.message.lowercased().contains("unsupported protocol version") == true, "\(String(describing: plain.lastError))")
        await plain.shutdown(finalMessage: nil)
    }
}

/// A fake broker on 127.0.0.1 that speaks only MQTT 3.1.1: it answers an MQTT 5 CONNECT with a
/// 3.1.1 CONNACK "unacceptable protocol version" and closes, accepts a 3.1.1 CONNECT, answers
/// PINGREQ and ignores everything else. Counts what it saw. One thread, every wait bounded.
final class MQTT311OnlyBroker: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var counts = (refusedV5: 0, acceptedWithWill: 0)
    private var stopping = false
    private var thread: Thread?

    var url: String { "mqtt://127.0.0.1:\(port)" }
    var refusedV5: Int { lock.withLock { counts.refusedV5 } }
    var acceptedWithWill: Int { lock.withLock { counts.acceptedWithWill } }

    init() throws {
        let (listener, address) = try loopbackListener(backlog: 8)
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        let thread = Thread { [self] in serve() }
        self.thread = thread
        thread.start()
    }

    func stop() {
        lock.withLock { stopping = true }
        // The serving thread sees `stopping` within its 100 ms poll and closes the listener.
        _ = waitUntilBlocking(timeout: .seconds(5)) { self.lock.withLock { self.thread == nil } }
    }

    deinit { stop() }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func serve() {
        var clients: [Int32] = []
        var buffers: [Int32: [UInt8]] = [:]
        defer {
            for fd in clients { close(fd) }
            close(listener)
            lock.withLock { thread = nil }
        }
        while !isStopping {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
                + clients.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), 100) > 0 else { continue }
            if fds[0].revents != 0 {
                let fd = accept(listener, nil, nil)
                if fd >= 0 { clients.append(fd) }
            }
            for entry in fds.dropFirst() where entry.revents != 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(entry.fd, &chunk, chunk.count)
                var keep = n > 0
                if keep {
                    buffers[entry.fd, default: []] += chunk[..<n]
                    keep = handle(entry.fd, &buffers[entry.fd, default: []])
                }
                if !keep {
                    close(entry.fd)
                    clients.removeAll { $0 == entry.fd }
                    buffers[entry.fd] = nil
                }
            }
        }
    }

    private func reply(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Handles every complete packet in `buffer`; false closes the connection.
    private func handle(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        while buffer.count >= 2 {
            // Fixed header: type byte, then the remaining length (variable-length, ≤ 4 bytes).
            var length = 0
            var multiplier = 1
            var index = 1
            while true {
                guard index < buffer.count, index <= 4 else { return index <= 4 }
                let byte = Int(buffer[index])
                length += (byte & 0x7F) * multiplier
                multiplier *= 128
                index += 1
                if byte & 0x80 == 0 { break }
            }
            guard buffer.count >= index + length else { return true }
            let packet = Array(buffer[index..<(index + length)])
            let type = buffer[0] >> 4
            buffer.removeFirst(index + length)
            switch type {
            case 1:  // CONNECT: protocol name (2 + 4 bytes), level, flags.
                guard packet.count >= 8 else { return false }
                if packet[6] == 5 {
                    lock.withLock { counts.refusedV5 += 1 }
                    reply(fd, [0x20, 0x02, 0x00, 0x01])
                    return false
                }
                if packet[7] & 0x04 != 0 { lock.withLock { counts.acceptedWithWill += 1 } }
                reply(fd, [0x20, 0x02, 0x00, 0x00])
            case 12:  // PINGREQ
                reply(fd, [0xD0, 0x00])
            case 14:  // DISCONNECT
                return false
            default:
                break
            }
        }
        return true
    }
}
