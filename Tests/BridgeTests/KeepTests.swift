import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Keeping a page on a display (mqtt-api.md §13, Jobs/Keep.swift): the core's decisions, step
/// by step. The end-to-end scenarios against cast-sim are in Tests/EndToEndTests/KeepTests.swift.
@Suite struct KeepCoreTests {
    let command = "cast2mqtt/living_room_tv/command/keep"
    let keepTopic = "cast2mqtt/living_room_tv/keep"
    let backdrop = ReceiverApplication(appId: "E8C28D3C", displayName: "Backdrop", isIdleScreen: true,
                                       namespaces: ["urn:x-cast:com.google.cast.debugoverlay"], sessionId: "idle", transportId: "idle")
    func dashcast(_ session: String, ready: Bool = true) -> ReceiverApplication {
        ReceiverApplication(appId: KeepReceiver.dashcastApp, displayName: "DashCast", namespaces: [KeepReceiver.dashcastNamespace],
                            sessionId: session, statusText: ready ? "Application ready" : "Application is starting", transportId: session)
    }
    func launches(_ out: BridgeOutput) -> [String] {
        out.operations.compactMap { if case .launch(let app) = $0.kind { return app } else { return nil } }
    }
    /// Launches DashCast (the keep's operation `launch`), the receiver starting then ready, the
    /// page sent: the keep shows.
    @discardableResult
    func launchDashCast(_ h: inout Harness, _ launch: CastOperation, session: String) throws -> BridgeOutput {
        var out = h.complete(launch, .receiverStatus(receiver(app: dashcast(session, ready: false))))
        #expect(sends(out).isEmpty, "not before the receiver is ready")
        out.append(h.feed(CastEvent.receiverStatus(tvID, receiver(app: dashcast(session)))))
        let page = try #require(out.operations.last)
        #expect(sends([page]).first?.text.contains("\"url\"") == true)
        out.append(h.complete(page, .done))
        return out
    }
    func lovelace(_ session: String) -> ReceiverApplication {
        ReceiverApplication(appId: KeepReceiver.lovelaceApp, displayName: "Home Assistant Lovelace",
                            namespaces: [KeepReceiver.lovelaceNamespace], sessionId: session, statusText: "Home Assistant", transportId: session)
    }
    let youtube = ReceiverApplication(appId: "233637DE", displayName: "YouTube", namespaces: [CastNamespace.media],
                                      sessionId: "yt", statusText: "YouTube", transportId: "yt")
    let dash = #"{"app": "dashcast", "url": "https://dash.example/kitchen", "yield_seconds": 20}"#
    let love = #"{"app": "lovelace", "hass_url": "https://ha.example", "refresh_token": "SECRET-TOKEN", "client_id": null, "view_path": "kitchen", "dashboard_path": "lovelace-displays"}"#

    /// The TV online on its idle screen, past the start-up hold.
    func idleTV() -> Harness {
        var h = Harness()
        h.online(status: receiver(app: backdrop), media: nil)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        return h
    }

    func keepDoc(_ h: Harness) -> JSONValue? { h.core.keeps.entry(tvID)?.document }
    func sends(_ out: BridgeOutput) -> [(namespace: String, text: String, appId: String?)] { sends(out.operations) }
    func sends(_ ops: [CastOperation]) -> [(namespace: String, text: String, appId: String?)] {
        ops.compactMap {
            if case .send(let ns, let payload, let app, _) = $0.kind { return (ns, String(decoding: payload.bytes, as: UTF8.self), app) }
            return nil
        }
    }

    @Test func aDashCastKeepLaunchesOnceOnTheIdleScreenAndThenDoesNothing() throws {
        var h = idleTV()
        let set = h.publish(command, dash)
        #expect(set.json("cast2mqtt/living_room_tv/response")?["status"] == .string("ok"))
        let launch = try #require(set.operations.first)
        #expect(launches(set) == [KeepReceiver.dashcastApp])
        #expect(set.json(keepTopic)?["state"] == .string("launching"))
        var shown = h.complete(launch, .receiverStatus(receiver(app: dashcast("d1", ready: false))))
        #expect(shown.operations.isEmpty, "DashCast loses a URL sent before it is ready")
        shown = h.feed(CastEvent.receiverStatus(tvID, receiver(app: dashcast("d1"))))
        let sent = try #require(sends(shown).first)
        #expect(sent.namespace == KeepReceiver.dashcastNamespace && sent.appId == nil)
        #expect(sent.text.contains("https://dash.example/kitchen"))
        shown = h.complete(try #require(shown.operations.first), .done)
        #expect(shown.json(keepTopic)?["state"] == .string("showing"))
        #expect(shown.json(keepTopic)?["launches"] == .number(1))
        // More statuses of the same page: nothing.
        let again = h.feed(CastEvent.receiverStatus(tvID, receiver(app: dashcast("d1"), level: 0.5)))
        #expect(again.operations.isEmpty)
        h.now = h.now.addingTimeInterval(120)
        #expect(h.feed(.tick).operations.isEmpty)
    }

    @Test func anotherAppMakesItYieldAndTheIdleScreenBringsItBackAfterYieldSeconds() throws {
        var h = idleTV()
        let launch = try #require(h.publish(command, dash).operations.first)
        try launchDashCast(&h, launch, session: "d1")
        let phone = h.feed(CastEvent.receiverStatus(tvID, receiver(app: youtube)))
        #expect(phone.operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("yielding"))
        #expect(keepDoc(h)?["reason"] == .string("app_showing"))
        let idle = h.feed(CastEvent.receiverStatus(tvID, receiver(app: backdrop)))
        #expect(idle.operations.isEmpty, "not at once: yield_seconds after the idle screen returned")
        h.now = h.now.addingTimeInterval(10)
        #expect(h.feed(.tick).operations.isEmpty)
        h.now = h.now.addingTimeInterval(11)
        let back = h.feed(.tick)
        #expect(launches(back).count == 1, "launched again 20 s after the idle screen")
        #expect(keepDoc(h)?["launches"] == .number(2))
    }

    @Test func oneLaunchInFlightAndAReconnectToTheIdleScreenLaunchesAtOnce() throws {
        var h = idleTV()
        let first = h.publish(command, dash)
        #expect(first.operations.count == 1)
        // More statuses while the launch is in flight: no second launch.
        #expect(h.feed(CastEvent.receiverStatus(tvID, receiver(app: backdrop, level: 0.3))).operations.isEmpty)
        try launchDashCast(&h, try #require(first.operations.first), session: "d1")
        // A reboot: the connection drops, the display comes back on its idle screen.
        h.feed(CastEvent.castDisconnected(tvID, reason: "closed by peer"))
        #expect(keepDoc(h)?["state"] == .string("offline"))
        h.feed(CastEvent.castConnected(tvID))
        let back = h.feed(CastEvent.receiverStatus(tvID, receiver(app: backdrop)))
        #expect(launches(back).count == 1, "a reconnect that finds the idle screen launches at once")
    }

    /// A smart display closes a page without media after about ten minutes: the page comes back
    /// at once; one that closes within a minute of showing backs off instead (no loop).
    @Test func aPageTheDisplayClosedComesBackAtOnceAndOneThatKeepsClosingBacksOff() throws {
        var h = idleTV()
        try launchDashCast(&h, try #require(h.publish(command, dash).operations.first), session: "d1")
        h.now = h.now.addingTimeInterval(600)
        let closed = h.feed(CastEvent.receiverStatus(tvID, receiver(app: backdrop)))
        let again = try #require(closed.operations.first, "relaunched at once")
        #expect(launches(closed).count == 1)
        try launchDashCast(&h, again, session: "d2")
        h.now = h.now.addingTimeInterval(20)
        let quick = h.feed(CastEvent.receiverStatus(tvID, receiver(app: backdrop)))
        #expect(quick.operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("backoff") && keepDoc(h)?["reason"] == .string("page_closed"))
        h.now = h.now.addingTimeInterval(6)
        #expect(launches(h.feed(.tick)).count == 1, "after the backoff")
    }

    /// A Chromecast whose TV is off: a launch would switch the TV on (HDMI-CEC); the keep waits.
    @Test func aTVInStandbyIsNotWokenUp() throws {
        var h = Harness()
        var off = receiver(app: backdrop)
        off.isStandBy = true
        h.online(status: off, media: nil)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        #expect(h.publish(command, dash).operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("yielding") && keepDoc(h)?["reason"] == .string("standby"))
        var on = receiver(app: backdrop)
        on.isStandBy = false
        #expect(h.feed(CastEvent.receiverStatus(tvID, on)).operations.isEmpty, "yield_seconds after the TV came on")
        h.now = h.now.addingTimeInterval(21)
        #expect(launches(h.feed(.tick)).count == 1)
    }

    @Test func aFailedLaunchBacksOffDoublingAndSaysWhy() throws {
        var h = idleTV()
        let first = try #require(h.publish(command, dash).operations.first)
        h.feed(.operationCompleted(tvID, first.token, .failure(BridgeError(.launchError, "NOT_FOUND"))))
        #expect(keepDoc(h)?["state"] == .string("backoff"))
        #expect(keepDoc(h)?["reason"] == .string("launch_failed"))
        h.now = h.now.addingTimeInterval(4)
        #expect(h.feed(.tick).operations.isEmpty, "5 s first")
        h.now = h.now.addingTimeInterval(2)
        let second = try #require(h.feed(.tick).operations.first)
        h.feed(.operationCompleted(tvID, second.token, .failure(BridgeError(.launchError, "NOT_FOUND"))))
        h.now = h.now.addingTimeInterval(9)
        #expect(h.feed(.tick).operations.isEmpty, "then 10 s")
        h.now = h.now.addingTimeInterval(2)
        #expect(h.feed(.tick).operations.count == 1)
        #expect(keepDoc(h)?["launches"] == .number(3))
    }

    @Test func aPageAlreadyShowingIsNotLaunchedAgain() throws {
        var h = Harness()
        h.online(status: receiver(app: dashcast("d9")), media: nil)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        let set = h.publish(command, dash)
        #expect(set.operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("showing"))
        #expect(keepDoc(h)?["launches"] == .number(0))
    }

    @Test func outsideTheWindowNothingLaunches() throws {
        var h = Harness()
        h.core.keeps.calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        h.online(status: receiver(app: backdrop), media: nil)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        // t0 is 2027-01-15 08:00 UTC.
        let out = h.publish(command, #"{"app": "dashcast", "url": "https://dash.example/", "when": {"from": "22:00", "to": "07:30"}}"#)
        #expect(out.operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("outside_window"))
        let inside = h.publish(command, #"{"app": "dashcast", "url": "https://dash.example/", "when": {"from": "07:30", "to": "22:00"}}"#)
        #expect(inside.operations.count == 1)
    }

    @Test func aSilentLaunchMutesFirstAndRestoresWhenThePageShows() throws {
        var h = idleTV()
        let out = h.publish(command, #"{"app": "dashcast", "url": "https://dash.example/", "silent": true}"#)
        #expect(out.operations.count == 1, "the launch waits for the mute")
        guard case .setMuted(true)? = out.operations.first?.kind else { Issue.record("no mute first"); return }
        let mute = try #require(out.operations.first)
        let launch = try #require(h.complete(mute, .receiverStatus(receiver(app: backdrop, muted: true))).operations.first)
        #expect(launches(BridgeOutput(operations: [launch])).count == 1)
        let shown = h.complete(launch, .receiverStatus(receiver(app: dashcast("d1"), muted: true)))
        let restore = try #require(shown.operations.first, "the mute goes back as soon as the page shows")
        guard case .setMuted(false) = restore.kind else { Issue.record("no unmute: \(restore.kind)"); return }
        h.complete(restore, .receiverStatus(receiver(app: dashcast("d1"), muted: false)))
        #expect(h.core.keepSnapshot.devices[tvID]?.restore == nil)
    }

    @Test func aSilentLaunchThatFailsUnmutesAtOnce() throws {
        var h = idleTV()
        let out = h.publish(command, #"{"app": "dashcast", "url": "https://dash.example/", "silent": true}"#)
        let mute = try #require(out.operations.first)
        let launch = try #require(h.complete(mute, .receiverStatus(receiver(app: backdrop, muted: true))).operations.first)
        let failed = h.feed(.operationCompleted(tvID, launch.token, .failure(BridgeError(.timeout, "no answer"))))
        guard case .setMuted(false)? = failed.operations.first?.kind else { Issue.record("not unmuted"); return }
    }

    @Test func theLovelaceReceiverConnectsShowsTheViewAndTheTokenIsNeverPublished() throws {
        var h = idleTV()
        let set = h.publish(command, love)
        let connect = try #require(sends(set).first)
        #expect(connect.appId == KeepReceiver.lovelaceApp && connect.text.contains("\"connect\"") && connect.text.contains("SECRET-TOKEN"))
        #expect(connect.text.contains("\"clientId\":null"))
        let op = try #require(set.operations.first)
        var all = h.complete(op, .receiverStatus(receiver(app: lovelace("l1"))))
        all.append(h.feed(.appMessage(tvID, namespace: KeepReceiver.lovelaceNamespace, payload: .string(
            #"{"type":"receiver_status","connected":true,"showDemo":false,"hassUrl":"https://ha.example","lovelacePath":null,"urlPath":null}"#))))
        let view = try #require(sends(all).first { $0.text.contains("show_lovelace_view") })
        #expect(view.text.contains("\"viewPath\":\"kitchen\"") && view.text.contains("\"urlPath\":\"lovelace-displays\""))
        let viewOp = try #require(all.operations.last)
        all.append(h.complete(viewOp, .done))
        #expect(keepDoc(h)?["state"] == .string("showing"))
        #expect(keepDoc(h)?["launches"] == .number(1))
        for p in set.publications + all.publications {
            #expect(!String(decoding: p.payload, as: UTF8.self).contains("SECRET-TOKEN"), "the token went out on \(p.topic)")
        }
        for line in set.logs + all.logs { #expect(!line.contains("SECRET-TOKEN")) }
    }

    @Test func aLovelacePageShowingAfterARestartIsNotConnectedAgain() throws {
        var h = Harness()
        h.online(status: receiver(app: lovelace("l7")), media: nil)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 1)
        let set = h.publish(command, love)
        let ask = try #require(sends(set).first)
        #expect(ask.text.contains("get_status") && !ask.text.contains("SECRET-TOKEN"))
        var out = h.complete(try #require(set.operations.first), .done)
        out.append(h.feed(.appMessage(tvID, namespace: KeepReceiver.lovelaceNamespace, payload: .string(
            #"{"type":"receiver_status","connected":true,"hassUrl":"https://ha.example/","lovelacePath":"kitchen","urlPath":"lovelace-displays"}"#))))
        #expect(out.operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("showing"))
        #expect(keepDoc(h)?["launches"] == .number(0))
    }

    @Test func aRefusedConnectBacksOffWithTheReceiversReason() throws {
        var h = idleTV()
        let op = try #require(h.publish(command, love).operations.first)
        h.complete(op, .receiverStatus(receiver(app: lovelace("l1"))))
        let refused = h.feed(.appMessage(tvID, namespace: KeepReceiver.lovelaceNamespace, payload: .string(
            #"{"type":"receiver_error","error_code":2,"error_message":"Authentication failed"}"#)))
        #expect(refused.operations.isEmpty)
        #expect(keepDoc(h)?["state"] == .string("backoff"))
        #expect(keepDoc(h)?["reason"] == .string("auth_error"))
        h.now = h.now.addingTimeInterval(6)
        let retry = h.feed(.tick)
        #expect(sends(retry).first?.text.contains("\"connect\"") == true, "connect again after the backoff (the app still runs)")
        #expect(keepDoc(h)?["launches"] == .number(2))
    }

    @Test func offSwitchesItOffOnBringsItBackAndAnEmptyPayloadForgetsIt() throws {
        var h = idleTV()
        h.publish(command, dash)
        h.publish(command, "off")
        #expect(keepDoc(h)?["state"] == .string("off"))
        let on = h.publish(command, "on")
        #expect(keepDoc(h)?["state"] != .string("off"))
        _ = on
        let cleared = h.publish(command, "")
        #expect(h.core.keeps.entry(tvID) == nil)
        #expect(cleared.on(keepTopic).last?.payload.isEmpty == true, "the retained state is cleared")
        let noKeep = h.publish(command, "on")
        #expect(noKeep.json("cast2mqtt/living_room_tv/response")?["error"]?["code"] == .string("invalid_payload"))
    }

    /// Home Assistant: a switch and a sensor appear with a keep and go with it. The switch's
    /// template says ON/OFF while its payloads are on/off: without state_on/state_off it stayed
    /// `unknown` (found by Tests/homeassistant/test_dashboard_keep.py on 2026.11.0).
    @Test func aKeepHasASwitchAndASensorInDiscoveryWhileItExists() throws {
        var h = idleTV()
        let config = "homeassistant/device/cast2mqtt_\(tvID)/config"
        let set = h.publish(command, dash)
        let cmps = try #require(set.json(config)?["cmps"])
        let keepSwitch = try #require(cmps["keep"])
        #expect(keepSwitch["platform"] == .string("switch"))
        #expect(keepSwitch["command_topic"] == .string(command))
        #expect(keepSwitch["payload_on"] == .string("on") && keepSwitch["payload_off"] == .string("off"))
        #expect(keepSwitch["state_on"] == .string("ON") && keepSwitch["state_off"] == .string("OFF"))
        #expect(keepSwitch["state_topic"] == .string(keepTopic))
        #expect(cmps["keep_state"]?["platform"] == .string("sensor"))
        let cleared = h.publish(command, "")
        #expect(cleared.json(config)?["cmps"]?["keep"] == nil, "gone with the keep")
    }

    @Test(arguments: [
        #"{"app": "dashcast"}"#,
        #"{"app": "lovelace", "hass_url": "https://ha.example"}"#,
        #"{"app": "dashcast", "url": "ftp://x/y"}"#,
        #"{"app": "dashcast", "url": "https://x/", "when": {"from": "25:00", "to": "07:00"}}"#,
        #"{"app": "dashcast", "url": "https://x/", "yield_seconds": -1}"#,
        #"{"app": "dashcast", "url": "https://x/", "colour": "red"}"#,
        #"{"app": "A", "messages": [{"namespace": "urn:x-cast:com.google.cast.receiver", "data": {}}]}"#,
        "sometimes",
    ])
    func badKeepsAreRefusedWithAReason(_ payload: String) throws {
        var h = idleTV()
        let out = h.publish(command, payload)
        let response = try #require(out.json("cast2mqtt/living_room_tv/response"))
        #expect(response["status"] == .string("error"))
        #expect(out.operations.isEmpty)
        #expect(h.core.keeps.entry(tvID) == nil)
    }

    @Test func theConfigurationFileKeepsADisplayAndNeverPrintsItsToken() throws {
        let yaml = """
        displays:
          Living Room TV:
            keep: {app: lovelace, hass_url: "https://ha.example", refresh_token: "SECRET-TOKEN", view_path: kitchen, yield_seconds: 5}
        """
        let c = try ConfigurationLoader.load(yaml: yaml)
        #expect(!ConfigurationLoader.printable(c).contains("SECRET-TOKEN"))
        var h = Harness { $0 = c }
        let out = h.online(status: receiver(app: backdrop), media: nil)
        #expect(sends(out).first?.text.contains("\"connect\"") == true, "the configured keep acts as the device is known")
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(yaml: "displays:\n  tv:\n    keep: {app: dashcast}\n")
        }
    }
}
