import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// The commands an instance keeps for devices of other live instances until their owner answers
/// (mqtt-api.md §10: a command sent to an owner that dies before its will fires is answered once).
@Suite struct UnansweredCommandsTests {
    let dev = "0123456789abcdef0123456789abcdef"
    let other = "fedcba9876543210fedcba9876543210"

    @Test func aResponseForgetsTheCommandItAnswers() {
        var u = UnansweredCommands(keepalive: 5, willDelay: 3)
        u.remember(dev, owner: "alpha", name: "volume", id: .string("v1"), now: t0)
        u.remember(dev, owner: "alpha", name: "volume", id: .number(2), now: t0)
        u.remember(dev, owner: "alpha", name: "pause", id: nil, now: t0)
        u.remember(dev, owner: "alpha", name: "pause", id: nil, now: t0)
        // Another device, another id, another name: nothing matches.
        let r1 = u.answered(other, name: "volume", id: .string("v1"))
        #expect(!r1)
        let r2 = u.answered(dev, name: "volume", id: .string("v9"))
        #expect(!r2)
        let r3 = u.answered(dev, name: "mute", id: nil)
        #expect(!r3)
        let r4 = u.answered(dev, name: "volume", id: nil)
        #expect(!r4)
        let r5 = u.answered(dev, name: "volume", id: .number(2))
        #expect(r5)
        // Id-less: one response of that name answers one of them.
        let r6 = u.answered(dev, name: "pause", id: nil)
        #expect(r6)
        #expect(u.count == 2)
        let left = u.ownerGone("alpha")
        #expect(left.count == 1)
        #expect(left.first?.1.map(\.name) == ["volume", "pause"])
        #expect(left.first?.1.map(\.id) == [.string("v1"), nil])
        #expect(u.count == 0)
    }

    @Test func ownerGoneReturnsOnlyThatOwnersCommands() {
        var u = UnansweredCommands(keepalive: 5, willDelay: 3)
        u.remember(dev, owner: "alpha", name: "play", id: .string("a"), now: t0)
        u.remember(dev, owner: "gamma", name: "play", id: .string("g"), now: t0)
        u.remember(other, owner: "gamma", name: "stop", id: nil, now: t0)
        let gone = u.ownerGone("gamma")
        #expect(gone.map(\.0) == [dev, other].sorted())
        #expect(gone.flatMap(\.1).allSatisfy { $0.owner == "gamma" })
        #expect(u.count == 1)
        #expect(u.commands(dev).map(\.id) == [.string("a")])
        #expect(u.ownerGone("gamma").isEmpty)
    }

    @Test func commandsAreKeptForTheWillsTimeAndAMargin() {
        var u = UnansweredCommands(keepalive: 10, willDelay: 4)
        #expect(u.keep == 15 + 4 + UnansweredCommands.margin)
        u.remember(dev, owner: "alpha", name: "play", id: nil, now: t0)
        u.remember(dev, owner: "alpha", name: "pause", id: nil, now: t0 + 10)
        let r7 = u.expire(now: t0 + u.keep - 1)
        #expect(r7 == 0)
        let r8 = u.expire(now: t0 + u.keep)
        #expect(r8 == 1)
        #expect(u.commands(dev).map(\.name) == ["pause"])
        let r9 = u.expire(now: t0 + 10 + u.keep)
        #expect(r9 == 1)
        #expect(u.count == 0)
        #expect(u.dropped == 0)
    }

    @Test func theBoundsDropTheOldestAndCountThem() {
        var u = UnansweredCommands(keepalive: 5, willDelay: 3)
        for i in 0..<(UnansweredCommands.perDevice + 3) {
            u.remember(dev, owner: "alpha", name: "volume", id: .number(Double(i)), now: t0 + Double(i))
        }
        #expect(u.count == UnansweredCommands.perDevice)
        #expect(u.dropped == 3)
        #expect(u.commands(dev).first?.id == .number(3))
        // In all: one more than the total drops the oldest command of any device.
        var v = UnansweredCommands(keepalive: 5, willDelay: 3)
        let devices = UnansweredCommands.total / UnansweredCommands.perDevice
        for d in 0..<devices {
            let id = String(format: "%032x", d)
            for i in 0..<UnansweredCommands.perDevice {
                v.remember(id, owner: "alpha", name: "play", id: .number(Double(i)), now: t0 + Double(d * 100 + i))
            }
        }
        #expect(v.count == UnansweredCommands.total && v.dropped == 0)
        v.remember(dev, owner: "alpha", name: "play", id: .string("new"), now: t0 + 1_000_000)
        #expect(v.count == UnansweredCommands.total)
        #expect(v.dropped == 1)
        #expect(v.commands(String(format: "%032x", 0)).first?.id == .number(1))
        #expect(v.commands(dev).map(\.id) == [.string("new")])
        v.forgetAll()
        #expect(v.count == 0)
    }

    // MARK: - Three instances around the miniature broker

    func settled(_ names: [String]) -> CoreCluster { CoreCluster.settled(names) }

    /// SIGKILL of the owner: commands sent after it died and before its will fired get exactly one
    /// answer, `busy` with `retry_after`, from the instance that takes the device; a command the
    /// owner answered before it died gets no second one.
    @Test func commandsSentToAKilledOwnerBeforeItsWillAreAnsweredOnce() throws {
        var c = settled(["alpha", "beta", "gamma"])
        let owner = try #require(["alpha", "beta", "gamma"].first { c.owns($0, tvID) })
        // Answered by the owner while it lives: the others forget it.
        c.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": "before", "level": 0.3}"#)
        var h = try #require(c.cores[owner])
        let op = try #require(h.operationDevices.keys.max())
        let answered = h.feed(.operationCompleted(tvID, op, .success(.done)))
        c.cores[owner] = h
        c.take(owner, answered)
        c.deliver()
        for name in ["alpha", "beta", "gamma"] where name != owner {
            #expect(c.cores[name]?.core.instances?.unanswered.count == 0)
        }
        // Killed: it takes nothing more; the others still see it live and ignore the commands.
        c.away.insert(owner)
        c.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": "after", "level": 0.2}"#)
        c.publish("cast2mqtt/living_room_tv/command/pause", "")
        c.publish("cast2mqtt/living_room_tv/command/play", #"{"id": 7}"#)
        #expect(c.responses("cast2mqtt/living_room_tv/response").count == 1)
        // Its will.
        c.queue.append(Publication(topic: "cast2mqtt/bridge/instances/\(owner)", payload: [], retain: true))
        c.retained.removeValue(forKey: "cast2mqtt/bridge/instances/\(owner)")
        c.deliver()
        c.pass(15)
        let next = try #require(["alpha", "beta", "gamma"].first { $0 != owner && c.owns($0, tvID) })
        #expect(next != owner)
        let answers = c.responses("cast2mqtt/living_room_tv/response")
        #expect(answers.count == 4, "\(answers)")
        #expect(answers.filter { $0.1["id"] == .string("before") }.count == 1)
        let late = answers.filter { $0.1["id"] != .string("before") }
        #expect(late.map { $0.1["command"] } == [.string("volume"), .string("pause"), .string("play")])
        #expect(late.map { $0.1["id"] } == [.string("after"), nil, .number(7)])
        #expect(late.allSatisfy { $0.0 == next })
        #expect(late.allSatisfy { $0.1["error"]?["code"] == .string("busy") && $0.1["error"]?["retry_after"] == .number(5) })
        for name in ["alpha", "beta", "gamma"] where name != owner {
            #expect(c.cores[name]?.core.instances?.unanswered.count == 0)
        }
    }

    /// SIGTERM: the owner answers what came before its `stopping` document; its document cleared
    /// at the end adds no answer.
    @Test func aCleanStopAddsNoAnswer() throws {
        var c = settled(["alpha", "beta", "gamma"])
        let owner = try #require(["alpha", "beta", "gamma"].first { c.owns($0, tvID) })
        c.publish("cast2mqtt/living_room_tv/command/pause", #"{"id": "p"}"#)
        c.feed(owner, .instanceStop)
        c.deliver()
        c.pass(12)
        c.feed(owner) { $0.core.shutdown(now: $0.now) }
        c.queue.append(Publication(topic: "cast2mqtt/bridge/instances/\(owner)", payload: [], retain: true))
        c.deliver()
        c.pass(2)
        let answers = c.responses("cast2mqtt/living_room_tv/response")
        #expect(answers.count == 1, "\(answers)")
        #expect(answers.first?.0 == owner)
    }

    /// A command with an MQTT 5 Response Topic is answered where the others do not listen: not kept.
    @Test func aCommandWithAResponseTopicIsNotKept() throws {
        var c = settled(["alpha", "beta"])
        let other = try #require(["alpha", "beta"].first { !c.owns($0, tvID) })
        c.feed(other, .mqttMessage(topic: "cast2mqtt/living_room_tv/command/play", payload: Array(#"{"id":1}"#.utf8),
                                   responseTopic: "client/answers", correlationData: [1]))
        #expect(c.cores[other]?.core.instances?.unanswered.count == 0)
        c.feed(other, .mqttMessage(topic: "cast2mqtt/living_room_tv/command/play", payload: Array(#"{"id":1}"#.utf8),
                                   responseTopic: nil, correlationData: nil))
        #expect(c.cores[other]?.core.instances?.unanswered.count == 1)
    }

    @Test func onlyInstanceModeSubscribesToResponses() {
        #expect(!Harness().core.subscriptions.contains("cast2mqtt/+/response"))
        #expect(Harness { $0.instance = "alpha" }.core.subscriptions.contains("cast2mqtt/+/response"))
    }
}

extension UnansweredCommandsTests {
    /// A frozen owner that comes back after its will: the commands it received before the will
    /// (buffered while frozen) are answered once, by the next owner, not a second time by it.
    @Test func aFrozenOwnerDoesNotAnswerWhatTheNextOwnerAnswered() throws {
        var c = settled(["alpha", "beta"])
        let owner = try #require(["alpha", "beta"].first { c.owns($0, tvID) })
        let other = owner == "alpha" ? "beta" : "alpha"
        c.away.insert(owner)
        let command = Publication(topic: "cast2mqtt/living_room_tv/command/pause", text: #"{"id": "frozen-1"}"#, retain: false)
        c.queue.append(command)
        c.deliver()
        // Its will; the other takes the device and answers the command.
        c.queue.append(Publication(topic: "cast2mqtt/bridge/instances/\(owner)", payload: [], retain: true))
        c.retained.removeValue(forKey: "cast2mqtt/bridge/instances/\(owner)")
        c.deliver()
        #expect(c.owns(other, tvID))
        // It wakes up: the command it had buffered, then its will, from its session; then the reconnect.
        c.feed(owner, .instanceResumed(gap: 60))
        c.deliver(command, to: owner)
        c.deliver(Publication(topic: "cast2mqtt/bridge/instances/\(owner)", payload: [], retain: true), to: owner)
        c.connect(owner)
        c.deliver()
        c.pass(12)
        let answers = c.responses("cast2mqtt/living_room_tv/response").filter { $0.1["id"] == .string("frozen-1") }
        #expect(answers.count == 1, "\(answers)")
        #expect(answers.first?.0 == other)
        #expect(answers.first?.1["error"]?["code"] == .string("busy"))
    }
}
