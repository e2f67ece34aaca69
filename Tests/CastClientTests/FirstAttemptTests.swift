import CastClient
import CastProtocol
import CastSimulator
import Logging
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// A device that cannot be reached reports `offline` after its first failed connect (its link is
/// `unknown` until then): the bridge's start-up hold waits for every device's first attempt.
@Suite(.timeLimit(.minutes(1)))
struct FirstAttemptTests {
    static func client(port: Int) throws -> CastDeviceClient {
        var logger = Logger(label: "test.first-attempt")
        logger.logLevel = .critical
        return try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: port),
                                    configuration: .fast, eventLoop: Harness.group.next(), logger: logger)
    }

    static func link(_ client: CastDeviceClient) async -> DeviceSnapshot.Link { await client.snapshot.device.link }

    @Test func aRefusedConnectIsReportedOffline() async throws {
        // A port nobody listens on: bound, then closed.
        let closed = try await ServerBootstrap(group: Harness.group).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(closed.localAddress?.port)
        try await closed.close()
        let client = try Self.client(port: port)
        let before = await Self.link(client)
        #expect({ if case .unknown = before { true } else { false } }())
        client.start()
        let reported = await waitUntil(timeout: .seconds(20)) {
            if case .offline(.connectFailed, _) = await Self.link(client) { return true }
            return false
        }
        let link = await Self.link(client)
        #expect(reported, "link: \(link)")
        await client.shutdown()
    }

    /// A peer that accepts TCP and closes at once (no TLS): also a failed first attempt.
    @Test func aConnectionClosedBeforeTheDeviceAnsweredIsReportedOffline() async throws {
        let rude = try await ServerBootstrap(group: Harness.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { $0.close() }
            .bind(host: "127.0.0.1", port: 0).get()
        let client = try Self.client(port: try #require(rude.localAddress?.port))
        client.start()
        let reported = await waitUntil(timeout: .seconds(20)) {
            if case .offline = await Self.link(client) { return true }
            return false
        }
        let link = await Self.link(client)
        #expect(reported, "link: \(link)")
        await client.shutdown()
        try await rude.close()
    }

    /// A device that answered once reports its end as `disconnected`, not as a failed attempt,
    /// and a reachable device never goes through `offline` on its way up.
    @Test func aReachableDeviceGoesStraightOnline() async throws {
        try await withHarness { h in
            try await h.connect()
            #expect(await h.client.snapshot.device.isOnline)
            let drops = await h.log.count { $0.isDisconnected }
            #expect(drops == 0)
        }
    }
}
