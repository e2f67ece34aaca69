import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// What Home Assistant said of a refresh token (`LovelaceTokenCheck.check`).
enum TokenCheckResult: Sendable, Hashable {
    /// `/auth/token` answered 200: the token and client id are good.
    case accepted
    /// Any other HTTP status (Home Assistant answers 400 for a bad token or client id).
    case refused(status: Int)
    /// No HTTP answer (nothing listens, the connection broke, the time ran out).
    case unreachable
}

/// The simulated Lovelace receiver's optional check of a `connect`'s refresh token: the token
/// request a real receiver makes first (`POST <hassUrl>/auth/token`, grant_type refresh_token),
/// sent only to a loopback host, with a time limit. The token is never logged.
enum LovelaceTokenCheck {
    /// The longest a check may take.
    static let timeout: TimeAmount = .seconds(10)

    /// `localhost` or an IPv4 address in 127.0.0.0/8: the only hosts a check may contact.
    static func isLoopback(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" { return true }
        let parts = lower.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(part), value <= 255 else { return false }
        }
        return parts[0] == "127"
    }

    /// The form body of the token request (client_id left out when the sender gave none, as
    /// the real receiver's library does).
    static func formBody(refreshToken: String, clientId: String?) -> String {
        var allowed = CharacterSet()
        allowed.insert(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        var fields = ["grant_type=refresh_token", "refresh_token=" + encode(refreshToken)]
        if let clientId { fields.append("client_id=" + encode(clientId)) }
        return fields.joined(separator: "&")
    }

    /// Where the token request goes: `<hassUrl>/auth/token` (the same string concatenation the
    /// real receiver makes). nil when that is no http(s) URL with a host.
    static func tokenEndpoint(hassUrl: String) -> URLComponents? {
        guard let url = URLComponents(string: hassUrl + "/auth/token"),
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else { return nil }
        return url
    }

    /// Posts the token request on `eventLoop`; the future never fails. A host that is not
    /// loopback is not contacted (`.unreachable`).
    static func check(endpoint: URLComponents, body: String, on eventLoop: any EventLoop) -> EventLoopFuture<TokenCheckResult> {
        guard let host = endpoint.host, isLoopback(host) else { return eventLoop.makeSucceededFuture(.unreachable) }
        let https = endpoint.scheme?.lowercased() == "https"
        let port = endpoint.port ?? (https ? 443 : 80)
        guard (1...65_535).contains(port) else { return eventLoop.makeSucceededFuture(.unreachable) }
        // Never through the resolver: `localhost` is 127.0.0.1 here.
        let address = host.lowercased() == "localhost" ? "127.0.0.1" : host
        var path = endpoint.percentEncodedPath
        if path.isEmpty { path = "/" }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: endpoint.port.map { "\(host):\($0)" } ?? host)
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        headers.add(name: "Content-Length", value: String(body.utf8.count))
        headers.add(name: "Connection", value: "close")
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: headers)
        let tls: NIOSSLContext?
        if https {
            // A loopback test instance has a certificate of its own making: not verified.
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            guard let context = try? NIOSSLContext(configuration: configuration) else {
                return eventLoop.makeSucceededFuture(.unreachable)
            }
            tls = context
        } else {
            tls = nil
        }
        let answered = eventLoop.makePromise(of: Int.self)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls { try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil)) }
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(TokenResponseHandler(head: head, body: body, answered: answered))
                }
            }
        bootstrap.connect(host: address, port: port).whenComplete { result in
            switch result {
            case .success(let channel):
                // Bounded: whatever happens, the check ends within `timeout` of the connection.
                let limit = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
                answered.futureResult.whenComplete { _ in limit.cancel() }
            case .failure(let error):
                answered.fail(error)
            }
        }
        return answered.futureResult.map { status in
            status == 200 ? TokenCheckResult.accepted : .refused(status: status)
        }.recover { _ in .unreachable }
    }
}

/// Sends the token request once the connection is up and reports the answer's status.
private final class TokenResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let head: HTTPRequestHead
    private let body: String
    private let answered: EventLoopPromise<Int>
    private var status: Int?
    private var done = false

    init(head: HTTPRequestHead, body: String, answered: EventLoopPromise<Int>) {
        self.head = head
        self.body = body
        self.answered = answered
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response): status = Int(response.status.code)
        case .body: break
        case .end:
            finish(.success(status ?? 0))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(SimulatorError("the token request's connection closed before an answer")))
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<Int, any Error>) {
        guard !done else { return }
        done = true
        answered.completeWith(result)
    }
}
