import CastProtocol
import CastSimulator
import NIOCore
import NIOPosix
import TestSupport

let testGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

/// A device configuration with short latencies for tests.
func testDevice(_ name: String, port: Int = 0, clock: any SimulatorClock = SystemSimulatorClock(),
                launch: TimeAmount = .milliseconds(50), heartbeat: TimeAmount? = nil,
                idleScreen: Bool = true) -> SimulatedDeviceConfiguration {
    SimulatedDeviceConfiguration(name: name, port: port, launchLatency: launch, replyLatency: .milliseconds(1),
                                 heartbeatInterval: heartbeat, idleScreen: idleScreen, clock: clock,
                                 tickInterval: .milliseconds(20))
}

/// Runs `body` with started devices and always shuts them down.
func withSimulator(_ configurations: [SimulatedDeviceConfiguration],
                   _ body: (CastSimulator) async throws -> Void) async throws {
    let simulator = try await CastSimulator.start(configurations, group: testGroup)
    do {
        try await body(simulator)
    } catch {
        await simulator.shutdown()
        throw error
    }
    await simulator.shutdown()
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Sequential request ids per test.
final class RequestIDs: @unchecked Sendable {
    private var next = 0
    func callAsFunction() -> Int {
        next += 1
        return next
    }
}

extension TestCastClient {
    /// CONNECT to receiver-0 and LAUNCH `appId`; returns the running app entry.
    func launch(_ appId: String, requestId: Int) async throws -> JSONValue {
        try await connect(to: CastEndpoint.receiver)
        try await send(CastNamespace.receiver, to: CastEndpoint.receiver,
                       #"{"type":"LAUNCH","appId":"\#(appId)","requestId":\#(requestId)}"#)
        guard let status = await waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: requestId),
              let app = status["status"]?["applications"]?.arrayValue?.first
        else { throw TestFailure("no RECEIVER_STATUS for LAUNCH \(appId)") }
        return app
    }

    func media(_ transportId: String, _ json: String) async throws {
        try await send(CastNamespace.media, to: transportId, json)
    }

    /// Sends a media request and waits for the reply with its requestId (any type).
    func mediaRequest(_ transportId: String, requestId: Int, _ json: String) async throws -> JSONValue {
        try await media(transportId, json)
        guard let reply = await waitFor(timeout: .seconds(30), { m in
            m.namespace == CastNamespace.media && m.json?["requestId"]?.intValue == requestId
        })?.json else { throw TestFailure("no reply to media request \(requestId): \(json)") }
        return reply
    }
}

extension JSONValue {
    var firstStatus: JSONValue? { self["status"]?.arrayValue?.first }
}

extension TestCastClient {
    /// CONNECT to receiver-0 and wait for a GET_STATUS answer: afterwards the device has
    /// registered this connection and its virtual connection.
    func connectAndSync(requestId: Int = 999) async throws {
        try await connect(to: CastEndpoint.receiver)
        try await send(CastNamespace.receiver, to: CastEndpoint.receiver,
                       #"{"type":"GET_STATUS","requestId":\#(requestId)}"#)
        guard await waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: requestId) != nil else {
            throw TestFailure("no RECEIVER_STATUS after CONNECT")
        }
    }
}

/// A loopback address of its own for one test (127.100.0.1 – 127.250.255.254: away from the
/// 127.0.0.x addresses other tests use, and random, so tests running at the same time, here or
/// in another checkout on this machine, do not meet).
func randomLoopbackAddress() -> String {
    "127.\(Int.random(in: 100...250)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
}

/// A test device on an address of its own (Cast on 8009, eureka_info on 8008 and 8443).
func ownAddressDevice(_ name: String, castType: SimulatedCastType = .audio, volume: Double = 0.5,
                      heartbeat: TimeAmount? = nil) -> SimulatedDeviceConfiguration {
    var configuration = testDevice(name, heartbeat: heartbeat).onOwnAddress(randomLoopbackAddress())
    configuration.castType = castType
    configuration.model = castType.defaultModel
    configuration.initialVolumeLevel = volume
    configuration.id = SimulatedDeviceConfiguration.deviceID(forName: name + configuration.host)
    return configuration
}

extension TestCastClient {
    /// Connects to `device` (its own address or 127.0.0.1) and syncs with its receiver.
    static func connected(to device: SimulatedDevice, group: any EventLoopGroup = testGroup) async throws -> TestCastClient {
        let client = try await TestCastClient.connect(host: device.host, port: device.port, group: group)
        try await client.connectAndSync()
        return client
    }

    /// Multizone GET_STATUS on `receiver-0` and the MULTIZONE_STATUS answering it.
    func multizoneStatus(requestId: Int) async throws -> JSONValue {
        try await send(CastNamespace.multizone, to: CastEndpoint.receiver,
                       #"{"type":"GET_STATUS","requestId":\#(requestId)}"#)
        guard let status = await waitFor(namespace: CastNamespace.multizone, type: "MULTIZONE_STATUS",
                                         requestId: requestId) else {
            throw TestFailure("no MULTIZONE_STATUS for request \(requestId)")
        }
        return status
    }
}
