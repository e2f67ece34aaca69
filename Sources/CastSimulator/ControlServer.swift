import CastProtocol
import Foundation
import Synchronization
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small JSON-over-HTTP/1.1 control endpoint on 127.0.0.1 for scripts and out-of-process
/// tests (see docs/simulator.md for the routes).
public final class ControlServer: Sendable {
    public let simulator: CastSimulator
    private let channel: any Channel

    /// The bound port.
    public var port: Int { channel.localAddress?.port ?? 0 }

    private init(simulator: CastSimulator, channel: any Channel) {
        self.simulator = simulator
        self.channel = channel
    }

    /// Listens on `host`:`port` (0 picks a free port). Keep `host` on loopback or a test network:
    /// the endpoint has no authentication.
    public static func start(simulator: CastSimulator, host: String = "127.0.0.1", port: Int) async throws -> ControlServer {
        let router = ControlRouter(simulator: simulator)
        let channel = try await ServerBootstrap(group: simulator.group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(ControlHTTPHandler(router: router))
                }
            }
            .bind(host: host, port: port).get()
        return ControlServer(simulator: simulator, channel: channel)
    }

    public func shutdown() async {
        try? await channel.close()
    }
}

struct ControlResponse: Sendable {
    var status: HTTPResponseStatus
    var body: String

    static func json<T: Encodable>(_ value: T, status: HTTPResponseStatus = .ok) -> ControlResponse {
        ControlResponse(status: status, body: (try? CastJSON.encode(value)) ?? "{}")
    }

    static func error(_ status: HTTPResponseStatus, _ message: String) -> ControlResponse {
        json(["error": message], status: status)
    }

    static let ok = json(["ok": true])
}

final class ControlHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let router: ControlRouter
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private static let maxBody = 1 << 20

    init(router: ControlRouter) { self.router = router }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            if body.count + buffer.readableBytes > Self.maxBody {
                context.close(promise: nil)
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            let router = self.router
            let requestBody = body
            let keepAlive = head.isKeepAlive
            let promise = context.eventLoop.makePromise(of: ControlResponse.self)
            promise.completeWithTask {
                await router.handle(method: head.method, uri: head.uri, body: requestBody)
            }
            promise.futureResult.assumeIsolated().whenSuccess { response in
                self.write(response, keepAlive: keepAlive, context: context)
            }
        }
    }

    private func write(_ response: ControlResponse, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(response.body.utf8.count))
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: response.status,
                                                             headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: response.body.utf8.count)
        buffer.writeString(response.body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}

/// Maps control requests to simulator calls.
struct ControlRouter: Sendable {
    let simulator: CastSimulator

    struct DeviceSummary: Encodable {
        var name: String
        var id: String
        var port: Int
        var listening: Bool
        var model: String
        var castType: String
        var host: String
        /// The device's counters (connections among them), so one request reads a whole fleet's.
        var counters: SimulatorCounters
    }

    func handle(method: HTTPMethod, uri: String, body: [UInt8]) async -> ControlResponse {
        let components = URLComponents(string: uri)
        let path = (components?.path ?? uri).split(separator: "/").map(String.init)
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value }
        let json: JSONValue = body.isEmpty ? .object([:]) : ((try? CastJSON.decode(JSONValue.self, from: body)) ?? .null)
        if !body.isEmpty, json.objectValue == nil { return .error(.badRequest, "body must be a JSON object") }

        switch (method, path.count > 0 ? path[0] : "") {
        case (.GET, "health"):
            return .ok
        case (.GET, "devices") where path.count == 1:
            return .json(simulator.devices.map {
                DeviceSummary(name: $0.name, id: $0.id, port: $0.port, listening: $0.isListening,
                              model: $0.configuration.model, castType: $0.configuration.castType.rawValue, host: $0.host,
                              counters: $0.counters)
            })
        case (.POST, "transfer") where path.count == 1:
            guard let from = json["from"]?.stringValue, let to = json["to"]?.stringValue else {
                return .error(.badRequest, "need {\"from\": id, \"to\": id}")
            }
            do {
                try await simulator.transfer(from: from, to: to)
                return .ok
            } catch {
                return .error(.conflict, "\(error)")
            }
        case (_, "groups"):
            return await handleGroups(method: method, rest: Array(path.dropFirst()), json: json)
        case (.GET, "announcements") where path.count == 1:
            return .json(simulator.serviceAnnouncements)
        case (_, "devices") where path.count >= 3:
            guard let device = simulator.device(id: path[1]) else { return .error(.notFound, "no device \(path[1])") }
            return await handleDevice(device, method: method, rest: Array(path.dropFirst(2)), query: query, json: json)
        default:
            return .error(.notFound, "no route \(method) \(uri)")
        }
    }

    private func handleDevice(_ device: SimulatedDevice, method: HTTPMethod, rest: [String], query: [String: String],
                              json: JSONValue) async -> ControlResponse {
        switch (method, rest.joined(separator: "/")) {
        case (.GET, "state"):
            guard let state = try? await device.state() else { return .error(.internalServerError, "no state") }
            return .json(state)
        case (.GET, "counters"):
            return .json(device.counters)
        case (.GET, "received"):
            let messages = device.received(namespace: query["namespace"], type: query["type"])
            return .json(messages.map(Self.describe))
        case (.DELETE, "received"):
            device.clearReceived()
            return .ok
        case (.POST, "clock/advance"):
            guard let seconds = json["seconds"]?.doubleValue else { return .error(.badRequest, "need {\"seconds\": N}") }
            do {
                try await device.advanceClock(by: seconds)
                return .ok
            } catch {
                return .error(.conflict, "\(error)")
            }
        case (.POST, "fault"):
            return await fault(device, json)
        case (.POST, "eureka"):
            return await eureka(device, json)
        case (.POST, "bench"):
            return await bench(device, json)
        default:
            return .error(.notFound, "no route \(method) /devices/\(device.id)/\(rest.joined(separator: "/"))")
        }
    }

    func fault(_ device: SimulatedDevice, _ json: JSONValue) async -> ControlResponse {
        switch json["action"]?.stringValue ?? "" {
        case "hostile":
            return await hostile(device, json)
        case "hostile_replies":
            guard let mode = json["mode"]?.stringValue.flatMap(HostileReplyMode.init(rawValue:)) else {
                return .error(.badRequest, "need \"mode\": \(HostileReplyMode.allCases.map(\.rawValue).joined(separator: " or "))")
            }
            let count = json["count"]?.doubleValue.map { Int(max(0, min($0, 10_000))) } ?? 1
            await device.armHostileReplies(mode, count: count)
        case "device_auth":
            // How AuthChallenges are answered: {"mode": "correct" | "no_answer" | ...}; or
            // {"renew": true}: a new device certificate.
            if json["renew"]?.boolValue == true {
                await device.renewDeviceCertificate()
                return .ok
            }
            guard let mode = json["mode"]?.stringValue.flatMap(DeviceAuthBehaviour.init(rawValue:)) else {
                return .error(.badRequest, "need \"mode\": \(DeviceAuthBehaviour.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            await device.setDeviceAuthBehaviour(mode)
        case "replay":
            return await replay(device, json)
        case "behave":
            await device.behave()
        case "drop": await device.dropConnections()
        case "silence": await device.silence()
        case "resume": await device.resume()
        case "restart":
            let seconds = json["refuse_seconds"]?.doubleValue ?? 0
            do {
                try await device.restart(refuseFor: .nanoseconds(Int64(max(0, min(seconds, 3600)) * 1e9)))
            } catch {
                return .error(.internalServerError, "\(error)")
            }
        case "swallow_first":
            await device.swallowFirstMessages(min(json["count"]?.intValue ?? 3, 1000))
        case "reply_latency":
            let ms = json["ms"]?.doubleValue
            await device.setReplyLatency(ms.map { .milliseconds(Int64(max(0, min($0, 60_000)))) })
        case "volume_after_reply":
            await device.changeVolumeAfterReplies(to: json["level"]?.doubleValue)
        case "refuse_app_connections":
            // CONNECTs to the running app's transport are answered with CLOSE (a device that does
            // not let this sender in): {"enabled": true|false}.
            await device.refuseAppConnections(json["enabled"]?.boolValue ?? true)
        case "pings_only":
            await device.answerPingsOnly(json["enabled"]?.boolValue ?? true)
        case "garbage": await device.sendGarbageFrame()
        case "oversized": await device.sendOversizedFrameHeader()
        case "remote_volume":
            await device.setVolumeRemotely(level: json["level"]?.doubleValue, muted: json["muted"]?.boolValue)
        case "remote_load":
            // Another sender plays something: {"app_id", "request": LoadRequestData} or
            // {"app_id", "queue": QUEUE_LOAD body}.
            let appId = json["app_id"]?.stringValue ?? SimulatedAppID.defaultMediaReceiver
            let queue = json["queue"]
            guard let request = queue ?? json["request"] else { return .error(.badRequest, "need \"request\" or \"queue\"") }
            guard await device.remoteLoad(appId: appId, request: request, queue: queue != nil) else {
                return .error(.conflict, "could not load (unknown app, or a request that does not load)")
            }
        case "remote_launch":
            // Another sender or the Assistant starts an app: {"app_id", "display_name" (for an id
            // the simulator does not know), "launched_from_cloud"}.
            guard let appId = json["app_id"]?.stringValue, !appId.isEmpty, appId.utf8.count <= 64 else {
                return .error(.badRequest, "need \"app_id\"")
            }
            let name = json["display_name"]?.stringValue.map { String($0.prefix(256)) }
            guard await device.remoteLaunch(appId: appId, displayName: name,
                                            launchedFromCloud: json["launched_from_cloud"]?.boolValue ?? false) else {
                return .error(.conflict, "unknown app \(appId) (give \"display_name\" to show it anyway)")
            }
        case "remote_stop":
            guard await device.remoteStop() else { return .error(.conflict, "no app running") }
        case "page_timeout", "display_timeout":
            // {"seconds": N} or {"seconds": null} (off).
            let seconds = json["seconds"]
            guard seconds == nil || seconds == .null || (seconds?.doubleValue).map({ $0.isFinite && $0 >= 0 && $0 <= 31_536_000 }) == true else {
                return .error(.badRequest, "need \"seconds\": 0-31536000 or null")
            }
            if json["action"]?.stringValue == "page_timeout" {
                await device.setPageTimeout(seconds?.doubleValue)
            } else {
                await device.setDisplayTimeout(seconds?.doubleValue)
            }
        case "lovelace_options":
            // {"allow_http": bool, "verify_token": bool} (either may be left out).
            await device.setLovelaceOptions(allowsHTTP: json["allow_http"]?.boolValue,
                                            verifiesTokens: json["verify_token"]?.boolValue)
        case "lovelace_fail":
            // {"error_code": N, "count": N} (count left out: every time) or {"error_code": null}.
            let code = json["error_code"]
            let count = json["count"]
            guard code == nil || code == .null || code?.intValue.map({ (0...1_000_000).contains($0) }) == true,
                  count == nil || count == .null || count?.intValue.map({ (1...1_000_000).contains($0) }) == true else {
                return .error(.badRequest, "need \"error_code\": N or null, optional \"count\": 1-1000000")
            }
            await device.failLovelace(errorCode: code?.intValue, count: count?.intValue)
        case "finish_media":
            guard await device.finishMedia() else { return .error(.conflict, "no media session") }
        case "push_message":
            let namespace = json["namespace"]?.stringValue ?? SimulatedAppID.echoNamespace
            let payload: CastPayload
            if let base64 = json["binary_base64"]?.stringValue, let data = Data(base64Encoded: base64) {
                payload = .binary(Array(data))
            } else if let text = json["data"]?.stringValue {
                payload = .string(text)
            } else {
                payload = .string((try? CastJSON.encode(json["data"] ?? .object([:]))) ?? "{}")
            }
            guard await device.pushAppMessage(namespace: namespace, payload: payload) else {
                return .error(.conflict, "no app running")
            }
        case let other:
            return .error(.badRequest, "unknown action '\(other)'")
        }
        return .ok
    }

    /// `{"action":"replay","namespace":NS,"text":"<the message as the device sent it>"|"message":{…},
    /// "as":"unprompted"|"status"|"answer","to":"LOAD","source":ENDPOINT}` (SimulatedDevice+Replay.swift).
    /// `text` keeps the message byte for byte (key order, float noise); `message` is re-encoded.
    private func replay(_ device: SimulatedDevice, _ json: JSONValue) async -> ControlResponse {
        let modes = ReplayMode.allCases.map(\.rawValue).joined(separator: ", ")
        guard let namespace = json["namespace"]?.stringValue, namespace.hasPrefix(CastNamespace.prefix) else {
            return .error(.badRequest, "need \"namespace\": urn:x-cast:…")
        }
        guard let mode = ReplayMode(rawValue: json["as"]?.stringValue ?? "unprompted") else {
            return .error(.badRequest, "\"as\": one of \(modes)")
        }
        let text: String
        if let given = json["text"]?.stringValue {
            text = given
        } else if let message = json["message"], let encoded = try? CastJSON.encode(message) {
            text = encoded
        } else {
            return .error(.badRequest, "need \"text\" (the message as sent) or \"message\" (a JSON object)")
        }
        do {
            try await device.replay(text, namespace: namespace, mode: mode, requestType: json["to"]?.stringValue,
                                    source: json["source"]?.stringValue)
            return .ok
        } catch {
            return .error(.conflict, "\(error)")
        }
    }

    struct HostileAnswer: Encodable {
        var ok = true
        var messages: Int
    }

    /// `{"action":"hostile","class":"numbers,nulls"|"all"}`: one round now; with `interval_ms`,
    /// hostile mode (a round of the next class every interval until `behave`).
    private func hostile(_ device: SimulatedDevice, _ json: JSONValue) async -> ControlResponse {
        let names = HostileClass.allCases.map(\.rawValue).joined(separator: ", ")
        guard let text = json["class"]?.stringValue, let classes = HostileClass.parseList(text) else {
            return .error(.badRequest, "need \"class\": all or a comma-separated list of \(names)")
        }
        let seed = json["seed"]?.doubleValue.map { UInt64(max(0, min($0, 1e15))) } ?? 1
        if let interval = json["interval_ms"]?.doubleValue {
            guard interval.isFinite, interval >= 10, interval <= 3_600_000 else {
                return .error(.badRequest, "interval_ms: 10-3600000")
            }
            await device.startHostile(classes, interval: .milliseconds(Int64(interval)), seed: seed)
            return .json(HostileAnswer(messages: 0))
        }
        return .json(HostileAnswer(messages: await device.sendHostile(classes, seed: seed)))
    }

    struct MessageDescription: Encodable {
        var sequence: Int
        var connection: Int
        var namespace: String
        var source: String
        var destination: String
        var type: String?
        var requestId: Int?
        var delivered: Bool
        /// The payload as JSON when it parses, else the raw text.
        var payload: JSONValue?
        var payloadBinaryBase64: String?
        /// When the device recorded it, CLOCK_MONOTONIC nanoseconds.
        var monotonicNanoseconds: UInt64

        enum CodingKeys: String, CodingKey {
            case sequence, connection, namespace, source, destination, type, requestId, delivered, payload
            case payloadBinaryBase64 = "payload_binary_base64"
            case monotonicNanoseconds = "monotonic_ns"
        }
    }

    static func describe(_ m: RecordedMessage) -> MessageDescription {
        var payload: JSONValue?
        var binary: String?
        switch m.payload {
        case .string(let text): payload = m.json ?? .string(text)
        case .binary(let bytes): binary = Data(bytes).base64EncodedString()
        }
        return MessageDescription(sequence: m.sequence, connection: m.connection, namespace: m.namespace,
                                  source: m.sourceID, destination: m.destinationID, type: m.type,
                                  requestId: m.requestId, delivered: m.delivered, payload: payload,
                                  payloadBinaryBase64: binary, monotonicNanoseconds: m.monotonicNanoseconds)
    }
}

extension ControlRouter {
    /// `POST /devices/<id>/bench`: actions for the end-to-end benchmark (`scripts/bench e2e`).
    /// Kept apart from `fault` so the two grow independently.
    func bench(_ device: SimulatedDevice, _ json: JSONValue) async -> ControlResponse {
        struct Written: Encodable {
            var monotonicNanoseconds: UInt64
            enum CodingKeys: String, CodingKey { case monotonicNanoseconds = "monotonic_ns" }
        }
        switch json["action"]?.stringValue ?? "" {
        case "media_title":
            guard let title = json["title"]?.stringValue, title.utf8.count <= 1024 else {
                return .error(.badRequest, "need {\"action\": \"media_title\", \"title\": text (at most 1024 bytes)}")
            }
            guard let written = await device.broadcastMediaTitle(title) else {
                return .error(.conflict, "no media session")
            }
            return .json(Written(monotonicNanoseconds: written))
        case "now":
            return .json(Written(monotonicNanoseconds: NIODeadline.now().uptimeNanoseconds))
        case let other:
            return .error(.badRequest, "unknown bench action '\(other)'")
        }
    }
}
