import CastProtocol
import Foundation

// Device authentication (`urn:x-cast:com.google.cast.tp.deviceauth`): the device answers an
// AuthChallenge with its certificate chain and a signature over the nonce and its TLS
// certificate, or misbehaves as its `DeviceAuthBehaviour` says.
extension SimulatedDevice {
    /// How the device answers AuthChallenges from now on.
    public func setDeviceAuthBehaviour(_ behaviour: DeviceAuthBehaviour) async {
        // The authority's RSA keys are made here, off the device's loop, when it is the first
        // use (made on the loop, they would hold up the answer past a sender's timeout).
        _ = behaviour == .unknownRoot ? DeviceAuthority.untrusted.root : DeviceAuthority.shared.root
        try? await eventLoop.submit { self.loop.value.authBehaviour = behaviour }.get()
    }

    /// A new device certificate (same name, new serial and validity) from the next challenge on,
    /// as after a reissue: the bridge sees another certificate.
    public func renewDeviceCertificate() async {
        try? await eventLoop.submit { self.loop.value.authCredentials.removeAll() }.get()
    }

    /// The device certificate's subject common name (`<model> <first 12 of the id>`).
    public var deviceCertificateCommonName: String {
        "\(configuration.model) \(configuration.id.prefix(12).uppercased())"
    }

    func answerChallenge(_ message: CastMessage, on connection: SenderConnection) {
        guard case .binary(let bytes) = message.payload, let nonce = DeviceAuthMessages.challengeNonce(bytes) else { return }
        let behaviour = loop.value.authBehaviour
        let previous = loop.value.lastAuthNonce
        loop.value.lastAuthNonce = nonce
        let payload: [UInt8]
        switch behaviour {
        case .noAnswer:
            return
        case .authError:
            payload = DeviceAuthMessages.errorPayload(code: 2)
        case .correct, .unknownRoot, .expiredCertificate:
            guard let credentials = credentials(behaviour) else { return }
            payload = credentials.response(echoing: nonce, signing: nonce, tlsCertificateDER: tlsCertificateDER)
        case .badSignature:
            guard let credentials = credentials(.correct) else { return }
            payload = credentials.response(echoing: nonce, signing: nonce.reversed() + [0], tlsCertificateDER: tlsCertificateDER)
        case .replayedNonce:
            // What this device said to an earlier challenge, replayed (a made-up old nonce when
            // there was none).
            guard let credentials = credentials(.correct) else { return }
            let old = previous.flatMap { $0 == nonce ? nil : $0 } ?? nonce.map { $0 ^ 0x5A }
            payload = credentials.response(echoing: old, signing: old, tlsCertificateDER: tlsCertificateDER)
        }
        later(replyDelay) {
            self.send(CastMessage(sourceID: message.destinationID, destinationID: message.sourceID,
                                  namespace: CastNamespace.deviceAuth, payload: .binary(payload)), on: connection)
        }
    }

    /// The device's credentials of a kind: the test authority's (`correct`, `expired`), or the
    /// untrusted one's (`unknownRoot`).
    private func credentials(_ behaviour: DeviceAuthBehaviour) -> DeviceCredentials? {
        if let made = loop.value.authCredentials[behaviour] { return made }
        let authority = behaviour == .unknownRoot ? DeviceAuthority.untrusted : DeviceAuthority.shared
        let made = try? authority.deviceCredentials(
            commonName: deviceCertificateCommonName, organization: configuration.manufacturer,
            keyIndex: configuration.id.utf8.reduce(0) { $0 &+ Int($1) }, expired: behaviour == .expiredCertificate)
        loop.value.authCredentials[behaviour] = made
        return made
    }
}
