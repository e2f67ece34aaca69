import Foundation

/// How the bridge treats the device authentication of a Cast device
/// (`urn:x-cast:com.google.cast.tp.deviceauth`, docs/security.md).
public enum DeviceAuthMode: String, Sendable, Hashable, CaseIterable {
    /// No challenge is sent; `info.authenticated` is null.
    case off
    /// The challenge runs on every connection; the device is used whatever the result, and the
    /// result is published.
    case report
    /// A device that fails the check is not used: it stays offline (`unauthenticated`) and is
    /// tried again with the reconnect backoff.
    case require
}

/// Why a device failed the check. The raw values are the MQTT contract's `info.auth_error`.
public enum DeviceAuthFailure: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Nothing came back on the device-auth namespace within the request timeout.
    case noAnswer = "no_answer"
    /// The device answered with an AuthError (it cannot or will not authenticate).
    case authError = "auth_error"
    /// The answer did not echo this connection's nonce (a replayed or made-up answer).
    case nonceMismatch = "nonce_mismatch"
    /// The certificates do not chain up to a trusted Cast root (or are not a device's chain).
    case untrustedChain = "untrusted_chain"
    /// A certificate of the chain is outside its validity period.
    case expired
    /// The signature over the nonce and the TLS certificate does not verify.
    case badSignature = "bad_signature"
    /// The connection's TLS certificate is missing, not yet valid, expired or valid for more than
    /// four days from now.
    case tlsCertificate = "tls_certificate"
    /// The answer is not a well-formed DeviceAuthMessage within the size limits (published as
    /// `auth_error`: `contractWord`).
    case malformed

    /// The word of the MQTT contract's list (mqtt-api.md §11) for `info.auth_error` and the
    /// `auth_failed` event: a malformed answer is the device's error too (`auth_error`); the log
    /// line keeps the finer reason.
    public var contractWord: String { self == .malformed ? Self.authError.rawValue : rawValue }

    public var description: String {
        switch self {
        case .noAnswer: return "no answer to the authentication challenge"
        case .authError: return "the device answered with an authentication error"
        case .nonceMismatch: return "the answer does not carry this connection's nonce"
        case .untrustedChain: return "the device certificate does not chain to a trusted Cast root"
        case .expired: return "a certificate of the device chain has expired or is not valid yet"
        case .badSignature: return "the signature does not verify"
        case .tlsCertificate: return "the TLS certificate is not valid now or is valid for too long"
        case .malformed: return "the answer is malformed"
        }
    }
}

/// What the bridge shows of a device certificate: its subject's common name and organization,
/// and the SHA-256 of its DER (lower-case hex), which identifies it across connections.
public struct DeviceCertificateSummary: Sendable, Hashable {
    public var commonName: String?
    public var organization: String?
    public var sha256: String

    public init(commonName: String?, organization: String?, sha256: String) {
        self.commonName = commonName
        self.organization = organization
        self.sha256 = sha256
    }
}

/// The outcome of one connection's check.
public struct DeviceAuthResult: Sendable, Hashable {
    /// nil when the device is authenticated.
    public var failure: DeviceAuthFailure?
    /// The device certificate, when one could be read (also on most failures).
    public var certificate: DeviceCertificateSummary?

    public init(failure: DeviceAuthFailure?, certificate: DeviceCertificateSummary?) {
        self.failure = failure
        self.certificate = certificate
    }

    public static func authenticated(_ certificate: DeviceCertificateSummary) -> Self {
        Self(failure: nil, certificate: certificate)
    }

    public static func failed(_ failure: DeviceAuthFailure, _ certificate: DeviceCertificateSummary? = nil) -> Self {
        Self(failure: failure, certificate: certificate)
    }

    public var isAuthenticated: Bool { failure == nil }
}

/// What one connection needs to check its device: made by the client when TLS is up (the
/// nonce is fresh random bytes, the TLS certificate is the peer's, the time is the wall clock),
/// handed to the connection state machine, which stays free of randomness and clocks.
public struct DeviceAuthContext: Sendable {
    public var nonce: [UInt8]
    /// DER of the certificate the device presented in this connection's TLS handshake (nil when
    /// it could not be read: the check then fails with `tlsCertificate`).
    public var tlsCertificateDER: [UInt8]?
    public var validationTime: Date
    public var trust: DeviceAuthTrustStore

    public init(nonce: [UInt8], tlsCertificateDER: [UInt8]?, validationTime: Date, trust: DeviceAuthTrustStore) {
        self.nonce = nonce
        self.tlsCertificateDER = tlsCertificateDER
        self.validationTime = validationTime
        self.trust = trust
    }

    /// Checks the device's answer (the payload of a message on the device-auth namespace).
    public func verify(_ payload: CastPayload) -> DeviceAuthResult {
        guard case .binary(let bytes) = payload else { return .failed(.malformed) }
        return DeviceAuthVerifier.verify(reply: bytes, nonce: nonce, tlsCertificateDER: tlsCertificateDER,
                                         at: validationTime, trust: trust)
    }
}
