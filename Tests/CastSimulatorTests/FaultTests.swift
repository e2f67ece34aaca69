import CastProtocol
import CastSimulator
import NIOCore
import Testing
import TestSupport

@Suite("Fault injection")
struct FaultTests {
    @Test("drop closes the sockets; the device keeps accepting")
    func drop() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let client = try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup)
            try await client.connectAndSync()
            await sim.devices[0].dropConnections()
            #expect(await waitUntil { client.isClosed })
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { again in
                try await again.connect(to: CastEndpoint.receiver)
                try await again.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":1}"#)
                #expect(await again.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 1) != nil)
            }
        }
    }

    @Test("silence stops answers and pings but keeps the socket; resume answers again")
    func silence() async throws {
        try await withSimulator([testDevice("TV", heartbeat: .milliseconds(50))]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                // A round trip first, so the CONNECT is processed before the silence begins.
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":100}"#)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 100) != nil)
                await sim.devices[0].silence()
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":1}"#)
                try await client.send(CastNamespace.heartbeat, to: CastEndpoint.receiver, HeartbeatMessage.ping.json())
                // What silence means: both messages reach the device and are not acted on, neither
                // is answered, and the device's own PINGs (every 50 ms) stop. Over six heartbeat
                // periods after the device recorded them (counted by the device: six PINGs it
                // withheld), at most the one PING written just before the silence may still come in.
                #expect(await waitUntil {
                    let received = sim.devices[0].received(namespace: CastNamespace.receiver, type: "GET_STATUS")
                        + sim.devices[0].received(namespace: CastNamespace.heartbeat, type: "PING")
                    return received.filter { !$0.delivered }.count >= 2
                })
                let settled = client.messages.count
                let withheld = sim.devices[0].counters.withheldWhileSilenced
                #expect(await waitUntil { sim.devices[0].counters.withheldWhileSilenced >= withheld + 6 })
                #expect(client.messages.count <= settled + 1, "the device kept sending while silenced")
                #expect(!client.isClosed)
                await sim.devices[0].resume()
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":2}"#)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 2) != nil)
                // An answer to #1 or the PING would have come before the answer to #2.
                let answers = client.messages.filter { message in
                    let header = CastPayloadHeader.parse(message.payload)
                    return header?.type == "PONG" || (header?.type == "RECEIVER_STATUS" && header?.requestId == 1)
                }
                #expect(answers.isEmpty, "answered while silenced: \(answers)")
            }
        }
    }

    @Test("garbage and oversized frames arrive as bytes the client's decoder rejects")
    func garbageAndOversized() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let a = try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup)
            try await a.connectAndSync()
            await sim.devices[0].sendGarbageFrame()
            #expect(await waitUntil { !a.errors.isEmpty })
            let garbage = a.errors.first as? CastFramingError
            if case .invalidMessage = garbage {} else { Issue.record("expected invalidMessage, got \(String(describing: a.errors.first))") }

            let b = try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup)
            try await b.connectAndSync()
            await sim.devices[0].sendOversizedFrameHeader()
            #expect(await waitUntil { !b.errors.isEmpty })
            #expect(b.errors.first as? CastFramingError == .oversizedFrame(length: 0x10_0000))
            await a.close()
            await b.close()
        }
    }

    @Test("garbage from a client closes only that connection")
    func garbageFromClient() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { good in
                try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { bad in
                    try await good.connectAndSync()
                    try await bad.sendRaw([0, 0, 0, 6, 0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA])
                    #expect(await waitUntil { bad.isClosed })
                    let oversized = try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup)
                    try await oversized.sendRaw([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
                    #expect(await waitUntil { oversized.isClosed })
                    // Valid protobuf, but not JSON: ignored, connection stays.
                    try await good.send(CastNamespace.receiver, to: CastEndpoint.receiver, "not json {")
                    try await good.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":1}"#)
                    #expect(await good.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 1) != nil)
                    #expect(!good.isClosed)
                }
            }
        }
    }

    @Test("restart refuses connections for N seconds, then listens on the same port with no app")
    func restart() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            let port = device.port
            let client = try await TestCastClient.connect(port: port, group: testGroup)
            _ = try await client.launch("CC1AD845", requestId: 1)
            // Long enough that the refusal is still on when it is checked on a busy machine.
            try await device.restart(refuseFor: .seconds(5))
            #expect(!device.isListening)
            #expect(!FreePort.isListening(port))
            await #expect(throws: (any Error).self) {
                _ = try await TestCastClient.connect(port: port, group: testGroup)
            }
            #expect(await waitUntil { client.isClosed })
            #expect(await waitUntil { device.isListening })
            #expect(device.port == port)
            try await withClosing(try await TestCastClient.connect(port: port, group: testGroup), close: { await $0.close() }) { again in
                try await again.connect(to: CastEndpoint.receiver)
                try await again.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":2}"#)
                let status = try #require(await again.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 2))
                #expect(status["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == "E8C28D3C")
                #expect(device.counters.restarts == 1)
            }
        }
    }

    @Test("remote volume change and finish_media are broadcast")
    func remoteVolumeAndFinish() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let (_, _) = try await MediaTests.loaded(client)
                await device.setVolumeRemotely(level: 0.3)
                let volume = await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 0) {
                    $0["status"]?["volume"]?["level"]?.doubleValue == 0.3
                }
                #expect(volume != nil)
                #expect(await device.finishMedia())
                let finished = await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS", requestId: 0) {
                    $0.firstStatus?["idleReason"]?.stringValue == "FINISHED"
                }
                #expect(finished?.firstStatus?["currentTime"]?.doubleValue == 100)
            }
        }
    }

    @Test("stream transfer: source CLOSE + IDLE INTERRUPTED, target launchedFromCloud at the same position")
    func streamTransfer() async throws {
        let clock = ManualSimulatorClock()
        try await withSimulator([testDevice("Living Room", clock: clock), testDevice("Kitchen", clock: clock)]) { sim in
            let (source, target) = (sim.devices[0], sim.devices[1])
            try await withClosing(try await TestCastClient.connect(port: source.port, group: testGroup), close: { await $0.close() }) { a in
                try await withClosing(try await TestCastClient.connect(port: target.port, group: testGroup), close: { await $0.close() }) { b in
                    let (t, _) = try await MediaTests.loaded(a)
                    try await b.connectAndSync()
                    try await source.advanceClock(by: 42)
                    try await sim.transfer(from: source, to: target)

                    let idle = await a.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS", requestId: 0) {
                        $0.firstStatus?["idleReason"]?.stringValue == "INTERRUPTED"
                    }
                    #expect(idle?.firstStatus?["playerState"]?.stringValue == "IDLE")
                    let close = await a.waitFor { $0.namespace == CastNamespace.connection && $0.sourceID == t }
                    #expect(close?.json?["type"]?.stringValue == "CLOSE")
                    let sourceStatus = await a.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 0) {
                        $0["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == "E8C28D3C"
                    }
                    #expect(sourceStatus != nil)

                    let targetStatus = try #require(await b.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 0) {
                        $0["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == "CC1AD845"
                    })
                    let app = try #require(targetStatus["status"]?["applications"]?.arrayValue?.first)
                    #expect(app["launchedFromCloud"]?.boolValue == true)
                    let newTransport = try #require(app["transportId"]?.stringValue)
                    #expect(newTransport != t)
                    try await b.connect(to: newTransport)
                    let media = try await b.mediaRequest(newTransport, requestId: 50, #"{"type":"GET_STATUS","requestId":50}"#)
                    #expect(media.firstStatus?["currentTime"]?.doubleValue == 42)
                    #expect(media.firstStatus?["playerState"]?.stringValue == "PLAYING")
                    #expect(media.firstStatus?["media"]?["contentId"]?.stringValue == "http://example.invalid/movie.mp4")
                }
            }
        }
    }
}
