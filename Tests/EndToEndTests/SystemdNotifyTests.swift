import Foundation
import MQTT
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A fake systemd: a Unix datagram socket that records what the daemon sends on NOTIFY_SOCKET.
final class FakeNotifySocket: @unchecked Sendable {
    let path: String
    private let fd: Int32

    init() throws {
        path = "/tmp/c2m-notify-\(UUID().uuidString.prefix(8)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket(AF_UNIX) failed") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw TestSupportError("bind(\(path)) failed") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Every datagram that arrives within `duration` (bounded: at most 1 000).
    func receive(for duration: Duration) -> [String] {
        let deadline = ContinuousClock.now + duration
        var out: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while out.count < 1000 {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(max(1, min(1000, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            guard poll(&pfd, 1, ms) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { out.append(String(decoding: buffer[0..<n], as: UTF8.self)) }
        }
        return out
    }

    /// Waits (bounded) for a datagram equal to `state`; returns what arrived until then.
    func wait(for state: String, timeout: Duration) -> [String] {
        let deadline = ContinuousClock.now + timeout
        var seen: [String] = []
        while ContinuousClock.now < deadline {
            seen += receive(for: .milliseconds(200))
            if seen.contains(state) { break }
        }
        return seen
    }
}

/// The systemd notify protocol: READY after the first broker connection, WATCHDOG pings from
/// the consumer loop (they stop while it is blocked), STOPPING on shutdown.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndSystemdNotifyTests {
    @Test func readyWatchdogAndStopping() async throws {
        let socket = try FakeNotifySocket()
        let env = ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000", "CAST2MQTT_TEST_HOOKS": "1"]
        try await withBridge(devices: ["Living Room TV"], environment: env) { h in
            let first = socket.wait(for: "READY=1", timeout: .seconds(20))
            #expect(first.contains("READY=1"), "\(first); log:\n\(h.log.suffix(2000))")
            // WATCHDOG_USEC=2 s: a ping at least every second while the loop runs.
            let pings = socket.receive(for: .seconds(4)).filter { $0 == "WATCHDOG=1" }
            #expect(pings.count >= 3, "\(pings)")

            // Block the consumer loop for 5 s: no pings while it is stuck.
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/bridge/request/debug_stall", payload: Array("5".utf8),
                                             qos: .atLeastOnce))
            let stalled = await waitUntil { h.log.contains("stalling the consumer loop") }
            #expect(stalled, "the test hook did not run; log:\n\(h.log.suffix(2000))")
            _ = socket.receive(for: .milliseconds(300))  // a ping sent just before the stall
            let during = socket.receive(for: .seconds(3)).filter { $0 == "WATCHDOG=1" }
            #expect(during.isEmpty, "pings while the consumer loop was blocked: \(during)")
            // Once it runs again, so do the pings.
            let after = socket.wait(for: "WATCHDOG=1", timeout: .seconds(30))
            #expect(after.contains("WATCHDOG=1"))

            h.stopDaemon()
            let last = socket.receive(for: .seconds(1))
            #expect(last.contains("STOPPING=1"), "\(last)")
        }
    }
}
