import CastProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import StageTrace

/// Host and port of a Cast device.
public struct CastDeviceAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int = 8009) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The connection to one device across reconnects: it runs two pure machines, the connection
/// (`CastConnectionStateMachine`: connect, heartbeat, requests, backoff) and the session
/// (`CastSessionMachine`: receiver, joined app, media, multizone), and is the only place that
/// does I/O for the device. It is not `Sendable`: it lives on `eventLoop` (the channel is
/// bootstrapped on the same loop), `CastDeviceClient` holds it in a `NIOLoopBoundBox` (every
/// access checks the loop, in release builds too), and its own callbacks are scheduled through
/// `eventLoop.assumeIsolated()`, which the compiler checks.
final class DeviceConnection {
    typealias Machine = CastConnectionStateMachine<ContinuousClock.Instant>

    let eventLoop: any EventLoop
    let logger: Logger
    let sslContext: NIOSSLContext
    /// Bounds the TLS handshakes in flight across the fleet (nil: no bound).
    let handshakeGate: HandshakeGate?
    /// This connection holds a place of `handshakeGate` (its handshake is under way).
    var holdsGate = false
    private let deviceAuthTrust: DeviceAuthTrustStore
    /// The last device-auth result, so that a repeated one is not logged again.
    var lastAuthResult: DeviceAuthResult?
    /// Where events go, called on the loop in the order they happen (before the request they
    /// answer completes).
    private let emit: @Sendable (CastClientEvent) -> Void
    private let finishEvents: @Sendable () -> Void
    let clock = ContinuousClock()

    private(set) var address: CastDeviceAddress
    var machine: Machine
    var session: CastSessionMachine
    var channel: (any Channel)?
    /// The channel of a connect whose TLS handshake has not finished yet.
    var pendingChannel: (any Channel)?
    var generation = 0
    var closeReason: CastDisconnectReason?
    /// When the device last sent anything on a channel the peer closed (reset, FIN), read
    /// before the machine leaves the connection: its `disconnected` event comes after that.
    private var lastHeardBeforeClose: ContinuousClock.Instant?
    private var reconnectImmediately = false
    /// The machine's timer and the reconnect timer run on the loop's `LoopTimers`, which cancels
    /// nothing: a callback whose token is no longer the current one is ignored.
    private var timerToken: UInt64 = 0
    private var reconnectToken: UInt64 = 0
    private var promises: [Int: EventLoopPromise<CastMessage>] = [:]
    var replyWaiters: [(id: Int, namespace: String, promise: EventLoopPromise<CastPayload>)] = []
    var appWaiters: [(id: Int, appId: String, promise: EventLoopPromise<ReceiverApplication>)] = []
    var nextWaiterID = 0
    /// Failed connects since the device last answered: the first is logged at info, the rest at
    /// debug (one line per event that matters, not one per retry).
    private var failedConnects = 0
    /// The receiver status read from the message being handled, so that the request it answers
    /// completes without parsing it a second time; only while that message's actions run.
    var parsedReceiverReply: (payload: CastPayload, status: ReceiverStatus)?

    init(address: CastDeviceAddress, configuration: CastConnectionConfiguration, isGroup: Bool, eventLoop: any EventLoop,
         sslContext: NIOSSLContext, handshakeGate: HandshakeGate? = nil, deviceAuthTrust: DeviceAuthTrustStore = .castRoots,
         logger: Logger, emit: @escaping @Sendable (CastClientEvent) -> Void, finishEvents: @escaping @Sendable () -> Void) {
        self.address = address
        self.machine = Machine(configuration: configuration)
        self.session = CastSessionMachine(isGroup: isGroup)
        self.eventLoop = eventLoop
        self.sslContext = sslContext
        self.handshakeGate = handshakeGate
        self.deviceAuthTrust = deviceAuthTrust
        self.logger = logger
        self.emit = emit
        self.finishEvents = finishEvents
    }

    /// What one read of a Cast connection's socket takes at most (see `connect`).
    static let receiveBufferBytes = 2048

    var isConnected: Bool { machine.isConnected }
    var configuration: CastConnectionConfiguration { machine.configuration }

    // MARK: - Lifecycle

    func start() {
        eventLoop.assertInEventLoop()
        run(machine.start())
    }

    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        reconnectToken &+= 1
        let channel = self.channel
        run(machine.shutdown())
        failWaiters(CastError(.shuttingDown, "the client is shutting down"))
        finishEvents()
        return channel?.closeFuture ?? eventLoop.makeSucceededVoidFuture()
    }

    /// The device is at a new address (or was announced again): reconnect now.
    func update(address newAddress: CastDeviceAddress) {
        eventLoop.assertInEventLoop()
        let moved = newAddress != address
        address = newAddress
        if machine.isOpen {
            guard moved else { return }
            logger.info("device moved, reconnecting", metadata: ["cast.address": "\(newAddress)"])
            reconnectImmediately = true
            run(machine.dropConnection(.networkError("device moved to \(newAddress)")))
        } else if machine.isClosing {
            reconnectImmediately = true
        } else {
            reconnectToken &+= 1
            run(machine.reconnectNow())
        }
    }

    // MARK: - Requests

    /// Sends a request and completes with the device's answer (or a typed error).
    func request(namespace: String, destination: String, timeout: Duration? = nil,
                 payload: (Int) -> CastPayload) -> EventLoopFuture<CastMessage> {
        eventLoop.assertInEventLoop()
        do {
            let (id, actions) = try machine.sendRequest(namespace: namespace, destination: destination,
                                                        timeout: timeout, now: clock.now, payload: payload)
            let promise = eventLoop.makePromise(of: CastMessage.self)
            promises[id] = promise
            run(actions)
            return promise.futureResult.flatMapThrowing { reply in
                if let error = CastError.fromReply(reply) { throw error }
                return reply
            }
        } catch {
            return eventLoop.makeFailedFuture(CastError(error))
        }
    }

    /// Sends a message that expects no answer.
    func send(namespace: String, destination: String, payload: CastPayload) throws {
        eventLoop.assertInEventLoop()
        do {
            run(try machine.send(namespace: namespace, destination: destination, payload: payload))
        } catch {
            throw CastError(error)
        }
    }

    // MARK: - Channel callbacks (from CastChannelHandler, on the loop)

    func tlsReady(channel: any Channel, generation: Int) {
        guard generation == self.generation else { return }
        // Under `require` the challenge's round trip is part of the connect (the device signs
        // it: a fleet's worth at once is a storm of its own); the place is given back with its
        // result. Under `report` the check runs beside the session and holds nothing up.
        if configuration.deviceAuth != .require { releaseGate() }
        self.channel = channel
        self.pendingChannel = nil
        run(machine.channelActive(now: clock.now, auth: authContext(channel)))
    }

    /// This connection's device-auth inputs: a fresh random nonce, the device's TLS certificate,
    /// the wall clock. Nil when the check is off.
    private func authContext(_ channel: any Channel) -> DeviceAuthContext? {
        guard configuration.deviceAuth != .off else { return nil }
        var generator = SystemRandomNumberGenerator()
        let nonce = (0..<DeviceAuthMessages.nonceBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let tls = try? channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
        let der = (try? tls?.peerCertificate?.toDERBytes()) ?? nil
        return DeviceAuthContext(nonce: nonce, tlsCertificateDER: der, validationTime: Date(), trust: deviceAuthTrust)
    }

    func received(_ message: CastMessage, generation: Int) {
        guard generation == self.generation else { return }
        CastTraffic.shared.received(message)
        TrafficLog.log(logger, direction: "in", message)
        run(machine.messageReceived(message, now: clock.now))
        parsedReceiverReply = nil
    }

    func failed(_ error: any Error, generation: Int) {
        guard generation == self.generation, closeReason == nil else { return }
        if let framing = error as? CastFramingError {
            closeReason = .protocolError(framing.description)
        } else if let tls = error as? NIOSSLError {
            closeReason = .networkError("TLS: \(tls)")
        } else {
            closeReason = .networkError("\(error)")
        }
    }

    func closed(generation: Int) {
        guard generation == self.generation else { return }
        let reason = closeReason ?? .closedByPeer
        closeReason = nil
        channel = nil
        pendingChannel = nil
        releaseGate()
        timerToken &+= 1
        lastHeardBeforeClose = machine.lastHeard
        run(machine.channelClosed(reason, now: clock.now, jitter: Double.random(in: 0...1)))
        firstAttemptFailed(reason)
        lastHeardBeforeClose = nil
        if reconnectImmediately {
            reconnectImmediately = false
            reconnectToken &+= 1
            run(machine.reconnectNow())
        }
    }

    /// A connect ended without the device ever having answered in this run (refused,
    /// unreachable, TLS failed or timed out): its snapshot goes from `unknown` to `offline`, once,
    /// so that whoever waits for every device's first attempt (the bridge's start-up hold) knows
    /// this one has had it. A device that answered before reports its end as `disconnected`.
    private func firstAttemptFailed(_ reason: CastDisconnectReason) {
        guard case .unknown = session.current.link else { return }
        run(session.disconnected(reason, silentSince: nil))
    }

    // MARK: - Actions

    func run(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .connect:
                connect()
            case .write(let messages):
                guard let channel else { continue }
                for message in messages {
                    CastTraffic.shared.sent(message)
                    TrafficLog.log(logger, direction: "out", message)
                    channel.write(message, promise: nil)
                }
                StageTrace.mark(.castWritten)
                channel.flush()
                StageTrace.mark(.castFlushed)
            case .close(let reason):
                if closeReason == nil { closeReason = reason }
                // A refused device was logged with its result (once per change).
                if reason != .shutdown, !reason.isUnauthenticated {
                    logger.info("closing connection", metadata: ["cast.reason": "\(reason)"])
                }
                if let channel {
                    channel.close(promise: nil)
                } else {
                    // A connect in flight: ignore its result, and close its channel if TCP is up.
                    releaseGate()
                    generation += 1
                    pendingChannel?.close(promise: nil)
                    pendingChannel = nil
                }
            case .scheduleTimer(let deadline):
                // Coalesced with the other connections' deadlines on this loop, and run one pass
                // of the selector after it is due (LoopTimers): silence is judged on what
                // arrived, not on what the loop had read.
                timerToken &+= 1
                let token = timerToken
                LoopTimers.on(eventLoop).schedule(in: clock.now.duration(to: deadline)) { [self] in
                    guard token == timerToken else { return }
                    run(machine.timerFired(now: clock.now))
                }
            case .scheduleReconnect(_, let delay):
                reconnectToken &+= 1
                let token = reconnectToken
                logger.debug("reconnecting later", metadata: ["cast.delay": "\(delay.seconds)"])
                LoopTimers.on(eventLoop).schedule(in: delay) { [self] in
                    guard token == reconnectToken else { return }
                    run(machine.timerFired(now: clock.now))
                }
            case .completeRequest(let id, let message):
                promises.removeValue(forKey: id)?.succeed(message)
            case .failRequests(let ids, let failure):
                for id in ids { promises.removeValue(forKey: id)?.fail(CastError(failure)) }
            case .emit(let event):
                handle(event)
            }
        }
    }

    private func connect() {
        releaseGate()
        generation += 1
        let generation = self.generation
        let address = self.address
        // Without a gate the TLS handler is there from the start; with one it is added (and the
        // handshake starts) when the gate lets this connection in (`startHandshake`).
        let tls = handshakeGate == nil ? sslContext : nil
        // The initializer runs on the channel's loop, which is this connection's loop.
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        ClientBootstrap(group: eventLoop)
            .connectTimeout(TimeAmount.nanoseconds(configuration.connectTimeout.clampedNanoseconds))
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            // The channel keeps its receive buffer between reads at the largest size it ever
            // grew to (the handshake's and device auth's certificate records grew NIO's adaptive
            // default to 4–8 KiB); an idle device sends ~100-byte PINGs. Reads are 2 KiB, a larger
            // record takes a few reads of one readable event.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.receiveBufferBytes))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if StageTrace.enabled { try channel.pipeline.syncOperations.addHandler(StageTraceTap()) }
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil)) }
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(CastFrameDecoder()),
                        MessageToByteHandler(CastFrameEncoder()),
                        CastChannelHandler(connection: bound.value, generation: generation),
                    ])
                }
            }
            .connect(host: address.host, port: address.port)
            .assumeIsolated()
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    guard generation == self.generation else {
                        channel.close(promise: nil)
                        return
                    }
                    pendingChannel = channel
                    if let gate = handshakeGate {
                        let bound = NIOLoopBound(self, eventLoop: eventLoop)
                        gate.enter(on: eventLoop) { bound.value.startHandshake(channel, generation: generation) }
                    } else {
                        handshakeDeadline(generation)
                    }
                case .failure(let error):
                    guard generation == self.generation else { return }
                    failedConnects += 1
                    if failedConnects == 1 {
                        logger.info("cannot connect; retrying with backoff",
                                    metadata: ["cast.address": "\(address)", "cast.error": "\(error)"])
                    } else {
                        logger.debug("connect failed", metadata: ["cast.error": "\(error)", "cast.attempt": "\(failedConnects)"])
                    }
                    run(machine.connectFailed(.connectFailed("\(error)"), now: clock.now, jitter: Double.random(in: 0...1)))
                    firstAttemptFailed(.connectFailed("\(error)"))
                }
            }
    }

    // MARK: - Events of the connection

    private func handle(_ event: CastConnectionEvent) {
        switch event {
        case .connected:
            failedConnects = 0
            logger.info("connected", metadata: ["cast.address": "\(address)"])
            run(session.connectionAnswered())
        case .disconnected(let reason):
            logger.info("disconnected", metadata: ["cast.reason": "\(reason)"])
            failWaiters(CastError(.connectionLost, "the connection to the device was lost"))
            // When the device last sent anything: a dead link is found only after the heartbeat
            // timeout (or by the reset a PING meets on a half-open connection), and the downtime a
            // user sees starts at the silence, not at its discovery.
            let silentSince = (machine.lastHeard ?? lastHeardBeforeClose)
                .map { Date().addingTimeInterval(-$0.duration(to: clock.now).seconds) }
            run(session.disconnected(reason, silentSince: silentSince))
        case .virtualConnectionClosed(let endpoint):
            run(session.transportClosed(endpoint))
        case .message(let message):
            dispatch(message)
        case .authentication(let result, let admitted):
            releaseGate()
            logAuthentication(result, admitted: admitted)
            run(session.authenticated(result, admitted: admitted))
        }
    }

    func emitEvent(_ event: CastClientEvent) { emit(event) }
}
