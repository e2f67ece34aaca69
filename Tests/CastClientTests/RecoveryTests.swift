import Glibc
import CastClient
import CastProtocol
import CastSimulator
import NIOCore
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)))
struct RecoveryTests {
    @Test func dropReconnectsAndRejoinsWithoutRelaunching() async throws {
        try await withHarness { h in
            try await h.connect()
            try await h.playSomething()
            #expect(h.device.counters.launches == 1)
            #expect(h.device.counters.loads == 1)
            await h.log.clear()
            let mediaQueries = h.device.received(namespace: CastNamespace.media, type: "GET_STATUS").count

            await h.device.dropConnections()
            #expect(await h.log.wait { $0.isDisconnected })
            #expect(await h.log.wait { $0.isConnected })
            // The running session is joined again and its media read on the new connection.
            #expect(await waitUntil { await h.client.snapshot.joinedApp?.appId == CastAppID.defaultMediaReceiver })
            #expect(await waitUntil {
                h.device.received(namespace: CastNamespace.media, type: "GET_STATUS").count > mediaQueries
            })
            #expect(await h.client.snapshot.device.media?.playerState == "PLAYING")
            // Joined, not relaunched or reloaded.
            #expect(h.device.counters.launches == 1)
            #expect(h.device.counters.loads == 1)
            #expect(h.device.counters.connectionsAccepted >= 2)
            // Commands work on the new connection with the rejoined media session.
            let paused = try await h.client.media { .pause(mediaSessionId: $0) }
            #expect(paused?.playerState == "PAUSED")
        }
    }

    @Test func silenceIsDetectedWithinTheHeartbeatTimeout() async throws {
        try await withHarness { h in
            try await h.connect()
            await h.log.clear()
            await h.device.silence()
            // The reason proves the heartbeat found it, not some later socket timeout.
            #expect(await h.log.wait(timeout: .seconds(30)) { $0.disconnectReason == .heartbeatTimeout })
            await h.device.resume()
            #expect(await h.log.wait { $0.isConnected })
        }
    }

    @Test func garbageFrameDropsAndReestablishes() async throws {
        try await withHarness { h in
            try await h.connect()
            await h.log.clear()
            await h.device.sendGarbageFrame()
            #expect(await h.log.wait {
                if case .disconnected(.protocolError) = $0 { return true } else { return false }
            })
            #expect(await h.log.wait { $0.isConnected })
            _ = try await h.client.requests.getReceiverStatus().get()
        }
    }

    @Test func oversizedFrameDropsAndReestablishes() async throws {
        try await withHarness { h in
            try await h.connect()
            await h.log.clear()
            await h.device.sendOversizedFrameHeader()
            #expect(await h.log.wait {
                if case .disconnected(.protocolError(let why)) = $0 { return why.contains("65536") } else { return false }
            })
            #expect(await h.log.wait { $0.isConnected })
        }
    }

    @Test func requestTimesOutWhenTheDeviceDoesNotAnswer() async throws {
        let config = CastConnectionConfiguration(heartbeatInterval: .seconds(5), heartbeatTimeout: .seconds(20),
                                                 requestTimeout: .milliseconds(300))
        try await withHarness(configuration: config) { h in
            try await h.connect()
            await h.device.silence()
            do {
                _ = try await h.client.requests.getReceiverStatus().get()
                Issue.record("a silent device answered")
            } catch let error as CastError {
                #expect(error.code == .timeout)
            }
            await h.device.resume()
        }
    }

    @Test func restartWithRefusalRecoversWithFreshState() async throws {
        try await withHarness { h in
            try await h.connect()
            try await h.playSomething()
            await h.log.clear()
            try await h.device.restart(refuseFor: .milliseconds(800))
            #expect(await h.log.wait { $0.isDisconnected })
            #expect(await h.log.wait(timeout: .seconds(10)) { $0.isConnected })
            // The restarted device runs no app; the client reports that instead of stale state.
            let status = try await h.client.receiverStatus(after: h.client.requests.getReceiverStatus())
            #expect(status.activeApp == nil)
            #expect(await h.client.snapshot.joinedApp == nil)
            #expect(h.device.counters.launches == 1)
        }
    }

    @Test func appCloseEndsOnlyTheSession() async throws {
        try await withHarness { h in
            try await h.connect()
            try await h.playSomething()
            await h.log.clear()
            // Another sender stops the app: the device closes the app transport and broadcasts.
            let other = try await Harness.secondClient(to: h.device)
            _ = try await other.stopRunningApp()
            #expect(await h.log.wait { if case .appSessionEnded = $0 { return true } else { return false } })
            #expect(await h.log.count { $0.isDisconnected } == 0)
            #expect(await h.client.isConnected)
            await other.shutdown()
        }
    }

    @Test func stalledTLSHandshakeIsAbandonedAndRetried() async throws {
        // Something accepts TCP (the kernel's backlog) but never answers the TLS ClientHello.
        let blackHole = try ListeningSocket()
        defer { blackHole.close() }
        var config = CastConnectionConfiguration.fast
        // A deadline a TLS handshake of a debug build meets on a busy machine; without one the
        // client would wait on the black hole for ever.
        config.connectTimeout = .seconds(3)
        let simulator = CastSimulator(group: Harness.group)
        let device = try await simulator.addDevice(SimulatedDeviceConfiguration(name: "Behind", launchLatency: .milliseconds(30)))
        var logger = Logger(label: "test.stall")
        logger.logLevel = .warning
        let client = try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: blackHole.port),
                                          configuration: config, eventLoop: Harness.group.next(), logger: logger)
        let log = EventLog(client.events)
        client.start()
        #expect(await waitUntil { blackHole.hasPendingConnection }, "the client never connected to the black hole")
        // The device "moves" while the first handshake hangs: only a handshake deadline gets the
        // client out of the stalled attempt and on to the new address.
        client.update(address: CastDeviceAddress(host: "127.0.0.1", port: device.port))
        #expect(await log.wait(timeout: .seconds(30)) { $0.isConnected })
        await client.shutdown()
        await simulator.shutdown()
    }

    @Test func refusedAppConnectionDoesNotLoop() async throws {
        try await withHarness { h in
            try await h.connect()
            try await h.playSomething()
            await h.device.refuseAppConnections(true)
            await h.log.clear()
            await h.device.dropConnections()
            #expect(await h.log.wait { $0.isConnected })
            // The client joins the running app, is refused (CLOSE from the transport), asks the
            // platform what runs, sees the same session, joins again — at most
            // `maximumRejoins` times — and then leaves it alone (one CONNECT before the drop, one
            // on the new connection, then the rejoins).
            #expect(await h.log.wait { $0 == .mediaStatus([]) }, "the refused session's media is gone")
            #expect(await h.log.wait(timeout: .seconds(30)) { if case .joinFailed = $0 { true } else { false } },
                    "the client says why it stopped trying")
            // Receiver-status round trips after the refusal: a CONNECT the client decided on from
            // what it learnt went out before the later ones, so the device has it by the last reply.
            for _ in 0..<3 { _ = try await h.client.requests.getReceiverStatus().get() }
            let transport = try #require(try await h.device.state().receiverStatus.activeApp?.transportId)
            let connects = h.device.received(namespace: CastNamespace.connection, type: "CONNECT")
                .filter { $0.destinationID == transport }.count
            #expect(connects <= 2 + CastSessionMachine.maximumRejoins, "\(connects) CONNECTs to a transport that refuses them")
            // A refresh tries once more (and is refused as many times again, then gives up).
            _ = try await h.client.requests.refreshStatus().get()
            #expect(await waitUntil(timeout: .seconds(20)) {
                h.device.received(namespace: CastNamespace.connection, type: "CONNECT").filter { $0.destinationID == transport }.count
                    > connects
            })
            #expect(await h.client.isConnected)
            // Once the device accepts again and shows another session, the client joins that one.
            await h.device.refuseAppConnections(false)
            _ = try await h.client.requests.launch(appId: SimulatedAppID.echo).get()
            #expect(await h.log.wait { $0.startedApp == SimulatedAppID.echo })
        }
    }

    @Test func addressChangeReconnectsToTheNewAddress() async throws {
        try await withHarness { h in
            try await h.connect()
            let moved = try await h.simulator.addDevice(SimulatedDeviceConfiguration(name: "Moved Device", launchLatency: .milliseconds(30)))
            await h.log.clear()
            h.client.update(address: CastDeviceAddress(host: "127.0.0.1", port: moved.port))
            #expect(await h.log.wait { $0.isConnected })
            #expect(await waitUntilReceived(moved))
        }
    }

    private func waitUntilReceived(_ device: SimulatedDevice) async -> Bool {
        await waitUntil { !device.received(namespace: CastNamespace.connection, type: "CONNECT").isEmpty }
    }
}

extension Harness {
    /// A second, independent sender connected to `device`.
    static func secondClient(to device: SimulatedDevice) async throws -> CastDeviceClient {
        var logger = Logger(label: "test.second")
        logger.logLevel = .warning
        let client = try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: device.port),
                                          configuration: .fast, eventLoop: group.next(), logger: logger)
        let log = EventLog(client.events)
        client.start()
        let connected = await log.wait { $0.isConnected }
        try #require(connected, "the second client did not connect")
        let joined = await log.wait { $0.startedApp != nil }
        try #require(joined, "the second client did not see the running app")
        return client
    }
}

import Logging

/// A TCP socket on 127.0.0.1 that listens and never accepts.
final class ListeningSocket: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw CastError(.notConnected, "cannot listen") }
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &out) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: out.sin_port))
    }

    /// True when a connection waits in the accept queue (the listener is readable).
    var hasPendingConnection: Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }

    func close() { _ = Glibc.close(fd) }
}
