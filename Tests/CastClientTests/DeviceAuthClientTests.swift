import CastClient
import CastProtocol
import CastSimulator
import Logging
import NIOCore
import Synchronization
import Testing
import TestSupport

/// The client's device-auth step against the simulator over real TLS: the simulator's answer
/// verifies (signature over its real TLS certificate), each fault fails with its reason, and
/// `require` keeps the device from being announced.
@Suite(.timeLimit(.minutes(2)))
struct DeviceAuthClientTests {
    static let trust = DeviceAuthTrustStore(anchors: DeviceAuthTrustStore.castRoots.anchors + [DeviceAuthority.shared.root])

    /// A device answering as `behaviour`, a client with `mode`; `body` gets the snapshots' log.
    func run(_ behaviour: DeviceAuthBehaviour, _ mode: DeviceAuthMode, trust: DeviceAuthTrustStore = Self.trust,
             _ body: (SimulatedDevice, SnapshotLog) async throws -> Void) async throws {
        let simulator = CastSimulator(group: Harness.group)
        let device = try await simulator.addDevice(SimulatedDeviceConfiguration(
            name: "Auth \(behaviour.rawValue)", launchLatency: .milliseconds(30), replyLatency: .milliseconds(1)))
        await device.setDeviceAuthBehaviour(behaviour)
        var configuration = CastConnectionConfiguration.fast
        // Generous: the machine may be busy (a slow answer must not look like none).
        configuration.requestTimeout = .seconds(3)
        configuration.deviceAuth = mode
        var logger = Logger(label: "test.client")
        logger.logLevel = .critical
        let snapshots = SnapshotLog()
        let client = try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: device.port),
                                          configuration: configuration, eventLoop: Harness.group.next(), logger: logger,
                                          deviceAuthTrust: trust) { event in
            if case .snapshot(let s) = event { snapshots.append(s) }
        }
        client.start()
        do {
            try await body(device, snapshots)
        } catch {
            await client.shutdown()
            await simulator.shutdown()
            throw error
        }
        await client.shutdown()
        await simulator.shutdown()
    }

    @Test("a correct answer over the real TLS connection authenticates", arguments: [DeviceAuthMode.report, .require])
    func correct(mode: DeviceAuthMode) async throws {
        try await run(.correct, mode) { device, snapshots in
            let online = await snapshots.wait { $0.isOnline }
            let result = try #require(online?.authentication)
            #expect(result.isAuthenticated, "\(result)")
            #expect(result.certificate?.commonName == device.deviceCertificateCommonName)
            #expect(result.certificate?.organization == "Google Inc.")
        }
    }

    @Test("the public Cast roots alone do not trust the simulator")
    func simulatorRootNotTrustedByDefault() async throws {
        try await run(.correct, .report, trust: .castRoots) { _, snapshots in
            let online = await snapshots.wait { $0.isOnline }
            #expect(online?.authentication?.failure == .untrustedChain)
        }
    }

    @Test("each fault: report uses the device, require keeps it offline as unauthenticated", arguments: [
        (DeviceAuthBehaviour.noAnswer, DeviceAuthFailure.noAnswer), (.authError, .authError), (.badSignature, .badSignature),
        (.unknownRoot, .untrustedChain), (.expiredCertificate, .expired), (.replayedNonce, .nonceMismatch),
    ])
    func faults(behaviour: DeviceAuthBehaviour, failure: DeviceAuthFailure) async throws {
        try await run(behaviour, .report) { _, snapshots in
            // Online at once; the result follows when the answer (or its deadline) comes.
            #expect(await snapshots.wait { $0.isOnline } != nil)
            #expect(await waitUntil(timeout: .seconds(15)) { snapshots.all.contains { $0.authentication != nil } })
            let checked = snapshots.all.first { $0.authentication != nil }
            #expect(checked?.isOnline == true)
            #expect(checked?.authentication?.failure == failure)
            if behaviour == .noAnswer {
                #expect(snapshots.all.first { $0.isOnline }?.authentication == nil, "report never waits for an answer")
            }
        }
        try await run(behaviour, .require) { device, snapshots in
            let refused = await snapshots.wait { if case .offline(.unauthenticated(failure), _) = $0.link { true } else { false } }
            #expect(refused?.authentication?.failure == failure)
            // Retried with backoff, and refused again without a new snapshot (nothing changed).
            let retried = await waitUntil(timeout: .seconds(10)) { device.received(namespace: CastNamespace.deviceAuth).count >= 2 }
            #expect(retried)
            #expect(snapshots.all.allSatisfy { !$0.isOnline })
            #expect(snapshots.all.count == 1, "\(snapshots.all.map(\.link))")
            #expect(device.received().allSatisfy { $0.namespace == CastNamespace.deviceAuth })
        }
    }
}

/// The snapshots a client sent, for waiting on one.
final class SnapshotLog: Sendable {
    private let box = Mutex<[DeviceSnapshot]>([])

    func append(_ snapshot: DeviceSnapshot) { box.withLock { $0.append(snapshot) } }
    var all: [DeviceSnapshot] { box.withLock { $0 } }

    /// The first snapshot that matches, waiting up to `timeout` for it.
    func wait(timeout: Duration = .seconds(15), _ predicate: @escaping @Sendable (DeviceSnapshot) -> Bool) async -> DeviceSnapshot? {
        _ = await waitUntil(timeout: timeout) { self.all.contains(where: predicate) }
        return all.first(where: predicate)
    }
}
