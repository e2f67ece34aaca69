import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Web

/// A hub with a recording `submit` (what would go into the daemon's input queue).
final class Submitted: Sendable {
    let messages = NIOLockedValueBox<[(topic: String, payload: String)]>([])
    var all: [(topic: String, payload: String)] { messages.withLockedValue { $0 } }
}

func makeHub(_ submitted: Submitted = Submitted()) -> WebHub {
    WebHub(baseTopic: "cast2mqtt", logTail: LogTail()) { topic, payload in
        submitted.messages.withLockedValue { $0.append((topic, String(decoding: payload, as: UTF8.self))) }
    }
}

func json(_ bytes: [UInt8]?) throws -> [String: Any] {
    let data = Data(try #require(bytes))
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

func tee(_ hub: WebHub, _ topic: String, _ payload: String) {
    hub.tee(topic: topic, payload: Array(payload.utf8))
}

@Suite struct WebHubTests {
    @Test func keepsTheLatestDocumentPerTopicAndIgnoresTheRest() throws {
        let hub = makeHub()
        tee(hub, "cast2mqtt/kitchen/availability", "online")
        tee(hub, "cast2mqtt/kitchen/media", #"{"state":"playing","title":"A"}"#)
        tee(hub, "cast2mqtt/kitchen/media", #"{"state":"paused","title":"A"}"#)
        tee(hub, "cast2mqtt/bridge/info", #"{"version":"1"}"#)
        tee(hub, "homeassistant/device/cast2mqtt_x/config", #"{"a":1}"#)
        tee(hub, "cast2mqtt/kitchen/message/urn:x-cast:com.example", "hello")
        tee(hub, "cast2mqtt/kitchen/command/play", "")
        tee(hub, "other/kitchen/media", #"{"state":"idle"}"#)
        let snapshot = try json(hub.snapshot(meta: Array("{}".utf8)).message)
        let documents = try #require(snapshot["documents"] as? [String: Any])
        #expect(Set(documents.keys) == ["kitchen/availability", "kitchen/media", "bridge/info"])
        #expect(documents["kitchen/availability"] as? String == "online")
        #expect((documents["kitchen/media"] as? [String: Any])?["state"] as? String == "paused")
    }

    @Test func anOpenPageGetsOnlyTheLatestOfWhatChanged() async throws {
        let hub = makeHub()
        tee(hub, "cast2mqtt/kitchen/state", "idle")
        let (client, wake) = hub.connect()
        let start = hub.snapshot(meta: Array("{}".utf8)).version
        for n in 1...50 { tee(hub, "cast2mqtt/kitchen/media", #"{"position":\#(n)}"#) }
        tee(hub, "cast2mqtt/kitchen/event", #"{"type":"media_loaded"}"#)
        var iterator = wake.makeAsyncIterator()
        #expect(await iterator.next() != nil, "a change wakes the page")
        let update = hub.update(client: client, after: start)
        let message = try json(update.message)
        let documents = try #require(message["documents"] as? [String: Any])
        #expect(documents.count == 1, "fifty changes of one topic are one document")
        #expect((documents["kitchen/media"] as? [String: Any])?["position"] as? Int == 50)
        #expect((message["recent"] as? [[String: Any]])?.map { $0["kind"] as? String } == ["event"])
        #expect(hub.update(client: client, after: update.version).message == nil, "nothing new, nothing sent")
        hub.disconnect(client)
        #expect(hub.clientCount == 0)
    }

    @Test func aClearedTopicIsSentAsNullAndLeavesTheSnapshot() throws {
        let hub = makeHub()
        tee(hub, "cast2mqtt/old/info", #"{"name":"Old"}"#)
        let (client, _) = hub.connect()
        let start = hub.snapshot(meta: Array("{}".utf8)).version
        tee(hub, "cast2mqtt/old/info", "")
        let documents = try #require(try json(hub.update(client: client, after: start).message)["documents"] as? [String: Any])
        #expect(documents["old/info"] is NSNull)
        let snapshot = try #require(try json(hub.snapshot(meta: Array("{}".utf8)).message)["documents"] as? [String: Any])
        #expect(snapshot["old/info"] == nil)
    }

    @Test func recentEventsAndResponsesAreBounded() throws {
        let hub = makeHub()
        for n in 0..<(WebHub.recentPerDevice + 10) { tee(hub, "cast2mqtt/kitchen/event", #"{"n":\#(n)}"#) }
        tee(hub, "cast2mqtt/bridge/response/devices", #"{"command":"devices","status":"ok"}"#)
        let recent = try #require(try json(hub.snapshot(meta: Array("{}".utf8)).message)["recent"] as? [[String: Any]])
        let kitchen = recent.filter { $0["device"] as? String == "kitchen" }
        #expect(kitchen.count == WebHub.recentPerDevice)
        #expect((kitchen.last?["document"] as? [String: Any])?["n"] as? Int == WebHub.recentPerDevice + 9)
        #expect(recent.contains { $0["device"] as? String == "bridge" && $0["kind"] as? String == "response" })
    }

    @Test func aPageFarBehindGetsANewSnapshot() {
        let hub = makeHub()
        let (client, _) = hub.connect()
        for n in 0...WebHub.changeLogCapacity { tee(hub, "cast2mqtt/d\(n % 3000)/state", "idle") }
        #expect(hub.update(client: client, after: 0).resync)
    }

    @Test func aCommandGoesInAsAnMQTTMessageAndItsResponseComesBackToThePage() throws {
        let submitted = Submitted()
        let hub = makeHub(submitted)
        let (client, _) = hub.connect()
        let (other, _) = hub.connect()
        let request = try WebHub.parseCommand(["type": "command", "ref": "r1", "device": "kitchen", "command": "volume",
                                               "body": ["level": 0.4, "id": "mine"] as [String: Any]]).get()
        let id = try hub.send(request, from: client).get()
        #expect(id == "web-1")
        #expect(submitted.all.map(\.topic) == ["cast2mqtt/kitchen/command/volume"])
        let payload = try json(Array(try #require(submitted.all.first).payload.utf8))
        #expect(payload["id"] as? String == "web-1", "the page's own id is replaced")
        #expect(payload["level"] as? Double == 0.4)
        let bridgeRequest = try WebHub.parseCommand(["type": "command", "ref": "r2", "bridge": true, "command": "refresh"]).get()
        _ = try hub.send(bridgeRequest, from: client).get()
        #expect(submitted.all.last?.topic == "cast2mqtt/bridge/request/refresh")
        #expect(submitted.all.last?.payload == #"{"id":"web-2"}"#)

        // A device's reply may carry an id of its own inside `data`; the top-level one counts.
        tee(hub, "cast2mqtt/kitchen/response",
            #"{"command":"volume","data":{"id":"web-2"},"id":"web-1","status":"ok"}"#)
        let message = try json(hub.update(client: client, after: 0).message)
        let responses = try #require(message["responses"] as? [[String: Any]])
        #expect(responses.count == 1)
        #expect(responses.first?["ref"] as? String == "r1")
        #expect((responses.first?["response"] as? [String: Any])?["status"] as? String == "ok")
        let others = try json(hub.update(client: other, after: 0).message)["responses"] as? [[String: Any]]
        #expect(others?.isEmpty == true, "the other page sees it only among the recent responses")
    }

    @Test func badCommandsAreRefusedBeforeTheBridge() {
        let bad: [[String: Any]] = [
            ["device": "kitchen"], ["device": "kitchen", "command": "a/b"], ["device": "a+b", "command": "play"],
            ["device": "#", "command": "play"], ["device": "bridge", "command": "play"], ["command": "play"],
            ["device": "kitchen", "command": "play", "body": "x"], ["device": "kitchen", "command": "play now"],
            ["device": String(repeating: "a", count: 200), "command": "play"],
        ]
        for object in bad {
            guard case .failure(.invalid) = WebHub.parseCommand(object) else {
                Issue.record("accepted \(object)")
                continue
            }
        }
    }

    @Test func aPageHasAtMost64CommandsWaiting() throws {
        let submitted = Submitted()
        let hub = makeHub(submitted)
        let (client, _) = hub.connect()
        let request = try WebHub.parseCommand(["device": "kitchen", "command": "play"]).get()
        for _ in 0..<WebHub.pendingPerPage { _ = try hub.send(request, from: client).get() }
        #expect(hub.send(request, from: client) == .failure(.tooMany("too many commands from this page are waiting for an answer; try again")))
        #expect(submitted.all.count == WebHub.pendingPerPage)
        tee(hub, "cast2mqtt/kitchen/response", #"{"command":"play","id":"web-1","status":"ok"}"#)
        #expect((try? hub.send(request, from: client).get()) != nil, "an answer frees a place")
        hub.disconnect(client)
        #expect(hub.state.withLock { $0.pending.isEmpty }, "a closed page's commands are forgotten")
    }

    @Test func theIDGoesFirstInTheBody() {
        #expect(String(decoding: WebHub.withID(Array("{}".utf8), "web-9"), as: UTF8.self) == #"{"id":"web-9"}"#)
        #expect(String(decoding: WebHub.withID(Array(#"{"a":1}"#.utf8), "web-9"), as: UTF8.self) == #"{"id":"web-9","a":1}"#)
        #expect(WebHub.webID(in: Array(#"{"command":"x","id":7,"status":"ok"}"#.utf8)) == nil)
    }

    @Test func theLogTailKeepsTheNewestLines() {
        let tail = LogTail(capacity: 3)
        for n in 1...5 { tail.append("line \(n)") }
        #expect(tail.lines(after: 0).lines.map(\.text) == ["line 3", "line 4", "line 5"])
        #expect(tail.lines(after: 4).lines.map(\.text) == ["line 5"])
        #expect(tail.lines(after: 5).lines.isEmpty)
    }
}
