import CastProtocol
import Foundation
import X509

/// Input: the binary payload a device sends on `urn:x-cast:com.google.cast.tp.deviceauth`. It
/// goes through the AuthResponse decoder and, when that reads a response, through the chain
/// parser and path check against the real Cast roots, then the whole verification. Whatever the
/// bytes: the decoder keeps its limits, nothing traps, and an answer to a nonce the input cannot
/// know (random per run) never authenticates.
func fuzzDeviceAuth(_ input: UnsafeRawBufferPointer) {
    let bytes = Array(input)
    let time = Date(timeIntervalSince1970: 1_459_468_800)  // 2016-04-01, when the public chains are valid
    guard case .success(let reply) = Result(catching: { try DeviceAuthMessages.parseReply(bytes) }) else { return }
    guard case .response(let response) = reply else { return }
    precondition(response.signature.count <= DeviceAuthMessages.maxSignatureBytes, "signature not bounded")
    precondition(response.deviceCertificate.count <= DeviceAuthMessages.maxCertificateBytes, "certificate not bounded")
    precondition(response.intermediates.count <= DeviceAuthMessages.maxIntermediates, "intermediates not bounded")
    precondition(response.senderNonce.count <= DeviceAuthMessages.maxNonceBytes, "nonce not bounded")
    if let device = try? Certificate(derEncoded: response.deviceCertificate) {
        _ = DeviceAuthVerifier.verifyChain(device: device, intermediates: response.intermediates, at: time,
                                           trust: .castRoots)
    }
    // A TLS certificate the input may carry as its first intermediate (so the signature path
    // runs too), and a nonce it cannot have seen.
    let nonce = (0..<16).map { _ in UInt8.random(in: 0...255) }
    let result = DeviceAuthVerifier.verify(response: response, nonce: nonce, tlsCertificateDER: response.intermediates.first,
                                           at: time, trust: .castRoots)
    precondition(!result.isAuthenticated || response.senderNonce == nonce, "authenticated a stale nonce")
}
