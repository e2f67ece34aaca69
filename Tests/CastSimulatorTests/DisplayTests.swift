import CastProtocol
@testable import CastSimulator
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import TestSupport

/// The display receivers (DashCast, Home Assistant's Lovelace receiver), the page and display
/// timeouts, and apps started and stopped by someone else (docs/simulator.md, "Display receivers").
@Suite("Display receivers")
struct DisplayTests {
    /// Sends a fault action (JSON text) to the device through the control API's router; its HTTP status.
    static func faults(_ sim: CastSimulator, _ device: SimulatedDevice) -> (String) async throws -> HTTPResponseStatus {
        let router = ControlRouter(simulator: sim)
        return { json in await router.fault(device, try CastJSON.decode(JSONValue.self, from: json)).status }
    }

    static let hast = SimulatedAppID.lovelaceNamespace
    static let dash = SimulatedAppID.dashCastNamespace

    // MARK: - DashCast

    @Test("DashCast launches with its namespace, says it is starting, then that it is ready")
    func dashCastLaunch() async throws {
        try await withSimulator([testDevice("Hub", launch: .milliseconds(100))]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let app = try await client.launch(SimulatedAppID.dashCast, requestId: 1)
                #expect(app["displayName"]?.stringValue == "DashCast")
                #expect(app["statusText"]?.stringValue == "Application is starting")
                let names = app["namespaces"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                #expect(names.contains(Self.dash))
                #expect(!names.contains(CastNamespace.media), "the v2 receiver page has no media namespace")
                let ready = await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") { status in
                    status["status"]?["applications"]?.arrayValue?.first?["statusText"]?.stringValue == "Application ready"
                }
                #expect(ready != nil)
                #expect(await sim.devices[0].dashCastState()?.ready == true)
            }
        }
    }

    @Test("DashCast keeps the page, reload and reload time, echoes the message to its sender; the status text stays")
    func dashCastLoad() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await readyDashCast(client, device)
                let load = #"{"url":"https://example.org/board","force":false,"reload":true,"reload_time":60000}"#
                try await client.send(Self.dash, to: transport, load)
                let echo = try #require(await client.waitFor { $0.namespace == Self.dash })
                #expect(echo.sourceID == transport && echo.destinationID == "sender-0")
                #expect(echo.payload.text == load)
                let state = try #require(await device.dashCastState())
                #expect(state.url == "https://example.org/board" && state.reload && state.reloadTime == 60000)
                #expect(!state.force && state.responsive && state.loads == 1)
                // No reload without the flag; reload_time as parseInt reads it.
                try await client.send(Self.dash, to: transport, #"{"url":"https://example.org/b","reload":false,"reload_time":5000}"#)
                #expect(await waitUntil { await device.dashCastState()?.loads == 2 })
                #expect(await device.dashCastState()?.reload == false)
                try await client.send(Self.dash, to: transport, #"{"url":"https://example.org/c","reload":true,"reload_time":"30000ms"}"#)
                #expect(await waitUntil { await device.dashCastState()?.reloadTime == 30000 })
                let status = try await device.state()
                #expect(status.dashCast?.url == "https://example.org/c")
                #expect(status.receiverStatus.applications.first?.statusText == "Application ready")
            }
        }
    }

    @Test("DashCast drops what comes before its page is ready")
    func dashCastNotReady() async throws {
        // The page is ready a launch latency after the LAUNCH answer: 2 s leaves room for the
        // early message on a busy machine (300 ms did not, once).
        try await withSimulator([testDevice("Hub", launch: .seconds(2))]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let app = try await client.launch(SimulatedAppID.dashCast, requestId: 1)
                let transport = try #require(app["transportId"]?.stringValue)
                try await client.connect(to: transport)
                try await client.send(Self.dash, to: transport, #"{"url":"https://example.org/early"}"#)
                #expect(await waitUntil { await device.dashCastState()?.ready == true })
                #expect(device.received(namespace: Self.dash).count == 1)
                #expect(await device.dashCastState()?.url == nil)
                #expect(!client.messages.contains { $0.namespace == Self.dash })
            }
        }
    }

    @Test("a forced DashCast page is not echoed, and the receiver takes nothing after it")
    func dashCastForce() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await readyDashCast(client, device)
                try await client.send(Self.dash, to: transport, #"{"url":"https://example.org/a","force":true,"reload":false,"reload_time":0}"#)
                #expect(await waitUntil { await device.dashCastState()?.force == true })
                try await client.send(Self.dash, to: transport, #"{"url":"https://example.org/b","force":false}"#)
                #expect(await waitUntil { device.received(namespace: Self.dash).count == 2 })
                let state = try #require(await device.dashCastState())
                #expect(state.url == "https://example.org/a" && !state.responsive && state.loads == 1)
                #expect(!client.messages.contains { $0.namespace == Self.dash })
            }
        }
    }

    // MARK: - Lovelace

    @Test("the Lovelace receiver: status before connect, error 21 for a view before connect")
    func lovelaceNotConnected() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let app = try await client.launch(SimulatedAppID.lovelace, requestId: 1)
                #expect(app["displayName"]?.stringValue == "Home Assistant Lovelace")
                #expect(app["statusText"]?.stringValue == "Home Assistant Lovelace")
                let names = app["namespaces"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                #expect(names.contains(Self.hast) && names.contains(CastNamespace.media))
                let transport = try #require(app["transportId"]?.stringValue)
                try await client.connect(to: transport)
                try await client.send(Self.hast, to: transport, #"{"type":"get_status"}"#)
                let status = try #require(await client.waitFor(namespace: Self.hast, type: "receiver_status"))
                #expect(status["connected"]?.boolValue == false && status["showDemo"]?.boolValue == false)
                #expect(status["hassUrl"] == nil)
                client.forget()
                try await client.send(Self.hast, to: transport, #"{"type":"show_lovelace_view","viewPath":"home","urlPath":null}"#)
                let error = try #require(await client.waitFor(namespace: Self.hast, type: "receiver_error"))
                #expect(error["error_code"]?.intValue == 21)
                let hast = client.messages.filter { $0.namespace == Self.hast }
                #expect(hast.map { $0.json?["type"]?.stringValue } == ["receiver_status", "receiver_error"])
                #expect(hast.allSatisfy { $0.destinationID == "sender-0" && $0.sourceID == transport })
                #expect(await sim.devices[0].lovelaceState()?.lastErrorCode == 21)
            }
        }
    }

    @Test("connect: every sender of the app gets the status; a view is shown with its placeholder image")
    func lovelaceConnectAndShow() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await launchLovelace(client)
                try await client.connect(to: transport, from: "sender-1")
                try await client.send(Self.hast, to: transport, Self.connect(url: "https://ha.example:8123", uuid: "uuid-1"))
                #expect(await waitUntil { client.messages.filter { $0.json?["type"]?.stringValue == "receiver_status" }.count == 2 })
                let statuses = client.messages.filter { $0.json?["type"]?.stringValue == "receiver_status" }
                #expect(Set(statuses.map(\.destinationID)) == ["sender-0", "sender-1"], "addressed to each sender, not *")
                let status = try #require(statuses.first?.json)
                #expect(status["connected"]?.boolValue == true)
                #expect(status["hassUrl"]?.stringValue == "https://ha.example:8123" && status["hassUUID"]?.stringValue == "uuid-1")
                #expect(status["lovelacePath"] == .null && status["urlPath"] == nil)
                client.forget()
                try await client.send(Self.hast, to: transport,
                                      #"{"type":"show_lovelace_view","viewPath":"kitchen","urlPath":"dashboard-hub","hassUrl":"https://ha.example:8123","hassUUID":"uuid-1"}"#)
                let shown = try #require(await client.waitFor(namespace: Self.hast, type: "receiver_status"))
                #expect(shown["lovelacePath"]?.stringValue == "kitchen" && shown["urlPath"]?.stringValue == "dashboard-hub")
                let media = try #require(await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS"))
                #expect(media.firstStatus?["media"]?["contentId"]?.stringValue == SimulatedDevice.lovelaceImage)
                #expect(media.firstStatus?["media"]?["metadata"]?["title"]?.stringValue == "dashboard-hub: kitchen")
                let receiver = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                    $0["status"]?["applications"]?.arrayValue?.first?["statusText"]?.stringValue == "Casting: dashboard-hub: kitchen"
                })
                #expect(receiver["requestId"]?.intValue == 0)
                let state = try #require(await device.lovelaceState())
                #expect(state.connected && state.hassUUID == "uuid-1" && state.urlPath == .string("dashboard-hub"))
                // The default dashboard: "lovelace" and no urlPath both mean null.
                try await client.send(Self.hast, to: transport, #"{"type":"show_lovelace_view","viewPath":0,"urlPath":"lovelace"}"#)
                #expect(await waitUntil {
                    client.messages.filter { $0.namespace == Self.hast && $0.json?["lovelacePath"] == .number(0) }.count == 2
                })
                #expect(await device.lovelaceState()?.urlPath == .null)
                // Another instance: error 20 first for get_status, after the status for a view.
                client.forget()
                try await client.send(Self.hast, to: transport, #"{"type":"get_status","hassUUID":"uuid-2"}"#)
                #expect(await client.waitFor(namespace: Self.hast, type: "receiver_status") != nil)
                #expect(client.messages.filter { $0.namespace == Self.hast }.map { $0.json?["type"]?.stringValue }
                        == ["receiver_error", "receiver_status"])
                #expect(client.messages.first { $0.namespace == Self.hast }?.json?["error_code"]?.intValue == 20)
                client.forget()
                try await client.send(Self.hast, to: transport, #"{"type":"show_lovelace_view","viewPath":"x","urlPath":null,"hassUrl":"https://other.example"}"#)
                #expect(await client.waitFor(namespace: Self.hast, type: "receiver_error") { $0["error_code"]?.intValue == 20 } != nil)
                #expect(client.messages.filter { $0.namespace == Self.hast }.map { $0.json?["type"]?.stringValue }
                        == ["receiver_status", "receiver_error"])
                #expect(await device.lovelaceState()?.lovelacePath == .number(0), "nothing else shown")
                // show_demo needs no check, goes to every sender.
                client.forget()
                try await client.send(Self.hast, to: transport, #"{"type":"show_demo"}"#)
                #expect(await waitUntil { client.messages.filter { $0.json?["showDemo"]?.boolValue == true }.count == 2 })
                #expect(await device.lovelaceState()?.lovelacePath == .string("overview"))
            }
        }
    }

    @Test("connect refuses an http URL (error 5) unless allowed or localhost; no URL → 4; no token → 2")
    func lovelaceURLRules() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await launchLovelace(client)
                func connect(_ json: String) async throws -> JSONValue? {
                    client.forget()
                    try await client.send(Self.hast, to: transport, json)
                    return await client.waitFor { m in
                        let type = m.json?["type"]?.stringValue
                        return m.namespace == Self.hast && (type == "receiver_error" || type == "receiver_status")
                    }?.json
                }
                #expect(try await connect(Self.connect(url: "http://127.0.0.1:9/ha"))?["error_code"]?.intValue == 5)
                #expect(try await connect(#"{"type":"connect","refreshToken":"t","clientId":null}"#)?["error_code"]?.intValue == 4)
                #expect(try await connect(#"{"type":"connect","hassUrl":"https://ha.example","clientId":null}"#)?["error_code"]?.intValue == 2)
                #expect(await device.lovelaceState()?.connected == false)
                #expect(try await connect(Self.connect(url: "http://localhost:8123"))?["connected"]?.boolValue == true)
                await device.setLovelaceOptions(allowsHTTP: true)
                let status = try await connect(Self.connect(url: "http://127.0.0.1:9/ha"))
                #expect(status?["connected"]?.boolValue == true && status?["hassUrl"]?.stringValue == "http://127.0.0.1:9/ha")
                #expect(await device.lovelaceState()?.connects == 5)
            }
        }
    }

    @Test("lovelace_fail: the next connects (or views, code 22) fail with the code; null disarms")
    func lovelaceFailures() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            let device = sim.devices[0]
            let fault = Self.faults(sim, device)
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await launchLovelace(client)
                func answer(_ json: String) async throws -> JSONValue? {
                    client.forget()
                    try await client.send(Self.hast, to: transport, json)
                    return await client.waitFor { m in
                        let type = m.json?["type"]?.stringValue
                        return m.namespace == Self.hast && (type == "receiver_error" || type == "receiver_status")
                    }?.json
                }
                #expect(try await fault(#"{"action":"lovelace_fail","error_code":2,"count":1}"#) == .ok)
                #expect(try await answer(Self.connect())?["error_code"]?.intValue == 2)
                #expect(try await answer(Self.connect())?["connected"]?.boolValue == true)
                #expect(try await fault(#"{"action":"lovelace_fail","error_code":1}"#) == .ok)
                #expect(try await answer(Self.connect())?["error_code"]?.intValue == 1)
                #expect(try await answer(Self.connect())?["error_code"]?.intValue == 1)
                #expect(await device.lovelaceState()?.connected == true, "a failed connect leaves the old connection")
                #expect(try await fault(#"{"action":"lovelace_fail","error_code":null}"#) == .ok)
                #expect(try await answer(Self.connect())?["connected"]?.boolValue == true)
                #expect(try await fault(#"{"action":"lovelace_fail","error_code":22,"count":1}"#) == .ok)
                #expect(try await answer(#"{"type":"show_lovelace_view","viewPath":"a","urlPath":null}"#)?["error_code"]?.intValue == 22)
                #expect(try await answer(#"{"type":"show_lovelace_view","viewPath":"a","urlPath":null}"#)?["lovelacePath"]?.stringValue == "a")
                #expect(try await fault(#"{"action":"lovelace_fail","error_code":"two"}"#) == .badRequest)
                #expect(try await fault(#"{"action":"lovelace_fail","error_code":2,"count":0}"#) == .badRequest)
            }
        }
    }

    @Test("verify_token: the token and client id are posted to <hassUrl>/auth/token; only 200 connects")
    func lovelaceVerifiesTokens() async throws {
        let server = try await FakeTokenEndpoint.start(acceptedToken: "good-token")
        do {
            try await withSimulator([testDevice("Hub")]) { sim in
                let device = sim.devices[0]
                let router = ControlRouter(simulator: sim)
                let options = await router.fault(device, .object(["action": .string("lovelace_options"),
                                                                  "allow_http": .bool(true), "verify_token": .bool(true)]))
                #expect(options.status == .ok)
                try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                    let transport = try await launchLovelace(client)
                    func answer(_ json: String) async throws -> JSONValue? {
                        client.forget()
                        try await client.send(Self.hast, to: transport, json)
                        return await client.waitFor { m in
                            let type = m.json?["type"]?.stringValue
                            return m.namespace == Self.hast && (type == "receiver_error" || type == "receiver_status")
                        }?.json
                    }
                    let base = "http://127.0.0.1:\(server.port)"
                    #expect(try await answer(Self.connect(url: base, token: "bad-token"))?["error_code"]?.intValue == 2)
                    #expect(await device.lovelaceState()?.connected == false)
                    #expect(try await answer(Self.connect(url: base, token: "good-token"))?["connected"]?.boolValue == true)
                    let requests = server.requests
                    #expect(requests.count == 2)
                    let form = try #require(requests.last)
                    #expect(form.path == "/auth/token" && form.method == "POST")
                    #expect(form.fields["grant_type"] == "refresh_token" && form.fields["refresh_token"] == "good-token")
                    #expect(form.fields["client_id"] == "https://bridge.example/")
                    // Not loopback: refused without a request; nothing listening: error 1 too.
                    #expect(try await answer(Self.connect(url: "https://ha.example", token: "good-token"))?["error_code"]?.intValue == 1)
                    #expect(server.requests.count == 2)
                    let closed = try await freeLoopbackPort()
                    #expect(try await answer(Self.connect(url: "http://127.0.0.1:\(closed)", token: "good-token"))?["error_code"]?.intValue == 1)
                    // The token is in no state the simulator hands out.
                    let state = try CastJSON.encode(try await device.state())
                    #expect(!state.contains("good-token"))
                }
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    // MARK: - Timeouts

    @Test("page timeout: an idle app without senders closes; a sender, or disableIdleTimeout, keeps it")
    func pageTimeout() async throws {
        let clock = ManualSimulatorClock()
        var configuration = testDevice("Hub", clock: clock)
        configuration.pageTimeout = 300
        try await withSimulator([configuration]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await readyDashCast(client, device)
                try await device.advanceClock(by: 400)
                #expect(await device.dashCastState() != nil, "a sender is connected")
                try await client.send(CastNamespace.connection, to: transport, ConnectionMessage.close(reasonCode: nil).json())
                #expect(await waitUntil { device.received(namespace: CastNamespace.connection, type: "CLOSE").count == 1 })
                try await device.advanceClock(by: 299)
                #expect(await device.dashCastState() != nil)
                client.forget()
                try await device.advanceClock(by: 2)
                #expect(try await device.state().receiverStatus.applications.first?.appId == SimulatedAppID.backdrop)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                    $0["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == SimulatedAppID.backdrop
                } != nil)
                // The Lovelace receiver disables the idle timeout.
                let lovelace = try await launchLovelace(client, requestId: 20)
                try await client.send(CastNamespace.connection, to: lovelace, ConnectionMessage.close(reasonCode: nil).json())
                #expect(await waitUntil { device.received(namespace: CastNamespace.connection, type: "CLOSE").count == 2 })
                try await device.advanceClock(by: 10_000)
                #expect(await device.lovelaceState() != nil)
                // Off: nothing closes.
                await device.setPageTimeout(nil)
                _ = try await readyDashCast(client, device, requestId: 30)
                try await client.send(CastNamespace.connection, to: try #require(try await device.state().receiverStatus.applications.first?.transportId),
                                      ConnectionMessage.close(reasonCode: nil).json())
                try await device.advanceClock(by: 10_000)
                #expect(await device.dashCastState() != nil)
            }
        }
    }

    @Test("display timeout: any app closes after it; the Lovelace receiver's image reload keeps a view up")
    func displayTimeout() async throws {
        let clock = ManualSimulatorClock()
        var configuration = testDevice("Hub", clock: clock)
        configuration.displayTimeout = 600
        try await withSimulator([configuration]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await readyDashCast(client, device)
                try await client.send(Self.dash, to: transport, #"{"url":"https://example.org","reload":true,"reload_time":1000}"#)
                #expect(await waitUntil { await device.dashCastState()?.loads == 1 })
                try await device.advanceClock(by: 599)
                #expect(await device.dashCastState() != nil)
                try await device.advanceClock(by: 1)
                #expect(await device.dashCastState() == nil, "closed although a sender is connected")
                #expect(await client.waitFor { $0.sourceID == transport && $0.json?["type"]?.stringValue == "CLOSE" } != nil)
                // A Lovelace view survives: its image is reloaded every 540 s.
                let lovelace = try await launchLovelace(client, requestId: 20)
                try await client.send(Self.hast, to: lovelace, Self.connect())
                #expect(await waitUntil { await device.lovelaceState()?.connected == true })
                try await client.send(Self.hast, to: lovelace, #"{"type":"show_lovelace_view","viewPath":"home","urlPath":null}"#)
                #expect(try await waitUntil { try await device.state().mediaStatus != nil })
                let first = try #require(try await device.state().mediaStatus?.mediaSessionId)
                try await device.advanceClock(by: 500)
                try await device.advanceClock(by: 500)
                try await device.advanceClock(by: 500)
                #expect(await device.lovelaceState() != nil)
                #expect(try await device.state().mediaStatus?.mediaSessionId ?? 0 > first, "the image was loaded again")
                // A display timeout under the 540 s reload wins.
                await device.setDisplayTimeout(30)
                try await device.advanceClock(by: 31)
                #expect(await device.lovelaceState() == nil, "a display timeout under 540 s beats the reload")
            }
        }
    }

    // MARK: - Apps started by someone else

    @Test("remote_launch shows another app (known or named) to every sender; remote_stop brings the idle screen back")
    func remoteLaunchAndStop() async throws {
        try await withSimulator([testDevice("Hub")]) { sim in
            let device = sim.devices[0]
            let fault = Self.faults(sim, device)
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let transport = try await launchLovelace(client)
                #expect(try await fault(#"{"action":"remote_launch","app_id":"0F5096E8"}"#) == .conflict)
                #expect(try await fault(#"{"action":"remote_launch","app_id":"0F5096E8","display_name":"Timer","launched_from_cloud":true}"#) == .ok)
                let status = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                    $0["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == "0F5096E8"
                })
                let app = try #require(status["status"]?["applications"]?.arrayValue?.first)
                #expect(app["displayName"]?.stringValue == "Timer" && app["launchedFromCloud"]?.boolValue == true)
                #expect(await client.waitFor { $0.sourceID == transport && $0.json?["type"]?.stringValue == "CLOSE" } != nil,
                        "the Lovelace receiver's sender was closed")
                client.forget()
                #expect(try await fault(#"{"action":"remote_stop"}"#) == .ok)
                #expect(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                    $0["status"]?["applications"]?.arrayValue?.first?["appId"]?.stringValue == SimulatedAppID.backdrop
                } != nil)
                #expect(try await fault(#"{"action":"remote_stop"}"#) == .conflict)
                #expect(try await fault(#"{"action":"remote_launch","app_id":"84912283"}"#) == .ok)
                #expect(await waitUntil { await device.dashCastState()?.ready == true })
                #expect(try await fault(#"{"action":"page_timeout","seconds":120}"#) == .ok)
                #expect(try await fault(#"{"action":"display_timeout","seconds":-1}"#) == .badRequest)
                let state = try await device.state()
                #expect(state.pageTimeout == 120 && state.displayTimeout == nil)
            }
        }
    }

    // MARK: - Helpers

    static func connect(url: String = "https://ha.example:8123", uuid: String = "uuid-1", token: String = "token") -> String {
        #"{"type":"connect","refreshToken":"\#(token)","clientId":"https://bridge.example/","hassUrl":"\#(url)","hassUUID":"\#(uuid)"}"#
    }

    /// Launches DashCast, connects to it and waits until its page is ready; its transportId.
    func readyDashCast(_ client: TestCastClient, _ device: SimulatedDevice, requestId: Int = 1) async throws -> String {
        let app = try await client.launch(SimulatedAppID.dashCast, requestId: requestId)
        let transport = try #require(app["transportId"]?.stringValue)
        try await client.connect(to: transport)
        #expect(await waitUntil { await device.dashCastState()?.ready == true })
        return transport
    }

    /// Launches the Lovelace receiver and connects to it; its transportId.
    func launchLovelace(_ client: TestCastClient, requestId: Int = 1) async throws -> String {
        let app = try await client.launch(SimulatedAppID.lovelace, requestId: requestId)
        let transport = try #require(app["transportId"]?.stringValue)
        try await client.connect(to: transport)
        return transport
    }
}

/// A port on 127.0.0.1 where nothing listens (bound, then closed again).
func freeLoopbackPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: testGroup).bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port ?? 0
    try await channel.close()
    return port
}

/// Home Assistant's `/auth/token` for the token check: answers 200 to the accepted refresh token,
/// 400 to any other, and keeps every request it got.
final class FakeTokenEndpoint: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var fields: [String: String]
    }

    private let channel: any Channel
    private let store: NIOLockedValueBox<[Request]>
    var port: Int { channel.localAddress?.port ?? 0 }
    var requests: [Request] { store.withLockedValue { $0 } }

    private init(channel: any Channel, store: NIOLockedValueBox<[Request]>) {
        self.channel = channel
        self.store = store
    }

    static func start(acceptedToken: String) async throws -> FakeTokenEndpoint {
        let store = NIOLockedValueBox<[Request]>([])
        let channel = try await ServerBootstrap(group: testGroup)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(store: store, acceptedToken: acceptedToken))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return FakeTokenEndpoint(channel: channel, store: store)
    }

    func stop() async { try? await channel.close() }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let store: NIOLockedValueBox<[Request]>
        let acceptedToken: String
        var head: HTTPRequestHead?
        var body = ""

        init(store: NIOLockedValueBox<[Request]>, acceptedToken: String) {
            self.store = store
            self.acceptedToken = acceptedToken
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = ""
            case .body(var buffer):
                body += buffer.readString(length: buffer.readableBytes) ?? ""
            case .end:
                var fields: [String: String] = [:]
                for pair in body.split(separator: "&") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
                    if parts.count == 2 { fields[parts[0]] = parts[1] }
                }
                let request = Request(method: head?.method.rawValue ?? "", path: head?.uri ?? "", fields: fields)
                store.withLockedValue { $0.append(request) }
                let ok = fields["refresh_token"] == acceptedToken
                let text = ok ? #"{"access_token":"a","expires_in":1800,"token_type":"Bearer"}"# : #"{"error":"invalid_grant"}"#
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: String(text.utf8.count))
                headers.add(name: "Connection", value: "close")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: ok ? .ok : .badRequest,
                                                                     headers: headers))), promise: nil)
                var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
                buffer.writeString(text)
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                }
            }
        }
    }
}
