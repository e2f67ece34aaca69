import CastProtocol
import CastSimulator
import NIOCore
import Testing
import TestSupport

@Suite("Receiver platform")
struct ReceiverTests {
    @Test("CONNECT + GET_STATUS shows the Backdrop idle screen")
    func getStatusShowsBackdrop() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":7}"#)
                let status = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 7))
                let app = try #require(status["status"]?["applications"]?.arrayValue?.first)
                #expect(app["appId"]?.stringValue == "E8C28D3C")
                #expect(app["isIdleScreen"]?.boolValue == true)
                #expect(status["status"]?["volume"]?["controlType"]?.stringValue == "attenuation")
                #expect(status["status"]?["volume"]?["stepInterval"]?.doubleValue == 0.05)
                #expect(sim.devices[0].counters.connectionsAccepted == 1)
            }
        }
    }

    @Test("without the idle screen the application list is empty")
    func emptyWhenIdle() async throws {
        try await withSimulator([testDevice("Speaker", idleScreen: false)]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":1}"#)
                let status = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 1))
                #expect(status["status"]?["applications"]?.arrayValue?.isEmpty == true)
            }
        }
    }

    @Test("LAUNCH answers after the launch latency with the requestId, and broadcasts")
    func launchRepliesAndBroadcasts() async throws {
        try await withSimulator([testDevice("TV", launch: .milliseconds(200))]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                // LAUNCH and a GET_STATUS in one write, so the device reads them together: the
                // GET_STATUS is answered first (1 ms), the launch waits its latency.
                func frame(_ json: String) throws -> [UInt8] {
                    try CastFraming.frame(CastMessage(source: "sender-0", destination: CastEndpoint.receiver,
                                                  namespace: CastNamespace.receiver, json: json))
                }
                try await client.sendRaw(try frame(#"{"type":"LAUNCH","appId":"CC1AD845","requestId":3}"#)
                                         + (try frame(#"{"type":"GET_STATUS","requestId":4}"#)))
                let reply = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 3))
                let order = client.messages.compactMap { $0.json?["requestId"]?.intValue }.filter { $0 == 3 || $0 == 4 }
                #expect(order == [4, 3], "replies in the order \(order)")
                let app = try #require(reply["status"]?["applications"]?.arrayValue?.first)
                #expect(app["appId"]?.stringValue == "CC1AD845")
                let session = try #require(app["sessionId"]?.stringValue)
                #expect(app["transportId"]?.stringValue == session)
                #expect(app["launchedFromCloud"]?.boolValue == false)
                let names = app["namespaces"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                #expect(names.contains(CastNamespace.media))
                let broadcast = try #require(await client.waitFor { m in
                    m.destinationID == "*" && m.json?["type"]?.stringValue == "RECEIVER_STATUS"
                })
                #expect(broadcast.json?["requestId"]?.intValue == 0)
                #expect(sim.devices[0].counters.launches == 1)
            }
        }
    }

    @Test("LAUNCH of an unknown app answers LAUNCH_ERROR NOT_FOUND")
    func launchUnknownApp() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                      #"{"type":"LAUNCH","appId":"DEADBEEF","requestId":4}"#)
                let error = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "LAUNCH_ERROR", requestId: 4))
                #expect(error["reason"]?.stringValue == "NOT_FOUND")
            }
        }
    }

    @Test("STOP: wrong sessionId is INVALID_SESSION_ID; the right one closes the app")
    func stop() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let app = try await client.launch("CC1AD845", requestId: 1)
                let session = try #require(app["sessionId"]?.stringValue)
                try await client.connect(to: session)
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                      #"{"type":"STOP","sessionId":"nope","requestId":2}"#)
                let invalid = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "INVALID_REQUEST", requestId: 2))
                #expect(invalid["reason"]?.stringValue == "INVALID_SESSION_ID")
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                      #"{"type":"STOP","sessionId":"\#(session)","requestId":3}"#)
                let status = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 3))
                #expect(status["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == "E8C28D3C")
                let close = await client.waitFor { m in
                    m.namespace == CastNamespace.connection && m.sourceID == session && m.json?["type"]?.stringValue == "CLOSE"
                }
                #expect(close != nil)
            }
        }
    }

    @Test("SET_VOLUME, GET_APP_AVAILABILITY, unknown types and missing requestIds")
    func volumeAvailabilityAndErrors() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                      #"{"type":"SET_VOLUME","volume":{"level":0.25},"requestId":1}"#)
                let volume = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 1))
                #expect(volume["status"]?["volume"]?["level"]?.doubleValue == 0.25)
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                      #"{"type":"SET_VOLUME","volume":{"muted":true},"requestId":2}"#)
                let muted = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 2))
                #expect(muted["status"]?["volume"]?["muted"]?.boolValue == true)
                #expect(muted["status"]?["volume"]?["level"]?.doubleValue == 0.25)

                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                      #"{"type":"GET_APP_AVAILABILITY","appId":["CC1AD845","E7C0A1B0","00000000"],"requestId":3}"#)
                let availability = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "GET_APP_AVAILABILITY", requestId: 3))
                #expect(availability["availability"]?["CC1AD845"]?.stringValue == "APP_AVAILABLE")
                #expect(availability["availability"]?["E7C0A1B0"]?.stringValue == "APP_AVAILABLE")
                #expect(availability["availability"]?["00000000"]?.stringValue == "APP_UNAVAILABLE")

                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"FROBNICATE","requestId":4}"#)
                let invalid = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "INVALID_REQUEST", requestId: 4))
                #expect(invalid["reason"]?.stringValue == "INVALID_COMMAND")

                // No requestId: ignored, like the reference receiver.
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS"}"#)
                // A request after it is answered: an answer to the first would have come before.
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":5}"#)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 5) != nil)
                let unanswered = client.messages.filter {
                    $0.namespace == CastNamespace.receiver && $0.json?["requestId"] == nil
                }
                #expect(unanswered.isEmpty)
                #expect(sim.devices[0].received(namespace: CastNamespace.receiver, type: "SET_VOLUME").count == 2)
            }
        }
    }

    @Test("messages to an endpoint without CONNECT are not delivered")
    func noDeliveryWithoutConnect() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":1}"#)
                // App endpoint: a second sender launches; the first talks to the app without CONNECT.
                // (The launch is answered after an answer to #1 would have been.)
                let app = try await client.launch("CC1AD845", requestId: 2)
                #expect(!client.messages.contains { $0.json?["requestId"]?.intValue == 1 }, "answered without CONNECT")
                #expect(sim.devices[0].received(namespace: CastNamespace.receiver, type: "GET_STATUS").first?.delivered == false)
                let transport = try #require(app["transportId"]?.stringValue)
                try await client.media(transport, #"{"type":"GET_STATUS","requestId":3}"#)
                #expect(await waitUntil { !sim.devices[0].received(namespace: CastNamespace.media).isEmpty })
                let recorded = sim.devices[0].received(namespace: CastNamespace.media)
                #expect(recorded.count == 1)
                #expect(recorded.first?.delivered == false)
                try await client.connect(to: transport)
                try await client.media(transport, #"{"type":"GET_STATUS","requestId":4}"#)
                let status = try #require(await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS", requestId: 4))
                #expect(status["status"]?.arrayValue?.isEmpty == true)
                // The only media message is the answer to #4: #3 (sent before, without CONNECT) got none.
                #expect(client.messages.filter { $0.namespace == CastNamespace.media }.count == 1)
            }
        }
    }

    @Test("two senders both receive the broadcast")
    func twoSendersReceiveBroadcast() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { a in
                try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { b in
                    try await b.connectAndSync()
                    try await a.connect(to: CastEndpoint.receiver)
                    try await a.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                     #"{"type":"SET_VOLUME","volume":{"level":0.7},"requestId":9}"#)
                    let reply = await a.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 9)
                    #expect(reply != nil)
                    for client in [a, b] {
                        let broadcast = await client.waitFor { m in
                            m.destinationID == "*" && m.json?["type"]?.stringValue == "RECEIVER_STATUS"
                                && m.json?["status"]?["volume"]?["level"]?.doubleValue == 0.7
                        }
                        #expect(broadcast?.json?["requestId"]?.intValue == 0)
                    }
                    #expect(sim.devices[0].counters.connectionsAccepted == 2)
                }
            }
        }
    }

    @Test("counts the sender connections open at once and times their overlap")
    func countsOpenConnectionsAndOverlap() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { a in
                try await a.connectAndSync()
                #expect(device.counters.openConnections == 1)
                let b = try await TestCastClient.connect(port: device.port, group: testGroup)
                try await b.connectAndSync()
                #expect(device.counters.openConnections == 2)
                #expect(device.counters.maxOpenConnections == 2)
                #expect(device.counters.longestOverlapMilliseconds == 0, "counted before the overlap ended")
                // The overlap lasts at least this long (a bound from below, not a timing assertion).
                try await Task.sleep(for: .milliseconds(50))
                await b.close()
                #expect(await waitUntil { device.counters.openConnections == 1 })
                #expect(device.counters.longestOverlapMilliseconds >= 50)
                #expect(device.counters.maxOpenConnections == 2)
            }
            #expect(await waitUntil { device.counters.openConnections == 0 })
        }
    }

    @Test("heartbeat: answers PING and pings on its own")
    func heartbeat() async throws {
        try await withSimulator([testDevice("TV", heartbeat: .milliseconds(100))]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                try await client.send(CastNamespace.heartbeat, to: CastEndpoint.receiver, HeartbeatMessage.ping.json())
                #expect(await client.waitFor(namespace: CastNamespace.heartbeat, type: "PONG") != nil)
                let ping = await client.waitFor(namespace: CastNamespace.heartbeat, type: "PING")
                #expect(ping != nil)
                #expect(ping?["requestId"] == nil)
            }
        }
    }

    @Test("multizone GET_STATUS answers MULTIZONE_STATUS with the configured members")
    func multizone() async throws {
        var config = testDevice("Group")
        config.multizoneMembers = [MultizoneDevice(deviceId: "abc", name: "Kitchen")]
        try await withSimulator([config]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connect(to: CastEndpoint.receiver)
                try await client.send(CastNamespace.multizone, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":5}"#)
                let status = try #require(await client.waitFor(namespace: CastNamespace.multizone, type: "MULTIZONE_STATUS", requestId: 5))
                #expect(status["status"]?["devices"]?.arrayValue?.first?["name"]?.stringValue == "Kitchen")
            }
        }
    }

    @Test("the echo app echoes STRING and BINARY and can push unsolicited messages")
    func echoApp() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let app = try await client.launch(SimulatedAppID.echo, requestId: 1)
                let transport = try #require(app["transportId"]?.stringValue)
                #expect(app["namespaces"]?.arrayValue?.first?["name"]?.stringValue == SimulatedAppID.echoNamespace)
                try await client.connect(to: transport)
                try await client.send(SimulatedAppID.echoNamespace, to: transport, #"{"hello":"world"}"#)
                let text = await client.waitFor { $0.namespace == SimulatedAppID.echoNamespace && $0.payload == .string(#"{"hello":"world"}"#) }
                #expect(text?.sourceID == transport)
                #expect(text?.destinationID == "sender-0")
                try await client.send(CastMessage(sourceID: "sender-0", destinationID: transport,
                                                  namespace: SimulatedAppID.echoNamespace, payload: .binary([0, 1, 2, 255])))
                let binary = await client.waitFor { $0.namespace == SimulatedAppID.echoNamespace && $0.payload == .binary([0, 1, 2, 255]) }
                #expect(binary != nil)
                #expect(await sim.devices[0].pushAppMessage(payload: .string(#"{"push":1}"#)))
                let pushed = await client.waitFor { $0.payload == .string(#"{"push":1}"#) }
                #expect(pushed?.destinationID == "*")
            }
        }
    }
}
