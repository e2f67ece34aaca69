import CastProtocol
import Logging
import NIOCore
import NIOSSL

/// The TLS handshake of a connection (the fleet's `HandshakeGate`, the handshake deadline) and
/// the log line of a device-authentication result.
extension DeviceConnection {
    /// The gate let this connection in: the TLS handler goes in front of the framing and starts
    /// the handshake at once (the channel is active). A connect abandoned meanwhile gives its place
    /// back.
    func startHandshake(_ channel: any Channel, generation: Int) {
        holdsGate = true
        guard generation == self.generation, let pending = pendingChannel, pending === channel, channel.isActive else {
            releaseGate()
            return
        }
        do {
            let pipeline = channel.pipeline.syncOperations
            let framing = try pipeline.handler(type: ByteToMessageHandler<CastFrameDecoder>.self)
            try pipeline.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: nil), position: .before(framing))
        } catch {
            if closeReason == nil { closeReason = .connectFailed("TLS: \(error)") }
            channel.close(promise: nil)
            return
        }
        handshakeDeadline(generation)
    }

    /// TCP is up and the handshake under way; NIOSSL has no handshake deadline of its own, so a
    /// peer that accepts and then says nothing would hold us here forever.
    func handshakeDeadline(_ generation: Int) {
        let limit = configuration.connectTimeout
        LoopTimers.on(eventLoop).schedule(in: limit) { [self] in
            guard generation == self.generation, self.channel == nil, let stalled = pendingChannel else { return }
            if closeReason == nil { closeReason = .connectFailed("TLS handshake timed out after \(limit.seconds) s") }
            stalled.close(promise: nil)
        }
    }

    /// Gives back this connection's place in `handshakeGate`, if it holds one.
    func releaseGate() {
        guard holdsGate else { return }
        holdsGate = false
        handshakeGate?.leave()
    }

    /// One line when the result changes (debug when it repeats, as a refused device retries).
    func logAuthentication(_ result: DeviceAuthResult, admitted: Bool) {
        var metadata: Logger.Metadata = ["cast.address": "\(address)"]
        if let name = result.certificate?.commonName { metadata["cast.certificate"] = "\(name)" }
        if let sha = result.certificate?.sha256 { metadata["cast.certificate_sha256"] = "\(sha.prefix(16))" }
        defer { lastAuthResult = result }
        guard result != lastAuthResult else {
            logger.debug("device authentication unchanged", metadata: metadata)
            return
        }
        guard let failure = result.failure else {
            logger.info("device authenticated", metadata: metadata)
            return
        }
        metadata["cast.auth_error"] = "\(failure.rawValue)"
        if admitted {
            logger.warning("device authentication failed (\(failure)); used anyway (device_auth: report)", metadata: metadata)
        } else {
            logger.warning("device authentication failed (\(failure)); kept offline (device_auth: require)", metadata: metadata)
        }
    }
}
