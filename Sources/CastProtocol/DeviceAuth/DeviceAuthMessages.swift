import Foundation
import SwiftProtobuf

/// The hash a device used for its signature (`HashAlgorithm` in cast_channel.proto).
public enum DeviceAuthHash: Int, Sendable, Hashable {
    case sha1 = 0
    case sha256 = 1
}

/// A device's AuthResponse, read with every size bounded. Certificates are DER bytes, not
/// parsed yet.
public struct DeviceAuthResponse: Sendable, Hashable {
    public var signature: [UInt8]
    public var deviceCertificate: [UInt8]
    public var intermediates: [[UInt8]]
    /// The nonce the device echoed (empty when it echoed none).
    public var senderNonce: [UInt8]
    public var hash: DeviceAuthHash
    /// True when the device's signature algorithm is RSASSA-PKCS1-v1_5 (or left unset, whose
    /// default it is); RSASSA-PSS is not accepted.
    public var isPKCS1: Bool

    public init(signature: [UInt8], deviceCertificate: [UInt8], intermediates: [[UInt8]], senderNonce: [UInt8],
                hash: DeviceAuthHash, isPKCS1: Bool = true) {
        self.signature = signature
        self.deviceCertificate = deviceCertificate
        self.intermediates = intermediates
        self.senderNonce = senderNonce
        self.hash = hash
        self.isPKCS1 = isPKCS1
    }
}

/// What a device said on the device-auth namespace.
public enum DeviceAuthReply: Sendable, Hashable {
    case response(DeviceAuthResponse)
    /// An AuthError (0 internal error, 1 no TLS, 2 signature algorithm unavailable).
    case error(code: Int)
}

/// The messages of `urn:x-cast:com.google.cast.tp.deviceauth` (DeviceAuthMessage, binary
/// payloads) with the limits every answer from a device is held to.
public enum DeviceAuthMessages {
    /// The largest DeviceAuthMessage read (a real one is 2–5 KB; the frame limit is 64 KiB).
    public static let maxMessageBytes = 32 * 1024
    /// The largest certificate accepted (real device and intermediate certificates are ~1 KB).
    public static let maxCertificateBytes = 8 * 1024
    /// Intermediates accepted (real chains have one or two).
    public static let maxIntermediates = 4
    /// The largest signature (a 4096-bit key's is 512 bytes).
    public static let maxSignatureBytes = 1024
    /// The largest echoed nonce.
    public static let maxNonceBytes = 256
    /// The nonce we send: 16 random bytes, as Chrome and Open Screen.
    public static let nonceBytes = 16

    /// The payload of our challenge: a DeviceAuthMessage with an AuthChallenge carrying `nonce`,
    /// RSASSA-PKCS1-v1_5 and SHA-256 (devices that only know SHA-1 answer with SHA-1).
    public static func challenge(nonce: [UInt8]) -> [UInt8] {
        var challenge = Extensions_Api_CastChannel_AuthChallenge()
        challenge.signatureAlgorithm = .rsassaPkcs1V15
        challenge.senderNonce = Data(nonce)
        challenge.hashAlgorithm = .sha256
        var message = Extensions_Api_CastChannel_DeviceAuthMessage()
        message.challenge = challenge
        // Serializing a message whose required fields are all set cannot fail.
        return (try? message.serializedBytes()) ?? []
    }

    /// The nonce of a challenge (the simulator's side), nil when `payload` is not a challenge.
    public static func challengeNonce(_ payload: [UInt8]) -> [UInt8]? {
        guard payload.count <= maxMessageBytes,
              let message = try? Extensions_Api_CastChannel_DeviceAuthMessage(serializedBytes: payload),
              message.hasChallenge else { return nil }
        let nonce = message.challenge.senderNonce
        guard nonce.count <= maxNonceBytes else { return nil }
        return [UInt8](nonce)
    }

    /// A device's answer: an AuthResponse as the device side builds it (the simulator).
    public static func responsePayload(_ response: DeviceAuthResponse) -> [UInt8] {
        var r = Extensions_Api_CastChannel_AuthResponse()
        r.signature = Data(response.signature)
        r.clientAuthCertificate = Data(response.deviceCertificate)
        r.intermediateCertificate = response.intermediates.map { Data($0) }
        r.signatureAlgorithm = response.isPKCS1 ? .rsassaPkcs1V15 : .rsassaPss
        r.senderNonce = Data(response.senderNonce)
        r.hashAlgorithm = response.hash == .sha256 ? .sha256 : .sha1
        var message = Extensions_Api_CastChannel_DeviceAuthMessage()
        message.response = r
        return (try? message.serializedBytes()) ?? []
    }

    /// A device's AuthError answer (the simulator).
    public static func errorPayload(code: Int) -> [UInt8] {
        var message = Extensions_Api_CastChannel_DeviceAuthMessage()
        var error = Extensions_Api_CastChannel_AuthError()
        error.errorType = Extensions_Api_CastChannel_AuthError.ErrorType(rawValue: code) ?? .internalError
        message.error = error
        return (try? message.serializedBytes()) ?? []
    }

    /// Reads a device's answer. Throws `malformed` for anything that is not a DeviceAuthMessage
    /// with exactly a response or an error within the limits above.
    public static func parseReply(_ payload: [UInt8]) throws(DeviceAuthDecodingError) -> DeviceAuthReply {
        guard payload.count <= maxMessageBytes else { throw .tooLarge(payload.count) }
        let message: Extensions_Api_CastChannel_DeviceAuthMessage
        do {
            // Required fields are checked by SwiftProtobuf (AuthResponse: signature and
            // certificate; AuthError: error_type).
            message = try Extensions_Api_CastChannel_DeviceAuthMessage(serializedBytes: payload)
        } catch {
            throw .notAMessage
        }
        if message.hasResponse {
            let r = message.response
            guard r.signature.count <= maxSignatureBytes, !r.signature.isEmpty else { throw .field("signature") }
            guard r.clientAuthCertificate.count <= maxCertificateBytes, !r.clientAuthCertificate.isEmpty else {
                throw .field("client_auth_certificate")
            }
            guard r.intermediateCertificate.count <= maxIntermediates,
                  r.intermediateCertificate.allSatisfy({ !$0.isEmpty && $0.count <= maxCertificateBytes }) else {
                throw .field("intermediate_certificate")
            }
            guard r.senderNonce.count <= maxNonceBytes else { throw .field("sender_nonce") }
            return .response(DeviceAuthResponse(
                signature: [UInt8](r.signature), deviceCertificate: [UInt8](r.clientAuthCertificate),
                intermediates: r.intermediateCertificate.map { [UInt8]($0) }, senderNonce: [UInt8](r.senderNonce),
                hash: r.hashAlgorithm == .sha256 ? .sha256 : .sha1,
                isPKCS1: r.signatureAlgorithm == .rsassaPkcs1V15 || r.signatureAlgorithm == .unspecified))
        }
        if message.hasError {
            return .error(code: message.error.errorType.rawValue)
        }
        throw .empty
    }
}

/// Why a device's answer could not be read.
public enum DeviceAuthDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    case tooLarge(Int)
    case notAMessage
    /// Neither a response nor an error.
    case empty
    /// A field is empty or over its limit.
    case field(String)

    public var description: String {
        switch self {
        case .tooLarge(let n): return "answer of \(n) bytes is over the \(DeviceAuthMessages.maxMessageBytes)-byte limit"
        case .notAMessage: return "not a DeviceAuthMessage"
        case .empty: return "neither a response nor an error"
        case .field(let name): return "\(name) is empty or over its limit"
        }
    }
}
