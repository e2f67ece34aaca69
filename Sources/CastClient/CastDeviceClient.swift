import CastProtocol
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// The client of one Cast device: owns connect → session → backoff → reconnect, joins a running
/// app instead of relaunching it, and offers the receiver and media requests as futures on the
/// device's loop (`requests`) that complete with the device's answer or a typed `CastError`.
///
/// Call `start()` and `shutdown()`. Events go either to `events` (read it from exactly one task)
/// or, when an `onEvent` sink is given, straight to the sink, on the device's event loop, in
/// order and before the request they answer completes: a consumer that feeds both the events and
/// the completions into one queue sees a request's answering status before its completion.
public final class CastDeviceClient: Sendable {
    public let address: CastDeviceAddress
    public let events: AsyncStream<CastClientEvent>
    /// The connection, confined to `eventLoop`: every access checks it (NIOLoopBoundBox).
    private let box: NIOLoopBoundBox<DeviceConnection>
    private let eventLoop: any EventLoop

    /// - Parameters:
    ///   - isGroup: a speaker group (its multizone status is asked on every connection).
    ///   - eventLoop: the loop this device lives on (pick one from a shared group: many
    ///     devices share a few loops, no thread per device).
    ///   - sslContext: share one among many clients (`makeTLSContext()`); nil makes one.
    ///   - onEvent: called on the device's loop for every event instead of `events`.
    ///   - deviceAuthTrust: the anchors device chains may end at when `configuration.deviceAuth`
    ///     is not `off` (the public Cast roots unless told otherwise).
    ///   - handshakeGate: share one among many clients to bound their TLS handshakes in flight
    ///     (a fleet starting at once); nil: no bound.
    public init(address: CastDeviceAddress, configuration: CastConnectionConfiguration = .init(), isGroup: Bool = false,
                eventLoop: any EventLoop, logger: Logger, sslContext: NIOSSLContext? = nil,
                handshakeGate: HandshakeGate? = nil, deviceAuthTrust: DeviceAuthTrustStore = .castRoots,
                onEvent: (@Sendable (CastClientEvent) -> Void)? = nil) throws {
        let context = try sslContext ?? Self.makeTLSContext()
        let (stream, continuation) = AsyncStream.makeStream(of: CastClientEvent.self)
        self.address = address
        self.events = stream
        let emit: @Sendable (CastClientEvent) -> Void
        if let onEvent {
            continuation.finish()
            emit = onEvent
        } else {
            emit = { continuation.yield($0) }
        }
        self.eventLoop = eventLoop
        self.box = .makeBoxSendingValue(
            DeviceConnection(address: address, configuration: configuration, isGroup: isGroup, eventLoop: eventLoop,
                             sslContext: context, handshakeGate: handshakeGate, deviceAuthTrust: deviceAuthTrust, logger: logger, emit: emit,
                             finishEvents: { continuation.finish() }),
            eventLoop: eventLoop)
    }

    /// The TLS settings of a Cast sender: devices present self-signed certificates, so there is
    /// no verification. One context serves any number of clients.
    public static func makeTLSContext() throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        // How long a close waits for the device's close_notify (NIOSSL's default: 5 s). A
        // connection we give up on (heartbeat timeout, a move to a new address) has a peer that
        // never sends one, and the reconnect waits for the close: on a real network a device that
        // moved came back 5 s late. A device that is there answers within milliseconds.
        tls.shutdownTimeout = .milliseconds(500)
        return try NIOSSLContext(configuration: tls)
    }

    // MARK: - Lifecycle

    /// Starts connecting (returns at once; progress arrives as events).
    public func start() {
        eventLoop.execute { self.box.value.start() }
    }

    /// Closes the virtual connections politely and the socket; pending requests fail with
    /// `shuttingDown`; the event stream finishes. No reconnect afterwards.
    public func shutdown() async {
        _ = try? await close().get()
    }

    /// `shutdown()` as a future: completes when the connection is closed.
    public func close() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { self.box.value.shutdown() }
    }

    /// The device was seen at `address` (mDNS): reconnect now if it moved or while waiting.
    public func update(address: CastDeviceAddress) {
        eventLoop.execute { self.box.value.update(address: address) }
    }

    /// The device turned out to be a speaker group (its `eureka_info` says so): its multizone
    /// status is asked now when connected, and on every connection from now on.
    public func becomeGroup() {
        eventLoop.execute { self.box.value.becomeGroup() }
    }

    /// True once the device answered on the current connection.
    public var isConnected: Bool {
        get async { (try? await eventLoop.submit { self.box.value.isConnected }.get()) ?? false }
    }

    /// What the client knows of the device now, and the app session it joined.
    public var snapshot: (device: DeviceSnapshot, joinedApp: ReceiverApplication?) {
        get async {
            (try? await eventLoop.submit { (self.box.value.session.current, self.box.value.session.joinedApp) }.get())
                ?? (DeviceSnapshot(), nil)
        }
    }

    // MARK: - Requests as futures

    /// The requests as futures on the device's loop. Calling one from any thread hands the
    /// request to the loop at once; the future completes on the loop with the device's answer
    /// or a `CastError` (the statuses it answers with arrive as events first). Await one with
    /// `.get()`.
    public var requests: Requests { Requests(client: self) }

    public struct Requests: Sendable {
        let client: CastDeviceClient

        /// Receiver GET_STATUS, SET_VOLUME: complete when the device answered. The status of the
        /// answer reaches the caller once, as the snapshot it changed (`events`), not here too.
        public func getReceiverStatus() -> EventLoopFuture<Void> { receiver(.getStatus) }
        /// A user's refresh: receiver GET_STATUS, and an app whose transport kept closing the
        /// connection to it (given up after `CastSessionMachine.maximumRejoins`) is joined again.
        public func refreshStatus() -> EventLoopFuture<Void> {
            client.submit {
                client.box.value.session.retryClosedTransports()
                return client.receiverOnLoop(.getStatus)
            }
        }
        public func setVolume(level: Double) -> EventLoopFuture<Void> { receiver(.setVolume(level: level)) }
        public func setMuted(_ muted: Bool) -> EventLoopFuture<Void> { receiver(.setMuted(muted)) }

        /// LAUNCH; completes when the app runs and is joined. Whether an app must be launched
        /// at all is the caller's decision (the bridge's planner decides it against the
        /// snapshot's `joinedApp`): this always launches.
        public func launch(appId: String) -> EventLoopFuture<ReceiverApplication> {
            client.submit { client.launchOnLoop(appId) }
        }

        /// Receiver STOP of `sessionId` (the session the caller saw running).
        public func stopApp(sessionId: String) -> EventLoopFuture<Void> { receiver(.stop(sessionId: sessionId)) }

        /// A media request, exactly as given (its media session id included), to the joined
        /// app; completes with the media status after the reply. Fails with `noApp` when no app
        /// is joined.
        public func media(_ request: MediaRequest) -> EventLoopFuture<MediaStatus?> {
            client.submit { client.mediaOnLoop(request) }
        }

        /// STORE_SESSION of media session `mediaSessionId`: the session state the receiver hands
        /// out for a transfer.
        public func storeSession(mediaSessionId: Int) -> EventLoopFuture<JSONValue> {
            client.submit { client.mediaReplyOnLoop(.storeSession(mediaSessionId: mediaSessionId)) }
                .flatMapThrowing { reply in
                    guard case .sessionState(_, let state)? = try? MediaResponse.parse(reply.payload) else {
                        throw CastError(.unexpectedReply, "the receiver did not answer STORE_SESSION with a session state")
                    }
                    return state
                }
        }

        /// Sends a message to the joined app on `namespace`. With `awaitReply`, completes with
        /// the next message the app sends on that namespace (or `timeout`), else nil once written.
        public func sendAppMessage(namespace: String, payload: CastPayload, awaitReply: Duration? = nil) -> EventLoopFuture<CastPayload?> {
            client.submit { client.appMessageOnLoop(namespace: namespace, payload: payload, awaitReply: awaitReply) }
        }

        private func receiver(_ request: ReceiverRequest) -> EventLoopFuture<Void> {
            client.submit { client.receiverOnLoop(request) }
        }
    }

    // MARK: - On the loop

    private func launchOnLoop(_ appId: String) -> EventLoopFuture<ReceiverApplication> {
        let connection = box.value
        let launch = connection.request(namespace: CastNamespace.receiver, destination: CastEndpoint.receiver) {
            .string(ReceiverRequest.launch(appId: appId).json(requestId: $0))
        }
        return connection.waitForApp(appId, launch: launch)
    }

    /// A receiver request; completes when its answer (a receiver status) was read. The status
    /// itself went into the session (and out as a snapshot) when it was dispatched.
    private func receiverOnLoop(_ request: ReceiverRequest) -> EventLoopFuture<Void> {
        box.value.request(namespace: CastNamespace.receiver, destination: CastEndpoint.receiver) {
            .string(request.json(requestId: $0))
        }.flatMapThrowing { reply in
            // Completed right after the reply was dispatched: its status is already parsed.
            if let parsed = self.box.value.parsedReceiverReply, parsed.payload == reply.payload { return }
            guard case .status? = try? ReceiverResponse.parse(reply.payload) else {
                throw CastError(.unexpectedReply, "the device answered with something other than a receiver status")
            }
        }
    }

    private func mediaOnLoop(_ request: MediaRequest) -> EventLoopFuture<MediaStatus?> {
        mediaReplyOnLoop(request).map { _ in self.box.value.session.media }
    }

    private func mediaReplyOnLoop(_ request: MediaRequest) -> EventLoopFuture<CastMessage> {
        let connection = box.value
        guard let transport = connection.session.joinedApp?.transportId else {
            return eventLoop.makeFailedFuture(CastError(.noApp, "no app is running on the device"))
        }
        return connection.request(namespace: CastNamespace.media, destination: transport) {
            .string(request.json(requestId: $0))
        }
    }

    private func appMessageOnLoop(namespace: String, payload: CastPayload, awaitReply: Duration?) -> EventLoopFuture<CastPayload?> {
        let connection = box.value
        guard let transport = connection.session.joinedApp?.transportId else {
            return eventLoop.makeFailedFuture(CastError(.noApp, "no app is running on the device"))
        }
        do {
            try connection.send(namespace: namespace, destination: transport, payload: payload)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        guard let awaitReply else { return eventLoop.makeSucceededFuture(nil) }
        return connection.nextAppMessage(namespace: namespace, timeout: awaitReply).map(Optional.some)
    }

    // MARK: - Helpers

    /// Runs `body` on the loop; any failure that is not a `CastError` becomes `connectionLost`.
    /// Called on the loop (the consumer shares it with most devices), `body` runs at once, so the
    /// request is written in this turn instead of after the loop's other tasks.
    private func submit<T: Sendable>(_ body: @escaping @Sendable () -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        (eventLoop.inEventLoop ? body() : eventLoop.flatSubmit(body)).flatMapErrorThrowing { error in
            if let error = error as? CastError { throw error }
            throw CastError(.connectionLost, "\(error)")
        }
    }
}
