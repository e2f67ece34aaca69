import CastProtocol
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// The client of one Cast device: owns connect → session → backoff → reconnect, joins a running
/// app instead of relaunching it, and offers the receiver and media commands as async calls that
/// complete with the device's answer or a typed `CastError`, and the same requests as futures on
/// the device's loop (`requests`) for callers that complete by callback.
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
    ///   - eventLoop: the loop this device lives on (pick one from a shared group: many
    ///     devices share a few loops, no thread per device).
    ///   - sslContext: share one among many clients (`makeTLSContext()`); nil makes one.
    ///   - onEvent: called on the device's loop for every event instead of `events`.
    public init(address: CastDeviceAddress, configuration: CastConnectionConfiguration = .init(),
                eventLoop: any EventLoop, logger: Logger, sslContext: NIOSSLContext? = nil,
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
            DeviceConnection(address: address, configuration: configuration, eventLoop: eventLoop,
                             sslContext: context, logger: logger, emit: emit, finishEvents: { continuation.finish() }),
            eventLoop: eventLoop)
    }

    /// The TLS settings of a Cast sender: devices present self-signed certificates, so there is
    /// no verification (the SHA-256 fingerprint is recorded instead). One context serves any
    /// number of clients.
    public static func makeTLSContext() throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return try NIOSSLContext(configuration: tls)
    }

    // MARK: - Lifecycle

    /// Starts connecting (returns at once; progress arrives on `events`).
    public func start() {
        eventLoop.execute { self.box.value.start() }
    }

    /// Closes the virtual connections politely and the socket; pending requests fail with
    /// `shuttingDown`; the event stream finishes. No reconnect afterwards.
    public func shutdown() async {
        let closed = eventLoop.flatSubmit { self.box.value.shutdown() }
        _ = try? await closed.get()
    }

    /// The device was seen at `address` (mDNS): reconnect now if it moved or while waiting.
    public func update(address: CastDeviceAddress) {
        eventLoop.execute { self.box.value.update(address: address) }
    }

    /// SHA-256 fingerprint of the device's TLS certificate (`AB:CD:…`) on the last connection.
    public var certificateFingerprint: String? {
        get async { try? await eventLoop.submit { self.box.value.fingerprint }.get() }
    }

    /// True once the device answered on the current connection.
    public var isConnected: Bool {
        get async { (try? await eventLoop.submit { self.box.value.isConnected }.get()) ?? false }
    }

    /// The last receiver status, the joined app and its merged media status.
    public var snapshot: (receiver: ReceiverStatus?, app: ReceiverApplication?, media: MediaStatus?) {
        get async {
            (try? await eventLoop.submit {
                (self.box.value.receiverStatus, self.box.value.joinedApp, self.box.value.mediaStatus)
            }.get()) ?? (nil, nil, nil)
        }
    }

    // MARK: - Receiver namespace (async; each is the request of `requests`, awaited)

    @discardableResult
    public func getReceiverStatus() async throws -> ReceiverStatus { try await requests.getReceiverStatus().get() }

    /// LAUNCH; completes with the status that shows the app running (and joined).
    @discardableResult
    public func launch(appId: String) async throws -> ReceiverApplication { try await requests.launch(appId: appId).get() }

    /// Joins `appId` if it already runs, otherwise launches it; never relaunches a running app.
    /// The check and the launch happen in one step on the device's loop.
    @discardableResult
    public func ensureApp(_ appId: String) async throws -> ReceiverApplication { try await requests.ensureApp(appId).get() }

    /// STOP of the running session (`sessionId` nil = the joined app's session).
    @discardableResult
    public func stopApp(sessionId: String? = nil) async throws -> ReceiverStatus {
        try await requests.stopApp(sessionId: sessionId).get()
    }

    @discardableResult
    public func setVolume(level: Double) async throws -> ReceiverStatus { try await requests.setVolume(level: level).get() }

    @discardableResult
    public func setMuted(_ muted: Bool) async throws -> ReceiverStatus { try await requests.setMuted(muted).get() }

    // MARK: - Media namespace (async)

    /// Media GET_STATUS on the joined app; nil when it has no media session.
    @discardableResult
    public func getMediaStatus() async throws -> MediaStatus? {
        try await requests.media(needsSession: false) { _ in .getStatus(mediaSessionId: nil) }.get()
    }

    /// LOAD on the joined app (use `ensureApp` first). Completes when the receiver reports the
    /// loaded media, or with `loadFailed` / `loadCancelled`.
    @discardableResult
    public func load(_ request: LoadRequest) async throws -> MediaStatus? { try await sendMediaRequest(.load(request)) }

    @discardableResult
    public func queueLoad(_ request: QueueLoadRequest) async throws -> MediaStatus? {
        try await sendMediaRequest(.queueLoad(request))
    }

    @discardableResult
    public func play() async throws -> MediaStatus? { try await mediaRequest { .play(mediaSessionId: $0) } }

    @discardableResult
    public func pause() async throws -> MediaStatus? { try await mediaRequest { .pause(mediaSessionId: $0) } }

    /// Media STOP: ends the media session (not the app).
    @discardableResult
    public func stopMedia() async throws -> MediaStatus? { try await mediaRequest { .stop(mediaSessionId: $0) } }

    /// SEEK to an absolute position; `resume` `PLAYBACK_START` or `PLAYBACK_PAUSE`.
    @discardableResult
    public func seek(to position: Double, resume: String? = nil) async throws -> MediaStatus? {
        try await mediaRequest { .seek(mediaSessionId: $0, currentTime: position, relativeTime: nil, resumeState: resume) }
    }

    /// SEEK relative to the current position.
    @discardableResult
    public func seek(by offset: Double, resume: String? = nil) async throws -> MediaStatus? {
        try await mediaRequest { .seek(mediaSessionId: $0, currentTime: nil, relativeTime: offset, resumeState: resume) }
    }

    @discardableResult
    public func setPlaybackRate(_ rate: Double) async throws -> MediaStatus? {
        try await mediaRequest { .setPlaybackRate(mediaSessionId: $0, rate: rate) }
    }

    @discardableResult
    public func queueNext() async throws -> MediaStatus? { try await mediaRequest { .queueNext(mediaSessionId: $0) } }

    @discardableResult
    public func queuePrev() async throws -> MediaStatus? { try await mediaRequest { .queuePrev(mediaSessionId: $0) } }

    @discardableResult
    public func skipAd() async throws -> MediaStatus? { try await mediaRequest { .skipAd(mediaSessionId: $0) } }

    /// STORE_SESSION: the session state the receiver hands out for a transfer.
    public func storeSession() async throws -> JSONValue { try await requests.storeSession().get() }

    /// RESUME_SESSION with a state from `storeSession` (on the joined app of this device).
    @discardableResult
    public func resumeSession(_ state: JSONValue) async throws -> MediaStatus? {
        try await sendMediaRequest(.resumeSession(sessionState: state))
    }

    /// Sends a media request as given (with the media session id it names) to the joined app.
    @discardableResult
    public func sendMediaRequest(_ request: MediaRequest) async throws -> MediaStatus? {
        try await requests.media(needsSession: false) { _ in request }.get()
    }

    private func mediaRequest(_ build: @escaping @Sendable (Int) -> MediaRequest) async throws -> MediaStatus? {
        try await requests.media(needsSession: true, build).get()
    }

    // MARK: - Custom namespaces (async)

    /// Sends a message to the joined app on `namespace`. With `awaitReply`, completes with the
    /// next message the app sends on that namespace (or `timeout`).
    @discardableResult
    public func sendAppMessage(namespace: String, payload: CastPayload, awaitReply: Duration? = nil) async throws -> CastPayload? {
        try await requests.sendAppMessage(namespace: namespace, payload: payload, awaitReply: awaitReply).get()
    }

    // MARK: - Requests as futures

    /// The requests as futures on the device's loop. Calling one from any thread hands the
    /// request to the loop at once; the future completes on the loop with the device's answer
    /// or a `CastError`. For callers that complete by callback instead of awaiting (the
    /// daemon's consumer starts an operation without a task and goes on).
    public var requests: Requests { Requests(client: self) }

    public struct Requests: Sendable {
        let client: CastDeviceClient

        public func getReceiverStatus() -> EventLoopFuture<ReceiverStatus> { receiver(.getStatus) }
        public func setVolume(level: Double) -> EventLoopFuture<ReceiverStatus> { receiver(.setVolume(level: level)) }
        public func setMuted(_ muted: Bool) -> EventLoopFuture<ReceiverStatus> { receiver(.setMuted(muted)) }

        public func launch(appId: String) -> EventLoopFuture<ReceiverApplication> {
            client.submit { client.launchOnLoop(appId) }
        }

        public func ensureApp(_ appId: String) -> EventLoopFuture<ReceiverApplication> {
            client.submit {
                if let app = client.box.value.joinedApp, app.appId == appId { return client.eventLoop.makeSucceededFuture(app) }
                return client.launchOnLoop(appId)
            }
        }

        /// STOP of `sessionId`, or of the joined app's session.
        public func stopApp(sessionId: String? = nil) -> EventLoopFuture<ReceiverStatus> {
            client.submit {
                guard let id = sessionId ?? client.box.value.joinedApp?.sessionId else {
                    return client.eventLoop.makeFailedFuture(CastError(.noApp, "no app is running"))
                }
                return client.receiverOnLoop(.stop(sessionId: id))
            }
        }

        /// Media GET_STATUS on the joined app; when no app is joined, nothing to ask: nil at
        /// once (checked and sent in one step on the loop).
        public func mediaStatusIfJoined() -> EventLoopFuture<MediaStatus?> {
            client.submit {
                guard client.box.value.joinedApp != nil else { return client.eventLoop.makeSucceededFuture(nil) }
                return client.mediaReplyOnLoop(needsSession: false) { _ in .getStatus(mediaSessionId: nil) }
                    .map { _ in client.box.value.mediaStatus }
            }
        }

        /// A media request to the joined app, built with the current media session id
        /// (`needsSession`: fail with `noMediaSession` when there is none); completes with the
        /// merged media status after the reply.
        public func media(needsSession: Bool, _ build: @escaping @Sendable (Int) -> MediaRequest) -> EventLoopFuture<MediaStatus?> {
            client.submit { client.mediaReplyOnLoop(needsSession: needsSession, build) }
                .map { _ in client.box.value.mediaStatus }
        }

        /// STORE_SESSION: the session state the receiver hands out for a transfer.
        public func storeSession() -> EventLoopFuture<JSONValue> {
            client.submit { client.mediaReplyOnLoop(needsSession: true) { .storeSession(mediaSessionId: $0) } }
                .flatMapThrowing { reply in
                    guard case .sessionState(_, let state)? = try? MediaResponse.parse(reply.payload) else {
                        throw CastError(.unexpectedReply, "the receiver did not answer STORE_SESSION with a session state")
                    }
                    return state
                }
        }

        public func sendAppMessage(namespace: String, payload: CastPayload, awaitReply: Duration? = nil) -> EventLoopFuture<CastPayload?> {
            client.submit { client.appMessageOnLoop(namespace: namespace, payload: payload, awaitReply: awaitReply) }
        }

        private func receiver(_ request: ReceiverRequest) -> EventLoopFuture<ReceiverStatus> {
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

    private func receiverOnLoop(_ request: ReceiverRequest) -> EventLoopFuture<ReceiverStatus> {
        box.value.request(namespace: CastNamespace.receiver, destination: CastEndpoint.receiver) {
            .string(request.json(requestId: $0))
        }.flatMapThrowing { reply in
            // Completed right after the reply was dispatched: its status is already parsed.
            if let parsed = self.box.value.parsedReceiverReply, parsed.payload == reply.payload { return parsed.status }
            guard case .status(_, let status)? = try? ReceiverResponse.parse(reply.payload) else {
                throw CastError(.unexpectedReply, "the device answered with something other than a receiver status")
            }
            return status
        }
    }

    private func mediaReplyOnLoop(needsSession: Bool, _ build: (Int) -> MediaRequest) -> EventLoopFuture<CastMessage> {
        let connection = box.value
        guard let app = connection.joinedApp, let transport = app.transportId else {
            return eventLoop.makeFailedFuture(CastError(.noApp, "no app is running on the device"))
        }
        let session = connection.mediaStatus?.mediaSessionId
        if needsSession && session == nil {
            return eventLoop.makeFailedFuture(CastError(.noMediaSession, "there is no media session to control"))
        }
        let request = build(session ?? 0)
        // Only requests that carry media or state can approach 64 KiB; the rest are not
        // encoded an extra time to find out.
        switch request {
        case .load, .queueLoad, .resumeSession:
            let message = CastMessage(sourceID: connection.configuration.senderID, destinationID: transport,
                                      namespace: CastNamespace.media, payload: .string(request.json(requestId: 0)))
            if let error = Self.sizeError(message) { return eventLoop.makeFailedFuture(error) }
        default:
            break
        }
        return connection.request(namespace: CastNamespace.media, destination: transport) {
            .string(request.json(requestId: $0))
        }
    }

    private func appMessageOnLoop(namespace: String, payload: CastPayload, awaitReply: Duration?) -> EventLoopFuture<CastPayload?> {
        let connection = box.value
        guard let app = connection.joinedApp, let transport = app.transportId else {
            return eventLoop.makeFailedFuture(CastError(.noApp, "no app is running on the device"))
        }
        let message = CastMessage(sourceID: connection.configuration.senderID, destinationID: transport,
                                  namespace: namespace, payload: payload)
        if let error = Self.sizeError(message) { return eventLoop.makeFailedFuture(error) }
        let waiter = awaitReply.map { connection.nextAppMessage(namespace: namespace, timeout: $0) }
        do {
            try connection.send(namespace: namespace, destination: transport, payload: payload)
        } catch {
            waiter?.whenFailure { _ in }
            return eventLoop.makeFailedFuture(error)
        }
        return waiter.map { $0.map(Optional.some) } ?? eventLoop.makeSucceededFuture(nil)
    }

    // MARK: - Helpers

    private static func sizeError(_ message: CastMessage) -> CastError? {
        // An upper bound first (each field: tag + at most 3 length bytes + its bytes), so the
        // usual small message is not serialized twice; only one near the limit is measured.
        let payloadBytes: Int
        switch message.payload {
        case .string(let text): payloadBytes = text.utf8.count
        case .binary(let bytes): payloadBytes = bytes.count
        }
        let bound = payloadBytes + message.sourceID.utf8.count + message.destinationID.utf8.count
            + message.namespace.utf8.count + 32
        guard bound + 16 > CastFraming.maxBodySize else { return nil }
        let size = (try? message.serializedBytes().count) ?? Int.max
        guard size + 16 > CastFraming.maxBodySize else { return nil }
        return CastError(.payloadTooLarge, "the message would be \(size) bytes; Cast messages are limited to 64 KiB")
    }

    /// Runs `body` on the loop; any failure that is not a `CastError` becomes `connectionLost`.
    private func submit<T: Sendable>(_ body: @escaping @Sendable () -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        eventLoop.flatSubmit(body).flatMapErrorThrowing { error in
            if let error = error as? CastError { throw error }
            throw CastError(.connectionLost, "\(error)")
        }
    }
}
