import CastProtocol
@testable import CastSimulator
import Foundation
import NIOCore
import Testing
import TestSupport

/// A context like a device with the Default Media Receiver playing, and two requests pending.
private func sampleContext(seed: UInt64 = 1) -> HostileContext {
    let transport = "6b9f1a62-2b0a-4b1e-9a55-0d6c2f1f2c11"
    let receiver = #"""
    {"requestId":0,"status":{"applications":[{"appId":"CC1AD845","appType":"WEB","displayName":"Default Media Receiver","iconUrl":"","isIdleScreen":false,"launchedFromCloud":false,"namespaces":[{"name":"urn:x-cast:com.google.cast.media"}],"sessionId":"\#(transport)","statusText":"Default Media Receiver","transportId":"\#(transport)","universalAppId":"CC1AD845"}],"isActiveInput":true,"isStandBy":false,"volume":{"controlType":"attenuation","level":0.5,"muted":false,"stepInterval":0.05}},"type":"RECEIVER_STATUS"}
    """#
    let media = #"""
    {"requestId":0,"status":[{"currentTime":3.25,"media":{"contentId":"http://127.0.0.1/a.mp3","contentType":"audio/mpeg","metadata":{"metadataType":3,"title":"Song"},"streamType":"BUFFERED"},"mediaSessionId":4,"playbackRate":1,"playerState":"PLAYING","supportedMediaCommands":278223,"volume":{"level":1,"muted":false}}],"type":"MEDIA_STATUS"}
    """#
    return HostileContext(
        receiverStatus: receiver, mediaStatus: media, appTransport: transport, mediaSessionId: 4,
        pendingRequests: [
            HostileRequest(namespace: CastNamespace.receiver, endpoint: CastEndpoint.receiver, sourceID: "sender-0",
                           requestId: 7, type: "SET_VOLUME"),
            HostileRequest(namespace: CastNamespace.media, endpoint: transport, sourceID: "sender-0",
                           requestId: 12, type: "PAUSE"),
        ],
        seed: seed)
}

/// The nesting depth of a JSON text (brackets outside strings).
private func depth(_ bytes: [UInt8]) -> Int {
    var deepest = 0, level = 0, inString = false, escaped = false
    for b in bytes {
        if inString {
            if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
            continue
        }
        switch b {
        case 0x22: inString = true
        case 0x5B, 0x7B: level += 1; deepest = max(deepest, level)
        case 0x5D, 0x7D: level -= 1
        default: break
        }
    }
    return deepest
}

/// Parses with Foundation, which (unlike `JSONValue`) keeps big numbers and reports depth errors.
private func foundationJSON(_ bytes: [UInt8]) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
}

@Suite("Hostile simulator")
struct HostileTests {
    let generator = HostileGenerator(sampleContext())

    @Test("class names parse; all is every class")
    func classNames() {
        #expect(HostileClass.parseList("all") == HostileClass.allCases)
        #expect(HostileClass.parseList("numbers, nulls") == [.numbers, .nulls])
        #expect(HostileClass.parseList("numbers,bogus") == nil)
        #expect(HostileClass.parseList("") == nil)
    }

    @Test("every class is bounded, deterministic for a seed, and fits 64 KiB except oversized_message",
          arguments: HostileClass.allCases)
    func boundedAndDeterministic(_ hostileClass: HostileClass) {
        let messages = generator.messages(hostileClass)
        #expect(!messages.isEmpty)
        #expect(messages.count <= 1_500, "\(messages.count) messages")
        #expect(messages.allSatisfy { $0.hostileClass == hostileClass })
        #expect(messages == HostileGenerator(sampleContext()).messages(hostileClass))
        let sizes = messages.map(\.bodySize)
        if hostileClass == .oversizedMessage {
            #expect(sizes.allSatisfy { $0 > HostileGenerator.frameLimit })
        } else {
            let over = messages.filter { $0.bodySize > HostileGenerator.frameLimit }.map(\.label)
            #expect(over.isEmpty, "over 64 KiB: \(over)")
        }
        let total = sizes.reduce(0, +)
        #expect(total < 8 << 20, "\(total) bytes in one round")
    }

    @Test("seeds change the random choices")
    func seeds() {
        let a = HostileGenerator(sampleContext(seed: 1)).messages(.longStrings)
        let b = HostileGenerator(sampleContext(seed: 2)).messages(.longStrings)
        #expect(a != b)
    }

    @Test("frames are Cast frames: a 4-byte length and a CastMessage with the payload as is")
    func framing() throws {
        for message in generator.messages([.numbers, .nulls, .namespaces]) where message.bodySize <= HostileGenerator.frameLimit {
            let frame = message.frame(destinationID: "sender-0")
            let length = Int(frame[0]) << 24 | Int(frame[1]) << 16 | Int(frame[2]) << 8 | Int(frame[3])
            #expect(length == frame.count - 4)
            let decoded = try CastMessage(serializedBytes: frame.dropFirst(4))
            #expect(decoded.namespace == message.namespaceText)
            #expect(decoded.sourceID == message.source)
            #expect(decoded.destinationID == "sender-0")
            #expect(decoded.payload == .string(message.payloadText))
        }
    }

    @Test("numbers: the reported crashers are among them")
    func numbers() {
        let texts = generator.messages(.numbers).map { ($0.namespaceText, $0.payloadText) }
        func has(_ namespace: String, _ fragment: String) -> Bool {
            texts.contains { $0.0 == namespace && $0.1.contains(fragment) }
        }
        for literal in ["1e19", "-1e19", "1e308", "99999999999999999999", "1.5"] {
            #expect(texts.contains { $0.0 == SimulatedAppID.echoNamespace && $0.1.contains(#""type":"X""#)
                && $0.1.contains(#""requestId":\#(literal),"#) }, "\(literal)")
            #expect(has(CastNamespace.heartbeat, #""type":"PING","requestId":\#(literal)"#), "\(literal)")
            #expect(has(CastNamespace.receiver, #""requestId":\#(literal)"#), "\(literal)")
            #expect(has(CastNamespace.media, #""requestId":\#(literal)"#), "\(literal)")
        }
        #expect(has(CastNamespace.media, #""mediaSessionId":1e19"#))
        #expect(has(CastNamespace.media, #""supportedMediaCommands":18446744073709551615"#))
        #expect(has(CastNamespace.media, #""metadataType":1e19"#))
        #expect(has(CastNamespace.media, #""whenSkippable":1e19"#))
        #expect(has(CastNamespace.receiver, #""level":1e308"#))
        // Each is valid JSON (Foundation keeps the literal's magnitude).
        #expect(generator.messages(.numbers).allSatisfy { foundationJSON($0.payload) != nil })
    }

    @Test("wrong types: every path of every template changes type, and non-object payloads")
    func wrongTypes() {
        let messages = generator.messages(.wrongTypes)
        #expect(messages.contains { $0.label.hasPrefix("RECEIVER_STATUS status.applications[0].transportId ->") })
        #expect(messages.contains { $0.label == "MEDIA_STATUS(break) payload []" })
        let transport = messages.first { $0.label.hasPrefix("RECEIVER_STATUS status.applications[0].transportId") }
        let parsed = transport.flatMap { foundationJSON($0.payload) } as? [String: Any]
        let apps = (parsed?["status"] as? [String: Any])?["applications"] as? [[String: Any]]
        #expect(apps?.first?["transportId"] != nil)
        #expect(!(apps?.first?["transportId"] is String))
    }

    @Test("nulls and empty values: one path at a time and everything at once")
    func nullsAndEmpty() {
        let nulls = generator.messages(.nulls)
        #expect(nulls.contains { $0.label == "MEDIA_STATUS status[0].mediaSessionId = null" })
        let all = nulls.first { $0.label == "RECEIVER_STATUS every leaf null" }
        #expect(all?.payloadText.contains("\"type\":null") == true)
        #expect(all?.payloadText.contains("\"transportId\":null") == true)
        let empty = generator.messages(.emptyValues)
        #expect(empty.contains { $0.payloadText.contains(#""transportId":"""#) })
        #expect(empty.contains { $0.payloadText.contains(#""applications":[]"#) })
    }

    @Test("deep nesting: thousands deep, past 512, within 64 KiB")
    func deepNesting() {
        let messages = generator.messages(.deepNesting)
        let depths = messages.map { depth($0.payload) }
        #expect(depths.contains { $0 >= 10_000 }, "deepest \(depths.max() ?? 0)")
        #expect(depths.contains { $0 > 512 && $0 < 600 })
        #expect(messages.contains { $0.namespaceText == SimulatedAppID.echoNamespace && depth($0.payload) >= 5_000 })
        #expect(messages.contains { $0.namespaceText == CastNamespace.media && depth($0.payload) >= 5_000 })
    }

    @Test("long strings: 60 000 bytes in every string (and a key), still valid JSON")
    func longStrings() throws {
        let messages = generator.messages(.longStrings)
        #expect(messages.count >= 20)
        for message in messages {
            let json = try #require(foundationJSON(message.payload), "\(message.label)")
            #expect(message.payload.count >= HostileGenerator.bigPayload, "\(message.label)")
            _ = json
        }
        #expect(messages.contains { $0.label.hasPrefix("RECEIVER_STATUS status.applications[0].transportId") })
        #expect(messages.contains { $0.label.hasPrefix("APP type") })
    }

    @Test("invalid UTF-8: escapes, BINARY on JSON namespaces, and raw bytes a decoder rejects")
    func invalidUTF8() {
        let messages = generator.messages(.invalidUTF8)
        #expect(messages.contains { $0.payloadText.contains(#"\ud800"#) })
        #expect(messages.contains { $0.binary && $0.namespaceText == CastNamespace.receiver })
        let raw = messages.filter { !$0.binary && String(validating: $0.payload, as: UTF8.self) == nil }
        #expect(!raw.isEmpty)
        // They come last (a sender drops the connection on them) and no protobuf decoder takes them.
        let firstRaw = messages.firstIndex { !$0.binary && String(validating: $0.payload, as: UTF8.self) == nil } ?? 0
        #expect(messages[firstRaw...].allSatisfy {
            String(validating: $0.payload, as: UTF8.self) == nil || String(validating: $0.namespace, as: UTF8.self) == nil
        })
        for message in raw {
            #expect(throws: (any Error).self) { try CastMessage(serializedBytes: message.body(destinationID: "*")) }
        }
        #expect(messages.contains { String(validating: $0.namespace, as: UTF8.self) == nil })
    }

    @Test("unknown types: unknown, misspelt and missing types, real types on the wrong namespace")
    func unknownTypes() {
        let messages = generator.messages(.unknownTypes)
        #expect(messages.contains { $0.payloadText.contains(#""type":"UNKNOWN""#) })
        #expect(messages.contains { $0.label == "RECEIVER_STATUS no type" && !$0.payloadText.contains("\"type\"") })
        #expect(messages.contains { $0.namespaceText == CastNamespace.media && $0.payloadText.contains("RECEIVER_STATUS") })
    }

    @Test("namespaces: +, #, / and control characters, on app messages and in the app's namespace list")
    func namespaces() {
        let messages = generator.messages(.namespaces)
        let names = Set(messages.map(\.namespaceText))
        for fragment in ["+", "#", "/", "\u{0}", "\n", "\u{1B}"] {
            #expect(names.contains { $0.contains(fragment) }, "\(fragment.debugDescription)")
        }
        #expect(messages.contains { $0.namespaceText == CastNamespace.receiver && $0.payloadText.contains("urn:x-cast:a/+/#") })
    }

    @Test("broken replies: the pending id with broken bodies, and near misses that are not the id")
    func brokenReplies() {
        let messages = generator.messages(.brokenReplies)
        let receiver = messages.filter { $0.namespaceText == CastNamespace.receiver }
        #expect(receiver.contains { $0.payloadText == #"{"type":"RECEIVER_STATUS","requestId":7}"# })
        #expect(receiver.contains { $0.payloadText.contains(#""requestId":7.5,"#) })
        #expect(receiver.contains { $0.payloadText.contains(#""requestId":18446744073709551623,"#) })
        #expect(receiver.allSatisfy { $0.destination == .id("sender-0") && $0.source == CastEndpoint.receiver })
        let media = messages.filter { $0.namespaceText == CastNamespace.media }
        #expect(media.contains { $0.payloadText.contains(#""type":"MEDIA_STATUS","requestId":12,"status":"broken""#) })
        #expect(media.allSatisfy { $0.source == sampleContext().appTransport })
        // Near misses never carry the exact id as a JSON integer.
        for miss in HostileGenerator.nearMissReplies(to: sampleContext().pendingRequests[0]) {
            let parsed = foundationJSON(miss.payload) as? [String: Any]
            #expect((parsed?["requestId"] as? NSNumber).map { $0.doubleValue == 7 && "\($0)" == "7" } != true, "\(miss.payloadText)")
        }
    }

    @Test("a connected sender receives a round; armed replies answer a request before the real reply")
    func live() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connectAndSync(requestId: 5)
                let sent = await device.sendHostile([.numbers, .nulls])
                #expect(sent > 100)
                #expect(await waitUntil { client.messages.count >= sent })
                #expect(device.counters.hostileMessagesSent == sent)
                #expect(client.messages.contains { $0.namespace == SimulatedAppID.echoNamespace })

                // The last request (GET_STATUS #5) is the pending one of broken_replies.
                let context = try #require(await device.hostileContext())
                #expect(context.pendingRequests.map(\.requestId) == [5])

                await device.armHostileReplies(.nearMiss, count: 1)
                let before = client.messages.count
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":9}"#)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 9) != nil)
                let after = Array(client.messages[before...])
                let misses = after.filter { $0.payload.text?.contains("HOSTILE_NEAR_MISS") == true }
                #expect(misses.count == HostileGenerator.nearMissReplies(to: context.pendingRequests[0]).count)
                let realIndex = after.firstIndex { $0.payload.text?.contains("RECEIVER_STATUS") == true } ?? 0
                let lastMiss = after.lastIndex { $0.payload.text?.contains("HOSTILE_NEAR_MISS") == true } ?? Int.max
                #expect(lastMiss < realIndex, "near misses before the real reply")
            }
        }
    }

    @Test("hostile mode repeats until behave; invalid UTF-8 closes a strict sender's connection")
    func modeAndBehave() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connectAndSync()
                await device.startHostile([.unknownTypes, .emptyValues], interval: .milliseconds(20))
                #expect(await device.isHostile())
                #expect(await waitUntil {
                    client.messages.contains { $0.label(contains: "UNKNOWN") } && client.messages.contains { $0.payload.text?.contains(#""transportId":"""#) == true }
                })
                await device.behave()
                #expect(!(await device.isHostile()))
                let settled = device.counters.hostileMessagesSent
                // A round trip on the device's loop after behave(): the repeating task is gone,
                // nothing hostile was sent in between, and nothing hostile came after the reply.
                try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"GET_STATUS","requestId":77}"#)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: 77) != nil)
                #expect(device.counters.hostileMessagesSent == settled)
                let reply = client.messages.lastIndex { $0.payload.text?.contains(#""requestId":77"#) == true } ?? 0
                let after = client.messages.dropFirst(reply + 1).filter { $0.namespace != CastNamespace.heartbeat }
                #expect(after.isEmpty, "sent after the reply: \(after.map(\.namespace))")

                await device.sendHostile([.invalidUTF8])
                #expect(await waitUntil { client.isClosed })
            }
        }
    }

    @Test("control action: hostile, hostile_replies, behave; bad class names are refused")
    func controlAction() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            let router = ControlRouter(simulator: sim)
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                try await client.connectAndSync()
                var response = await router.fault(device, .object(["action": .string("hostile"), "class": .string("namespaces")]))
                let body = try CastJSON.decode(JSONValue.self, from: response.body)
                #expect(body["ok"]?.boolValue == true)
                #expect((body["messages"]?.intValue ?? 0) == HostileGenerator(try #require(await device.hostileContext())).messages(.namespaces).count)
                response = await router.fault(device, .object(["action": .string("hostile"), "class": .string("bogus")]))
                #expect(response.body.contains("error"))
                response = await router.fault(device, .object(["action": .string("hostile"), "class": .string("all"),
                                                               "interval_ms": .number(50)]))
                #expect(await device.isHostile())
                response = await router.fault(device, .object(["action": .string("hostile_replies"), "mode": .string("broken_body"),
                                                               "count": .number(2)]))
                #expect(response.body.contains("\"ok\":true"))
                response = await router.fault(device, .object(["action": .string("behave")]))
                #expect(!(await device.isHostile()))
            }
        }
    }
}

extension CastMessage {
    fileprivate func label(contains text: String) -> Bool { payload.text?.contains(text) == true }
}
