import CastClient
import CastProtocol
import CastSimulator
import NIOCore
import Testing

@Suite(.timeLimit(.minutes(1)))
struct RecoveryTests {
    @Test func dropReconnectsAndRejoinsWithoutRelaunching() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        try await h.playSomething()
        #expect(h.device.counters.launches == 1)
        #expect(h.device.counters.loads == 1)
        await h.log.clear()

        await h.device.dropConnections()
        #expect(await h.log.wait { $0.isDisconnected })
        #expect(await h.log.wait { $0.isConnected })
        #expect(await h.log.wait { $0.startedApp == CastAppID.defaultMediaReceiver })
        #expect(await h.log.wait { $0.mediaState == "PLAYING" })
        // Joined, not relaunched or reloaded.
        #expect(h.device.counters.launches == 1)
        #expect(h.device.counters.loads == 1)
        #expect(h.device.counters.connectionsAccepted >= 2)
        // Commands work on the new connection with the rejoined media session.
        let paused = try await h.client.pause()
        #expect(paused?.playerState == "PAUSED")
    }

    @Test func silenceIsDetectedWithinTheHeartbeatTimeout() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        await h.log.clear()
        let clock = ContinuousClock()
        let start = clock.now
        await h.device.silence()
        #expect(await h.log.wait(timeout: .seconds(5)) { $0.disconnectReason == .heartbeatTimeout })
        let elapsed = clock.now - start
        // Timeout 1 s plus one timer tick of slack.
        #expect(elapsed < .milliseconds(2500), "silence detected after \(elapsed)")
        await h.device.resume()
        #expect(await h.log.wait { $0.isConnected })
    }

    @Test func garbageFrameDropsAndReestablishes() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        await h.log.clear()
        await h.device.sendGarbageFrame()
        #expect(await h.log.wait {
            if case .disconnected(.protocolError) = $0 { return true } else { return false }
        })
        #expect(await h.log.wait { $0.isConnected })
        _ = try await h.client.getReceiverStatus()
    }

    @Test func oversizedFrameDropsAndReestablishes() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        await h.log.clear()
        await h.device.sendOversizedFrameHeader()
        #expect(await h.log.wait {
            if case .disconnected(.protocolError(let why)) = $0 { return why.contains("65536") } else { return false }
        })
        #expect(await h.log.wait { $0.isConnected })
    }

    @Test func requestTimesOutWhenTheDeviceDoesNotAnswer() async throws {
        let config = CastConnectionConfiguration(heartbeatInterval: .seconds(5), heartbeatTimeout: .seconds(20),
                                                 requestTimeout: .milliseconds(300))
        let h = try await Harness(configuration: config)
        defer { Task { await h.close() } }
        try await h.connect()
        await h.device.silence()
        do {
            _ = try await h.client.getReceiverStatus()
            Issue.record("a silent device answered")
        } catch let error as CastError {
            #expect(error.code == .timeout)
        }
        await h.device.resume()
    }

    @Test func restartWithRefusalRecoversWithFreshState() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        try await h.playSomething()
        await h.log.clear()
        try await h.device.restart(refuseFor: .milliseconds(800))
        #expect(await h.log.wait { $0.isDisconnected })
        #expect(await h.log.wait(timeout: .seconds(10)) { $0.isConnected })
        // The restarted device runs no app; the client reports that instead of stale state.
        let status = try await h.client.getReceiverStatus()
        #expect(status.activeApp == nil)
        #expect(await h.client.snapshot.app == nil)
        #expect(h.device.counters.launches == 1)
    }

    @Test func appCloseEndsOnlyTheSession() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        try await h.playSomething()
        await h.log.clear()
        // Another sender stops the app: the device closes the app transport and broadcasts.
        let other = try await Harness.secondClient(to: h.device)
        _ = try await other.stopApp()
        #expect(await h.log.wait { if case .appSessionEnded = $0 { return true } else { return false } })
        #expect(await h.log.count { $0.isDisconnected } == 0)
        #expect(await h.client.isConnected)
        await other.shutdown()
    }

    @Test func addressChangeReconnectsToTheNewAddress() async throws {
        let h = try await Harness()
        defer { Task { await h.close() } }
        try await h.connect()
        let moved = try await h.simulator.addDevice(SimulatedDeviceConfiguration(name: "Moved Device", launchLatency: .milliseconds(30)))
        await h.log.clear()
        h.client.update(address: CastDeviceAddress(host: "127.0.0.1", port: moved.port))
        #expect(await h.log.wait { $0.isConnected })
        #expect(await waitUntilReceived(moved))
    }

    private func waitUntilReceived(_ device: SimulatedDevice) async -> Bool {
        for _ in 0..<200 {
            if !device.received(namespace: CastNamespace.connection, type: "CONNECT").isEmpty { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
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
        _ = await log.wait { $0.isConnected }
        _ = await log.wait { $0.startedApp != nil }
        return client
    }
}

import Logging
