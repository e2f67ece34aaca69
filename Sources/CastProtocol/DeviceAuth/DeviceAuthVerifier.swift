import Crypto
import Foundation
import X509
import _CryptoExtras

/// The certificates a device chain may end at: the public Cast roots (`DeviceAuthRoots`) and
/// any extra anchors the configuration names (tests, private deployments).
public struct DeviceAuthTrustStore: Sendable {
    public private(set) var anchors: [Certificate]

    public init(anchors: [Certificate]) {
        self.anchors = anchors
    }

    /// The public Cast Root CA and Eureka Root CA.
    public static let castRoots = DeviceAuthTrustStore(anchors: DeviceAuthRoots.certificates)

    /// The Cast roots plus the certificates of `pem` (one or more PEM blocks).
    public static func castRoots(adding pem: String) throws -> DeviceAuthTrustStore {
        var store = castRoots
        try store.add(pem: pem)
        return store
    }

    /// Adds every certificate of `pem`. Throws when it holds none or one does not parse.
    public mutating func add(pem: String) throws {
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        var blocks: [String] = []
        var rest = pem[...]
        while let start = rest.range(of: begin), let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) {
            blocks.append(String(rest[start.lowerBound..<stop.upperBound]))
            rest = rest[stop.upperBound...]
        }
        guard !blocks.isEmpty else { throw DeviceAuthTrustStoreError.noCertificate }
        for block in blocks { anchors.append(try Certificate(pemEncoded: block)) }
    }
}

public enum DeviceAuthTrustStoreError: Error, Sendable, CustomStringConvertible {
    case noCertificate
    public var description: String { "no CERTIFICATE block in the PEM text" }
}

/// The check of a device's answer to our challenge, as Chrome's and Open Screen's senders do it
/// (cast-protocol.md §8): the TLS certificate is valid now and for at most four more days; the
/// answer echoes our nonce; the device certificate and its intermediates chain up to a trust
/// anchor, each valid at the time and each issuer a CA; the device key's RSASSA-PKCS1-v1_5
/// signature (SHA-256 or SHA-1) verifies over the nonce followed by the TLS certificate's DER.
/// Pure: the time and the trust anchors are parameters.
public enum DeviceAuthVerifier {
    /// The longest a device's TLS certificate may still be valid (Open Screen:
    /// `kMaxSelfSignedCertLifetimeInDays`): devices make a new one every day or two.
    public static let maxTLSCertificateLifetime: TimeInterval = 4 * 24 * 3600
    /// The longest chain followed from the device certificate to an anchor.
    public static let maxPathLength = 5

    /// Checks a device's answer (the binary payload it sent on the device-auth namespace).
    public static func verify(reply: [UInt8], nonce: [UInt8], tlsCertificateDER: [UInt8]?, at time: Date,
                              trust: DeviceAuthTrustStore) -> DeviceAuthResult {
        let parsed: DeviceAuthReply
        do {
            parsed = try DeviceAuthMessages.parseReply(reply)
        } catch {
            return .failed(.malformed)
        }
        switch parsed {
        case .error:
            return .failed(.authError)
        case .response(let response):
            return verify(response: response, nonce: nonce, tlsCertificateDER: tlsCertificateDER, at: time, trust: trust)
        }
    }

    /// Checks an AuthResponse.
    public static func verify(response: DeviceAuthResponse, nonce: [UInt8], tlsCertificateDER: [UInt8]?, at time: Date,
                              trust: DeviceAuthTrustStore) -> DeviceAuthResult {
        let device: Certificate
        do {
            device = try Certificate(derEncoded: response.deviceCertificate)
        } catch {
            return .failed(.malformed)
        }
        let summary = summarize(device, der: response.deviceCertificate)
        // The TLS certificate: the signature below covers it, and its short validity is what
        // limits how long a captured answer is worth anything.
        guard let tlsDER = tlsCertificateDER, let tls = try? Certificate(derEncoded: tlsDER),
              tls.notValidBefore <= time, time <= tls.notValidAfter,
              tls.notValidAfter <= time.addingTimeInterval(maxTLSCertificateLifetime) else {
            return .failed(.tlsCertificate, summary)
        }
        guard !nonce.isEmpty, response.senderNonce == nonce else { return .failed(.nonceMismatch, summary) }
        if let failure = verifyChain(device: device, intermediates: response.intermediates, at: time, trust: trust) {
            return .failed(failure, summary)
        }
        guard response.isPKCS1, verifySignature(response.signature, hash: response.hash, key: device.publicKey,
                                                 data: nonce + tlsDER) else {
            return .failed(.badSignature, summary)
        }
        return .authenticated(summary)
    }

    /// RSASSA-PKCS1-v1_5 over `data` with SHA-256 or SHA-1.
    public static func verifySignature(_ signature: [UInt8], hash: DeviceAuthHash, key: Certificate.PublicKey,
                                       data: [UInt8]) -> Bool {
        guard let rsa = _RSA.Signing.PublicKey(key) else { return false }
        let sig = _RSA.Signing.RSASignature(rawRepresentation: signature)
        switch hash {
        case .sha256: return rsa.isValidSignature(sig, for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
        case .sha1: return rsa.isValidSignature(sig, for: Insecure.SHA1.hash(data: data), padding: .insecurePKCS1v1_5)
        }
    }

    /// Follows the chain from the device certificate through the given intermediates (in any
    /// order) to a trust anchor. Nil when it holds.
    public static func verifyChain(device: Certificate, intermediates: [[UInt8]], at time: Date,
                                   trust: DeviceAuthTrustStore) -> DeviceAuthFailure? {
        var pool: [Certificate] = []
        for der in intermediates.prefix(DeviceAuthMessages.maxIntermediates) {
            guard let certificate = try? Certificate(derEncoded: der) else { return .malformed }
            pool.append(certificate)
        }
        // A device certificate is an end entity that may sign: not a CA.
        if isCA(device) { return .untrustedChain }
        if let usage = try? device.extensions.keyUsage, !usage.digitalSignature { return .untrustedChain }
        var current = device
        var expired = !isValid(device, at: time)
        var caBelow = 0  // CA certificates under the one being looked for (path length constraint)
        for _ in 0..<maxPathLength {
            // An anchor ends the chain: its own validity counts (an expired root is expired).
            if let anchor = trust.anchors.first(where: { issued(current, by: $0) }) {
                guard canIssue(anchor, caBelow: caBelow) else { return .untrustedChain }
                if !isValid(anchor, at: time) { expired = true }
                return expired ? .expired : nil
            }
            guard let index = pool.firstIndex(where: { issued(current, by: $0) }) else { return .untrustedChain }
            let issuer = pool.remove(at: index)
            guard canIssue(issuer, caBelow: caBelow) else { return .untrustedChain }
            if !isValid(issuer, at: time) { expired = true }
            caBelow += 1
            current = issuer
        }
        return .untrustedChain
    }

    // MARK: - Helpers

    static func summarize(_ certificate: Certificate, der: [UInt8]) -> DeviceCertificateSummary {
        DeviceCertificateSummary(commonName: attribute(of: certificate.subject) { $0.type == .RDNAttributeType.commonName },
                                 organization: attribute(of: certificate.subject) {
                                     $0.type == .RDNAttributeType.organizationName
                                 },
                                 sha256: SHA256.hash(data: der).map { byte in
                                     let hex = String(byte, radix: 16)
                                     return byte < 16 ? "0" + hex : hex
                                 }.joined())
    }

    private static func attribute(of name: DistinguishedName,
                                  where matches: (RelativeDistinguishedName.Attribute) -> Bool) -> String? {
        for rdn in name {
            for attribute in rdn where matches(attribute) {
                // Printable, UTF-8, IA5 and friends print as their text; bound what is shown.
                let text = String(describing: attribute.value)
                return String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(128))
            }
        }
        return nil
    }

    private static func isValid(_ certificate: Certificate, at time: Date) -> Bool {
        certificate.notValidBefore <= time && time <= certificate.notValidAfter
    }

    private static func isCA(_ certificate: Certificate) -> Bool {
        if case .isCertificateAuthority = (try? certificate.extensions.basicConstraints) ?? .notCertificateAuthority {
            return true
        }
        return false
    }

    /// `subject` names `issuer` as its issuer and `issuer`'s key verifies its signature.
    private static func issued(_ subject: Certificate, by issuer: Certificate) -> Bool {
        subject.issuer == issuer.subject && issuer.publicKey.isValidSignature(subject.signature, for: subject)
    }

    /// `issuer` is a CA whose path length allows `caBelow` CA certificates under it, and whose
    /// key usage (when stated) includes certificate signing.
    private static func canIssue(_ issuer: Certificate, caBelow: Int) -> Bool {
        guard case .isCertificateAuthority(let maxPath) = (try? issuer.extensions.basicConstraints) ?? .notCertificateAuthority
        else { return false }
        if let maxPath, caBelow > maxPath { return false }
        if let usage = try? issuer.extensions.keyUsage, !usage.keyCertSign { return false }
        return true
    }
}
