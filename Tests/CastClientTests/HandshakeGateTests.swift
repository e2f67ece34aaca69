import CastClient
import CastProtocol
import CastSimulator
import Logging
import NIOCore
import NIOPosix
import Testing

/// A fleet's clients share a `HandshakeGate`: no more TLS handshakes at once than its limit,
/// every device still comes online, and a handshake that goes nowhere gives its place back.
@Suite(.timeLimit(.minutes(1)))
struct HandshakeGateTests {
    static func clients(for ports: [Int], gate: HandshakeGate,
                        configuration: CastConnectionConfiguration = .fast) throws -> [(CastDeviceClient, EventLog)] {
        var logger = Logger(label: "test.gate")
        logger.logLevel = .critical
        return try ports.map { port in
            let client = try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: port),
                                              configuration: configuration, eventLoop: Harness.group.next(),
                                              logger: logger, handshakeGate: gate)
            return (client, EventLog(client.events))
        }
    }

    /// With device authentication the place is held until the challenge is answered.
    @Test(arguments: [DeviceAuthMode.off, .report])
    func atMostTheLimitInFlightAndEveryDeviceOnline(auth: DeviceAuthMode) async throws {
        let simulator = CastSimulator(group: Harness.group)
        var ports: [Int] = []
        for i in 0..<12 {
            ports.append(try await simulator.addDevice(SimulatedDeviceConfiguration(name: "Gate \(i)")).port)
        }
        let gate = HandshakeGate(limit: 2)
        var configuration = CastConnectionConfiguration.fast
        configuration.deviceAuth = auth
        let clients = try Self.clients(for: ports, gate: gate, configuration: configuration)
        for (client, _) in clients { client.start() }
        var online = 0
        for (_, log) in clients {
            if await log.wait(timeout: .seconds(30), { $0.isConnected }) { online += 1 }
        }
        let counts = gate.counts
        for (client, _) in clients { await client.shutdown() }
        await simulator.shutdown()
        #expect(online == 12)
        #expect(counts.peak <= 2)
        #expect(counts.granted >= 12)
        #expect(counts.inFlight == 0)
        #expect(counts.waiting == 0)
    }

    /// A peer that accepts TCP and never answers the ClientHello holds its place only until the
    /// handshake deadline: with a limit of 1, a real device behind it still comes online.
    @Test func aStalledHandshakeGivesItsPlaceBack() async throws {
        let silent = try await ServerBootstrap(group: Harness.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let simulator = CastSimulator(group: Harness.group)
        let device = try await simulator.addDevice(SimulatedDeviceConfiguration(name: "Behind The Stall"))
        let gate = HandshakeGate(limit: 1)
        var configuration = CastConnectionConfiguration.fast
        configuration.connectTimeout = .milliseconds(500)
        let stalled = try Self.clients(for: [try #require(silent.localAddress?.port)], gate: gate, configuration: configuration)
        stalled[0].0.start()
        // The stalled client holds the only place before the device's client asks for it.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(10))
        while gate.counts.inFlight == 0, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let held = gate.counts.inFlight
        let good = try Self.clients(for: [device.port], gate: gate, configuration: configuration)
        good[0].0.start()
        let online = await good[0].1.wait(timeout: .seconds(30)) { $0.isConnected }
        let counts = gate.counts
        await stalled[0].0.shutdown()
        await good[0].0.shutdown()
        await simulator.shutdown()
        try await silent.close()
        #expect(held == 1)
        #expect(online)
        #expect(counts.peak == 1)
        // Shut down (a queued connect is let in and gives its place back at once): nothing holds
        // a place.
        let settled = clock.now.advanced(by: .seconds(10))
        while gate.counts.inFlight + gate.counts.waiting > 0, clock.now < settled { try await Task.sleep(for: .milliseconds(5)) }
        #expect(gate.counts.inFlight == 0)
    }
}
