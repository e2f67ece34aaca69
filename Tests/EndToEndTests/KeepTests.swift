import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

private let display = "kitchen_display"

/// Keeping a page on a display (mqtt-api.md §13) end to end: the daemon, a real mosquitto and
/// cast-sim's DashCast and Lovelace receivers. Launches are counted from what the simulated
/// display received, never assumed.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndKeepTests {
    static let page = "http://127.0.0.1/dash/kitchen"

    /// One display on its idle screen (Backdrop), at 40 % volume.
    func withDisplay(pageTimeout: Double? = nil, _ body: (BridgeHarness, SimulatedDevice) async throws -> Void) async throws {
        try await withBridge(prepare: { sim in
            [try await sim.addDevice(SimulatedDeviceConfiguration(name: "Kitchen Display", launchLatency: .milliseconds(50),
                                                                  replyLatency: .milliseconds(1), idleScreen: true,
                                                                  initialVolumeLevel: 0.4, pageTimeout: pageTimeout))]
        }) { h in
            try await h.waitOnline([display])
            try await body(h, h.devices[0])
        }
    }

    func launches(_ device: SimulatedDevice, _ app: String) -> Int {
        device.received(namespace: CastNamespace.receiver, type: "LAUNCH").filter { $0.json?["appId"]?.stringValue == app }.count
    }

    func keep(_ h: BridgeHarness, _ predicate: @escaping (JSONValue) -> Bool) async -> JSONValue? {
        await h.observer.waitJSON(h.topic(display, "keep"), timeout: .seconds(30), predicate)
    }

    func state(_ value: String) -> (JSONValue) -> Bool { { $0["state"]?.stringValue == value } }

    func showDashCast(_ h: BridgeHarness, _ device: SimulatedDevice, extra: String = "") async throws {
        let r = try await h.command(display, "keep", #"{"app": "dashcast", "url": "\#(Self.page)", "yield_seconds": 2\#(extra)}"#)
        #expect(r.status == "ok", "\(r)")
        #expect(await keep(h, state("showing")) != nil, "never showing; log:\n\(h.log)")
        #expect(await waitUntil { await device.dashCastState()?.url == Self.page })
    }

    @Test func thePageComesUpOnceAndStaysWhileTheBridgeIsConnectedToIt() async throws {
        // The receiver framework closes an app without media once no sender is connected to it
        // (here after 1 s): the bridge stays connected to the page it keeps.
        try await withDisplay(pageTimeout: 1) { h, device in
            try await showDashCast(h, device)
            #expect(launches(device, SimulatedAppID.dashCast) == 1)
            #expect(await device.dashCastState()?.loads == 1)
            let shown = try #require(h.observer.lastJSON(h.topic(display, "keep")))
            #expect(shown["launches"]?.intValue == 1 && shown["app"]?.stringValue == "dashcast")
            // Three page timeouts later the page is still there, launched once.
            let clock = ContinuousClock()
            let end = clock.now.advanced(by: .seconds(3))
            _ = await waitUntil(timeout: .seconds(10)) { clock.now >= end }
            #expect((try await device.state().receiverStatus.activeApp?.appId) == SimulatedAppID.dashCast)
            #expect(launches(device, SimulatedAppID.dashCast) == 1)
        }
    }

    @Test func aPhoneCastMakesItYieldAndTheIdleScreenBringsItBackAfterYieldSeconds() async throws {
        try await withDisplay { h, device in
            try await showDashCast(h, device)
            let song: JSONValue = .object(["media": .object(["contentId": .string("http://127.0.0.1/song.mp3"),
                                                             "contentType": .string("audio/mpeg"), "streamType": .string("BUFFERED")])])
            #expect(await device.remoteLoad(appId: SimulatedAppID.music, request: song))
            let yielding = await keep(h, state("yielding"))
            #expect(yielding?["reason"]?.stringValue == "app_showing", "\(String(describing: yielding))")
            #expect(launches(device, SimulatedAppID.dashCast) == 1, "never over the phone's music")
            // The music ends, the phone's app closes: the idle screen is back.
            #expect(await device.remoteStop())
            let waiting = await keep(h) { $0["reason"]?.stringValue == "idle_screen_returned" }
            #expect(waiting?["state"]?.stringValue == "yielding")
            #expect(await keep(h, state("showing")) != nil)
            #expect(launches(device, SimulatedAppID.dashCast) == 2)
            #expect(await waitUntil { await device.dashCastState()?.url == Self.page })
        }
    }

    @Test func aTimerOrAssistantAppMakesItYield() async throws {
        try await withDisplay { h, device in
            try await showDashCast(h, device, extra: #", "yield_seconds": 60"#)
            #expect(await device.remoteLaunch(appId: "7A1E5D03", displayName: "Timer", launchedFromCloud: true))
            let yielding = await keep(h, state("yielding"))
            #expect(yielding?["detail"]?.stringValue == "Timer is showing")
            #expect(await device.remoteStop())
            // yield_seconds 60: the idle screen stays for now.
            #expect(await keep(h) { $0["reason"]?.stringValue == "idle_screen_returned" } != nil)
            #expect(launches(device, SimulatedAppID.dashCast) == 1)
        }
    }

    @Test func aWifiLossABridgeRestartAndARebootBringThePageBackWithoutASecondLaunch() async throws {
        try await withDisplay { h, device in
            try await showDashCast(h, device)
            // Wi-Fi loss: the connection drops, the page stays on the display.
            await device.dropConnections()
            #expect(await h.observer.wait(h.topic(display, "event"), timeout: .seconds(30)) { $0.contains("\"reconnected\"") } != nil)
            #expect(await keep(h, state("showing")) != nil)
            #expect(launches(device, SimulatedAppID.dashCast) == 1)
            #expect(await device.dashCastState()?.loads == 1, "the page was not sent again")
            // A bridge restart: the page already showing is not launched again.
            let before = try #require(h.observer.lastJSON(h.topic(display, "keep")))
            _ = try h.restartDaemon()
            let after = await keep(h) { $0["state"]?.stringValue == "showing" && $0["since"] != before["since"] }
            #expect(after?["launches"]?.intValue == 1, "the count survives the restart")
            #expect(launches(device, SimulatedAppID.dashCast) == 1)
            #expect(await device.dashCastState()?.loads == 1)
            // A reboot: the display comes back on its idle screen; one launch brings the page back.
            try await device.restart()
            #expect(await keep(h) { $0["state"]?.stringValue == "showing" && ($0["launches"]?.intValue ?? 0) == 2 } != nil)
            #expect(launches(device, SimulatedAppID.dashCast) == 2)
            #expect(await waitUntil { await device.dashCastState()?.url == Self.page })
        }
    }

    @Test func aSilentLaunchLeavesTheVolumeAsItWas() async throws {
        try await withDisplay { h, device in
            await device.setVolumeRemotely(level: 0.35, muted: false)
            #expect(await h.observer.waitJSON(h.topic(display, "receiver")) { $0["volume"]?["level"]?.doubleValue == 0.35 } != nil)
            try await showDashCast(h, device, extra: #", "silent": true"#)
            #expect(await waitUntil { (try? await device.state().receiverStatus.volume?.muted) == false })
            let volume = try await device.state().receiverStatus.volume
            #expect(volume?.muted == false && volume?.level == 0.35)
            // Muted before the launch, unmuted after it.
            let order = device.received(namespace: CastNamespace.receiver).compactMap { m -> String? in
                switch m.type {
                case "LAUNCH": return "launch"
                case "SET_VOLUME": return m.json?["volume"]?["muted"]?.boolValue.map { $0 ? "mute" : "unmute" }
                default: return nil
                }
            }
            #expect(order == ["mute", "launch", "unmute"], "\(order)")
        }
    }

    @Test func theLovelaceReceiverShowsTheViewAndARestartDoesNotConnectAgain() async throws {
        try await withDisplay { h, device in
            let token = "keep-e2e-refresh-token-\(UUID().uuidString)"
            let r = try await h.command(display, "keep", """
                {"app": "lovelace", "hass_url": "https://127.0.0.1:8123", "refresh_token": "\(token)", "client_id": null,
                 "view_path": "kitchen", "dashboard_path": "lovelace-displays"}
                """)
            #expect(r.status == "ok", "\(r)")
            #expect(await keep(h, state("showing")) != nil, "log:\n\(h.log)")
            // The keep shows once show_lovelace_view is written; the receiver takes it a reply
            // latency later (under CI load that was after the keep's topic arrived, once).
            _ = await waitUntil { await device.lovelaceState()?.lovelacePath == .string("kitchen") }
            let lovelace = try #require(await device.lovelaceState())
            #expect(lovelace.connected && lovelace.lovelacePath == .string("kitchen") && lovelace.urlPath == .string("lovelace-displays"))
            #expect(lovelace.connects == 1 && lovelace.clientId == nil)
            // The token went to the display only: on no topic, in no log line.
            let command = h.topic(display, "command/keep")
            for m in h.observer.messages where m.topic != command && String(decoding: m.payload, as: UTF8.self).contains(token) {
                Issue.record("the token was published on \(m.topic)")
            }
            #expect(!h.log.contains(token))
            let before = try #require(h.observer.lastJSON(h.topic(display, "keep")))
            _ = try h.restartDaemon()
            #expect(await keep(h) { $0["state"]?.stringValue == "showing" && $0["since"] != before["since"] } != nil)
            #expect(await device.lovelaceState()?.connects == 1, "a page already showing is not connected again")
            #expect(launches(device, SimulatedAppID.lovelace) == 1)
            #expect(!h.log.contains(token))
        }
    }

    @Test func aReceiverThatRefusesBacksOffWithAClearStateAndNoLoop() async throws {
        try await withDisplay { h, device in
            await device.failLovelace(errorCode: LovelaceErrorCode.authenticationFailed)
            _ = try await h.command(display, "keep", """
                {"app": "lovelace", "hass_url": "https://127.0.0.1:8123", "refresh_token": "t", "view_path": "kitchen"}
                """)
            let refused = await keep(h, state("backoff"))
            #expect(refused?["reason"]?.stringValue == "auth_error", "\(String(describing: refused))")
            // 5 s, then 10 s: within 8 s of the first refusal, at most one more attempt.
            let clock = ContinuousClock()
            let end = clock.now.advanced(by: .seconds(8))
            _ = await waitUntil(timeout: .seconds(12)) { clock.now >= end }
            let attempts = await device.lovelaceState()?.connects ?? 0
            #expect((1...2).contains(attempts), "\(attempts) connects in 8 s")
            #expect(launches(device, SimulatedAppID.lovelace) == 1, "the receiver still runs: connect again, no relaunch")
            // The receiver accepts again: the page shows at the next attempt.
            await device.failLovelace(errorCode: nil)
            #expect(await keep(h, state("showing")) != nil)
        }
    }

    @Test func offStopsKeepingAndAnEmptyPayloadForgetsTheKeep() async throws {
        try await withDisplay { h, device in
            try await showDashCast(h, device)
            var r = try await h.command(display, "keep", "off")
            #expect(r["data"]?["state"]?.stringValue == "off")
            #expect(await device.remoteStop())
            #expect(await keep(h, state("off")) != nil)
            r = try await h.command(display, "keep", "")
            #expect(r.status == "ok")
            #expect(await h.observer.wait(h.topic(display, "keep")) { $0.isEmpty } != nil, "the retained state is cleared")
            #expect(launches(device, SimulatedAppID.dashCast) == 1)
        }
    }
}
