import CastClient
import CastProtocol
import CastSimulator
import NIOCore
import NIOPosix
import Testing

/// The `eureka_info` fetcher against simulated devices on addresses of their own (127.x.y.z,
/// `eureka_info` on 8443 and 8008 as on a real device): normal, slow, garbage, oversized,
/// refused, TLS-only, plain-only, a 403 that wants an empty `Host`.
@Suite(.timeLimit(.minutes(1)))
struct EurekaInfoFetcherTests {
    /// 127.100.0.1 – 127.250.255.254: away from the 127.0.0.x addresses other tests use.
    private static func address() -> String {
        "127.\(Int.random(in: 100...250)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
    }

    private static func device(_ name: String, castType: SimulatedCastType = .audio) -> SimulatedDeviceConfiguration {
        let host = address()
        return SimulatedDeviceConfiguration(
            name: name, id: SimulatedDeviceConfiguration.deviceID(forName: name + host), castType: castType,
            launchLatency: .milliseconds(20), replyLatency: .milliseconds(1), heartbeatInterval: nil
        ).onOwnAddress(host)
    }

    private func withDevices(_ configurations: [SimulatedDeviceConfiguration],
                             _ body: (CastSimulator, EurekaInfoFetcher) async throws -> Void,
                             timeout: TimeAmount = .seconds(30)) async throws {
        let simulator = try await CastSimulator.start(configurations, group: MultiThreadedEventLoopGroup.singleton)
        var configuration = EurekaInfoFetcher.Configuration()
        configuration.timeout = timeout
        let fetcher = try EurekaInfoFetcher(group: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        do {
            try await body(simulator, fetcher)
        } catch {
            await simulator.shutdown()
            throw error
        }
        await simulator.shutdown()
    }

    private func failure(_ fetcher: EurekaInfoFetcher, _ host: String) async -> EurekaFetchError? {
        do {
            _ = try await fetcher.fetch(host: host)
            return nil
        } catch let error as EurekaFetchError {
            return error
        } catch {
            Issue.record("not an EurekaFetchError: \(error)")
            return nil
        }
    }

    @Test func readsTheDeviceAndItsGroups() async throws {
        try await withDevices([Self.device("Kitchen"), Self.device("Den"), Self.device("TV", castType: .video)]) { sim, fetcher in
            let (kitchen, den, tv) = (sim.devices[0], sim.devices[1], sim.devices[2])
            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Downstairs", members: [kitchen.id, den.id]))
            let dynamic = try await sim.addGroup(SimulatedGroupConfiguration(name: "Temporary", members: [den.id, kitchen.id],
                                                                              dynamic: true))
            let info = try await fetcher.fetch(host: kitchen.host)
            #expect(info.friendlyName == "Kitchen" && info.name == "Kitchen")
            #expect(info.model == "Google Home" && info.manufacturer == "Google Inc.")
            #expect(info.id == kitchen.id)
            #expect(info.displaySupported == false && info.multizoneSupported == true)
            #expect(info.groups == [EurekaInfo.Group(name: "Downstairs", id: group.id, leader: .thisDevice, castPort: group.port)])
            #expect(info.dynamicGroups == [EurekaInfo.Group(name: "Temporary", id: dynamic.id,
                                                            leader: .member(host: den.host, port: 10001))])

            let member = try await fetcher.fetch(host: den.host)
            #expect(member.groups.first?.leader == .member(host: kitchen.host, port: 10001))
            #expect(member.groups.first?.castPort == nil)
            #expect(member.dynamicGroups.first?.leader == .thisDevice)
            #expect(member.dynamicGroups.first?.castPort == nil, "real devices give no port for dynamic groups")
            #expect(try await fetcher.fetch(host: tv.host).displaySupported == true)

            // After a leader move the members name the new leader.
            try await sim.moveLeader(ofGroup: group.id, to: den.id)
            let moved = try await fetcher.fetch(host: den.host)
            #expect(moved.groups.first?.leader == .thisDevice && moved.groups.first?.castPort == group.port)
            #expect(try await fetcher.fetch(host: kitchen.host).groups.first?.leader == .member(host: den.host, port: 10001))
            #expect(kitchen.counters.eurekaRequests == 2, "one request each time, over TLS")
        }
    }

    @Test func aForbiddenHostIsAskedAgainWithAnEmptyHostHeader() async throws {
        try await withDevices([Self.device("Strict")]) { sim, fetcher in
            let device = sim.devices[0]
            try await device.setEurekaBehaviour(EurekaBehaviour(mode: .forbiddenHost))
            #expect(try await fetcher.fetch(host: device.host).id == device.id)
            #expect(device.counters.eurekaRequests == 2)
        }
    }

    @Test func tlsOnlyAndPlainOnly() async throws {
        try await withDevices([Self.device("TLS"), Self.device("Plain")]) { sim, fetcher in
            let (secure, plain) = (sim.devices[0], sim.devices[1])
            try await secure.setEurekaBehaviour(EurekaBehaviour(listening: [.https]))
            try await plain.setEurekaBehaviour(EurekaBehaviour(listening: [.http]))
            let closedPlain = await secure.eurekaBoundPort(.http)
            let closedTLS = await plain.eurekaBoundPort(.https)
            #expect(closedPlain == nil && closedTLS == nil)
            #expect(try await fetcher.fetch(host: secure.host).friendlyName == "TLS")
            #expect(try await fetcher.fetch(host: plain.host).friendlyName == "Plain")
            #expect(secure.counters.eurekaRequests == 1 && plain.counters.eurekaRequests == 1)
        }
    }

    @Test func refusedOnBothPorts() async throws {
        try await withDevices([Self.device("Closed")]) { sim, fetcher in
            let device = sim.devices[0]
            try await device.setEurekaBehaviour(EurekaBehaviour(listening: []))
            let error = await failure(fetcher, device.host)
            #expect(error?.code == .refused, "\(String(describing: error))")
        }
    }

    @Test func aSlowDeviceMeetsTheDeadline() async throws {
        // The device would answer after 30 s; the fetch gives up within its 1 s: a fetch that
        // waited for the answer would succeed instead of failing with timeout.
        try await withDevices([Self.device("Slow")], { sim, fetcher in
            let device = sim.devices[0]
            try await device.setEurekaBehaviour(EurekaBehaviour(delay: .seconds(30)))
            let error = await failure(fetcher, device.host)
            #expect(error?.code == .timeout, "\(String(describing: error))")
        }, timeout: .seconds(1))
    }

    @Test func garbageOversizedAndFailingAnswersAreTypedErrors() async throws {
        try await withDevices([Self.device("Garbage"), Self.device("Huge"), Self.device("Broken")]) { sim, fetcher in
            let (garbage, huge, broken) = (sim.devices[0], sim.devices[1], sim.devices[2])
            try await garbage.setEurekaBehaviour(EurekaBehaviour(mode: .garbage))
            try await huge.setEurekaBehaviour(EurekaBehaviour(mode: .oversized))
            try await broken.setEurekaBehaviour(EurekaBehaviour(mode: .fail))
            #expect(await failure(fetcher, garbage.host)?.code == .invalidBody)
            #expect(garbage.counters.eurekaRequests == 1, "a body that is not JSON is not asked for again over HTTP")
            #expect(await failure(fetcher, huge.host)?.code == .tooLarge)
            let failed = await failure(fetcher, broken.host)
            #expect(failed?.code == .httpStatus && failed?.status == 500)
            #expect(broken.counters.eurekaRequests == 2, "TLS, then plain HTTP")
        }
    }

    @Test func somethingThatIsNotHTTPIsAnInvalidResponse() async throws {
        try await withDevices([Self.device("Cast only")]) { sim, _ in
            // Both "eureka" ports point at the device's Cast port (TLS, Cast framing).
            let device = sim.devices[0]
            var configuration = EurekaInfoFetcher.Configuration()
            configuration.httpsPort = device.port
            configuration.httpPort = device.port
            configuration.timeout = .seconds(30)
            let fetcher = try EurekaInfoFetcher(group: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            let error = await failure(fetcher, device.host)
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        }
    }
}
