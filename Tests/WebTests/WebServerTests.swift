import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TestSupport
@testable import Web

/// One HTTP/1.1 exchange over a plain socket (`Connection: close`), bounded by a 10 s timeout. The
/// socket blocks, so it runs on NIO's thread pool: on the test process's cooperative threads it
/// could starve the server's own request tasks (a page that never came, under load).
func http(_ port: Int, _ method: String, _ path: String, headers: [String: String] = [:], body: String = "") async throws
    -> (status: Int, headers: [String: String], body: String) {
    try await NIOThreadPool.singleton.runIfActive { try blockingHTTP(port, method, path, headers: headers, body: body) }
}

private func blockingHTTP(_ port: Int, _ method: String, _ path: String, headers: [String: String], body: String) throws
    -> (status: Int, headers: [String: String], body: String) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    var text = "\(method) \(path) HTTP/1.1\r\nHost: \(headers["Host"] ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
    for (name, value) in headers where name != "Host" { text += "\(name): \(value)\r\n" }
    if !body.isEmpty { text += "Content-Length: \(body.utf8.count)\r\n" }
    text += "\r\n" + body
    _ = text.withCString { send(fd, $0, strlen($0), 0) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        received += buffer[0..<n]
        // A 101 keeps the connection open: the head is all there is to read.
        if received.starts(with: Array("HTTP/1.1 101".utf8)), received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) { break }
    }
    let response = String(decoding: received, as: UTF8.self)
    let parts = response.components(separatedBy: "\r\n\r\n")
    let lines = parts[0].components(separatedBy: "\r\n")
    let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
    var fields: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return (status, fields, parts.dropFirst().joined(separator: "\r\n\r\n"))
}

/// A server on a free loopback port for the duration of `body`.
func withServer(token: String? = nil, metricsPublic: Bool = false, port: Int = 0, maxPages: Int = 32,
                _ body: @Sendable (Int, WebServer, any EventLoopGroup) async throws -> Void) async throws {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let metrics = BridgeMetrics()
    let hub = makeHub()
    var logger = Logger(label: "web-test")
    logger.logLevel = .critical
    let server = WebServer(configuration: .init(host: "127.0.0.1", port: port, token: token, metricsPublic: metricsPublic,
                                                version: "test", configurationText: "web:\n  token: \"***\"\n"),
                           hub: hub, metrics: metrics, logger: logger, maxPages: maxPages, stats: { Array("{}".utf8) })
    let bound = NIOLockedValueBox<Int?>(nil)
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { await server.run(group: group) { port in bound.withLockedValue { $0 = port } } }
        #expect(await waitUntil(timeout: .seconds(60)) { bound.withLockedValue { $0 } != nil })
        let port = try #require(bound.withLockedValue { $0 }, "the server did not start")
        try await body(port, server, group)
        tasks.cancelAll()
    }
    try await group.shutdownGracefully()
}

/// An open WebSocket (the 101 read; the caller closes the descriptor), off the cooperative threads.
func webSocket(_ port: Int) async throws -> Int32 {
    try await NIOThreadPool.singleton.runIfActive { try blockingWebSocket(port) }
}

private func blockingWebSocket(_ port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard fd >= 0, connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    let request = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        + upgrade.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n"
    _ = request.withCString { send(fd, $0, strlen($0), 0) }
    var head = [UInt8](repeating: 0, count: 12)
    guard recv(fd, &head, head.count, 0) == 12, head.elementsEqual(Array("HTTP/1.1 101".utf8)) else {
        close(fd)
        throw POSIXError(.EPROTO)
    }
    return fd
}

let upgrade = ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="]

@Suite(.serialized) struct WebServerTests {
    @Test func servesThePageWithStrictHeaders() async throws {
        try await withServer { port, _, _ in
            let page = try await http(port, "GET", "/")
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            #expect(page.headers["x-frame-options"] == "DENY")
            // Every URL relative to the base, which follows Home Assistant's X-Ingress-Path.
            #expect(page.body.contains(#"<script type="module" src="app.js">"#))
            #expect(page.body.contains(#"<base href="/">"#))
            let ingress = try await http(port, "GET", "/device/kitchen", headers: ["X-Ingress-Path": "/api/hassio_ingress/tok"])
            #expect(ingress.body.contains(#"<base href="/api/hassio_ingress/tok/">"#))
            #expect(try await http(port, "GET", "/", headers: ["X-Ingress-Path": "//evil.example"]).body == page.body)
            let script = try await http(port, "GET", "/app.js")
            #expect(script.status == 200 && script.headers["content-type"]?.hasPrefix("text/javascript") == true)
            let etag = try #require(script.headers["etag"])
            #expect(try await http(port, "GET", "/app.js", headers: ["If-None-Match": etag]).status == 304)
            #expect(try await http(port, "GET", "/device/kitchen").body == page.body, "the page's own routes get the page")
            #expect(try await http(port, "GET", "/nope").status == 404)
            #expect(try await http(port, "GET", "/", headers: ["Host": "evil.example:\(port)"]).status == 403, "DNS rebinding")
            #expect(try await http(port, "DELETE", "/").status == 405)
        }
    }

    @Test func healthAndMetrics() async throws {
        try await withServer { port, server, _ in
            let down = try await http(port, "GET", "/healthz")
            #expect(down.status == 503 && down.body.contains(#""healthy":false"#))
            server.metrics.mqttConnection(up: true)
            server.metrics.consumerTurned()
            let up = try await http(port, "GET", "/healthz")
            #expect(up.status == 200 && up.body.contains(#""mqtt_connected":true"#))
            server.metrics.commandAnswered(command: "play", code: "ok", latency: .milliseconds(1))
            let metrics = try await http(port, "GET", "/metrics")
            #expect(metrics.status == 200 && metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(metrics.body.contains("\ncast2mqtt_commands_total{command=\"play\",code=\"ok\"} 1\n"))
        }
    }

    @Test func theWebSocketRefusesAForeignOrigin() async throws {
        try await withServer { port, _, _ in
            var foreign = upgrade
            foreign["Origin"] = "http://evil.example"
            // A refused upgrade is answered 400 by the upgrader; without the upgrade headers the
            // same request says why.
            #expect(try await http(port, "GET", "/ws", headers: foreign).status == 400)
            let refused = try await http(port, "GET", "/ws", headers: ["Origin": "http://evil.example"])
            #expect(refused.status == 403 && refused.body.contains("cross-origin"))
            var same = upgrade
            same["Origin"] = "http://127.0.0.1:\(port)"
            #expect(try await http(port, "GET", "/ws", headers: same).status == 101)
            #expect(try await http(port, "GET", "/ws").status == 400, "not an upgrade")
        }
    }

    @Test func aTokenGuardsEverythingButThePageFiles() async throws {
        try await withServer(token: "tok-123") { port, _, _ in
            #expect(try await http(port, "GET", "/").status == 200, "the files hold no data")
            #expect(try await http(port, "GET", "/metrics").status == 401)
            #expect(try await http(port, "GET", "/healthz").status == 401)
            #expect(try await http(port, "GET", "/metrics", headers: ["Authorization": "Bearer tok-123"]).status == 200)
            #expect(try await http(port, "GET", "/ws", headers: upgrade).status == 400)
            #expect(try await http(port, "GET", "/ws").status == 401)
            #expect(try await http(port, "GET", "/api/session").body.contains(#""authenticated":false"#))
            let login = try await http(port, "POST", "/api/login", headers: ["Content-Type": "application/json"], body: #"{"token":"tok-123"}"#)
            #expect(login.status == 204)
            let cookie = try #require(login.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
            #expect(try await http(port, "GET", "/api/session", headers: ["Cookie": cookie]).body.contains(#""authenticated":true"#))
            var withCookie = upgrade
            withCookie["Cookie"] = cookie
            #expect(try await http(port, "GET", "/ws", headers: withCookie).status == 101)
            for _ in 0..<LoginLimiter.attemptsPerWindow {
                #expect(try await http(port, "POST", "/api/login", body: #"{"token":"guess"}"#).status == 401)
            }
            let limited = try await http(port, "POST", "/api/login", body: #"{"token":"tok-123"}"#)
            #expect(limited.status == 429 && limited.headers["retry-after"] != nil, "even the right token waits")
            #expect(try await http(port, "POST", "/api/login", headers: ["Origin": "http://evil.example"], body: "{}").status == 403)
        }
        try await withServer(token: "tok-123", metricsPublic: true) { port, _, _ in
            let (metrics, health) = (try await http(port, "GET", "/metrics"), try await http(port, "GET", "/healthz"))
            #expect(metrics.status == 200)
            #expect(health.status == 503)
        }
    }

    @Test func atMostMaxPagesAreOpenAtOnce() async throws {
        try await withServer(maxPages: 2) { port, server, _ in
            var open: [Int32] = []
            defer { for fd in open { close(fd) } }
            for _ in 0..<2 { open.append(try await webSocket(port)) }
            #expect(await waitUntil { server.hub.clientCount == 2 })
            #expect(try await http(port, "GET", "/ws", headers: upgrade).status == 400, "a third page is refused")
        }
    }

    @Test func aPortInUseIsLoggedAndTheCallReturns() async throws {
        try await withServer { port, _, group in
            var logger = Logger(label: "web-test")
            logger.logLevel = .critical
            let second = WebServer(configuration: .init(host: "127.0.0.1", port: port, token: nil, metricsPublic: false,
                                                        version: "test", configurationText: ""),
                                   hub: makeHub(), metrics: BridgeMetrics(), logger: logger, stats: { Array("{}".utf8) })
            await second.run(group: group)  // returns instead of serving
            let first = try await http(port, "GET", "/")
            #expect(first.status == 200, "the first one still serves")
        }
    }
}
