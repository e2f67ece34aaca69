import CastProtocol
import Crypto
import Foundation
import Synchronization
import X509
import _CryptoExtras

/// How a simulated device answers an AuthChallenge (the `device_auth` fault action).
public enum DeviceAuthBehaviour: String, Sendable, Hashable, CaseIterable {
    /// A correct AuthResponse: chain to the simulator's test root, SHA-256 signature over the
    /// nonce and the TLS certificate.
    case correct
    /// No answer at all (also what a receiver that does not speak device auth does).
    case noAnswer = "no_answer"
    /// An AuthError (a third-party receiver that refuses).
    case authError = "auth_error"
    /// A signature over other bytes.
    case badSignature = "bad_signature"
    /// A correct answer, but the chain ends at another root nobody trusts.
    case unknownRoot = "unknown_root"
    /// A correct answer with a device certificate that expired yesterday.
    case expiredCertificate = "expired_certificate"
    /// The answer to an earlier challenge: the previous connection's nonce, echoed and signed.
    case replayedNonce = "replayed_nonce"
}

/// The simulator's device-auth identity: a test root and an intermediate (RSA 2048, made once
/// per process, on first use), which issue each simulated device its device certificate.
/// Tell the bridge to trust `rootPEM` (`cast.device_auth_roots`; `cast-sim --device-auth-root`
/// writes it to a file). Device keys come from a small pool made with the authority (RSA key
/// generation takes tens of milliseconds; a fleet of 200 devices would spend seconds on it):
/// every device has a certificate of its own, some devices share a key.
public final class DeviceAuthority: Sendable {
    struct Issuer: Sendable {
        let certificate: Certificate
        let key: _RSA.Signing.PrivateKey
    }

    public let root: Certificate
    let intermediate: Issuer
    let deviceKeys: [_RSA.Signing.PrivateKey]

    /// The process's authority (made on first use).
    public static let shared: DeviceAuthority = {
        do {
            return try DeviceAuthority(name: "cast-sim Test Root CA", keys: 4)
        } catch {
            fatalError("cannot make the simulator's test authority: \(error)")
        }
    }()

    /// Starts making the process's authority on a thread of its own, once per process (a
    /// simulator calls it when it is made): a real device has its keys before anyone connects,
    /// and a device restarted in a test must not spend its first challenge making RSA keys
    /// (a challenge that comes first waits for the same one-time initialisation).
    static let madeInBackground: Void = {
        Thread.detachNewThread { _ = DeviceAuthority.shared.root }
    }()

    /// Another authority whose root nobody trusts (the `unknown_root` fault).
    static let untrusted: DeviceAuthority = {
        do {
            return try DeviceAuthority(name: "cast-sim Untrusted Root CA", keys: 1)
        } catch {
            fatalError("cannot make the simulator's untrusted authority: \(error)")
        }
    }()

    init(name: String, keys: Int) throws {
        let now = Date()
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rootName = try Self.name(name)
        root = try Self.authorityCertificate(key: rootKey, subject: rootName, issuer: rootName, issuerKey: rootKey,
                                             years: 20, maxPathLength: 2, now: now)
        let intermediateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        intermediate = Issuer(
            certificate: try Self.authorityCertificate(key: intermediateKey, subject: try Self.name("cast-sim Test ICA"),
                                                       issuer: rootName, issuerKey: rootKey, years: 10, maxPathLength: 0,
                                                       now: now),
            key: intermediateKey)
        deviceKeys = try (0..<max(1, keys)).map { _ in try _RSA.Signing.PrivateKey(keySize: .bits2048) }
    }

    private static func name(_ commonName: String) throws -> DistinguishedName {
        try DistinguishedName {
            OrganizationName("cast2mqtt simulator")
            CommonName(commonName)
        }
    }

    /// A CA certificate (root or intermediate), valid from yesterday for `years`.
    private static func authorityCertificate(key: _RSA.Signing.PrivateKey, subject: DistinguishedName,
                                             issuer: DistinguishedName, issuerKey: _RSA.Signing.PrivateKey,
                                             years: Double, maxPathLength: Int, now: Date) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-86_400), notValidAfter: now.addingTimeInterval(years * 365 * 86_400),
            issuer: issuer, subject: subject, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: maxPathLength))
                KeyUsage(keyCertSign: true, cRLSign: true)
            },
            issuerPrivateKey: .init(issuerKey))
    }

    /// The root certificate as PEM (what the bridge must trust).
    public var rootPEM: String {
        (try? root.serializeAsPEM().pemString) ?? ""
    }

    /// A device's credentials: its certificate (valid for ten years from yesterday, or, with
    /// `expired`, a year that ended yesterday), the intermediate, and its key.
    func deviceCredentials(commonName: String, organization: String, keyIndex: Int,
                           expired: Bool) throws -> DeviceCredentials {
        let key = deviceKeys[abs(keyIndex) % deviceKeys.count]
        let now = Date()
        let name = try DistinguishedName {
            OrganizationName(organization)
            CommonName(commonName)
        }
        let notBefore = expired ? now.addingTimeInterval(-366 * 86_400) : now.addingTimeInterval(-86_400)
        let notAfter = expired ? now.addingTimeInterval(-86_400) : now.addingTimeInterval(10 * 365 * 86_400)
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter,
            issuer: intermediate.certificate.subject, subject: name, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                KeyUsage(digitalSignature: true)
            },
            issuerPrivateKey: .init(intermediate.key))
        return DeviceCredentials(certificateDER: try certificate.serializeAsPEM().derBytes,
                                 intermediatesDER: [try intermediate.certificate.serializeAsPEM().derBytes], key: key)
    }
}

/// What a simulated device answers a challenge with.
struct DeviceCredentials: Sendable {
    let certificateDER: [UInt8]
    let intermediatesDER: [[UInt8]]
    let key: _RSA.Signing.PrivateKey

    /// The AuthResponse payload for `nonce`: signed over `signedNonce` followed by the TLS
    /// certificate (they differ only when a fault wants them to).
    func response(echoing nonce: [UInt8], signing signedNonce: [UInt8], tlsCertificateDER: [UInt8]) -> [UInt8] {
        let data = signedNonce + tlsCertificateDER
        let signature = (try? key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5))
            .map { [UInt8]($0.rawRepresentation) } ?? []
        return DeviceAuthMessages.responsePayload(DeviceAuthResponse(
            signature: signature, deviceCertificate: certificateDER, intermediates: intermediatesDER,
            senderNonce: nonce, hash: .sha256))
    }
}
