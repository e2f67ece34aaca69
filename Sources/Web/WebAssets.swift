import Crypto
import HTTPTypes
import NIOCore

/// The page's files, compiled into the binary (`embedInCode` in Package.swift), each with its
/// `Content-Type` and an `ETag` (a hash of the bytes) so a browser revalidates cheaply.
enum WebAssets {
    struct File: Sendable {
        let buffer: ByteBuffer
        let contentType: String
        let etag: String
        /// The page itself (index.html), whose `<base href="/">` ingress changes.
        var isPage: Bool { contentType.hasPrefix("text/html") }

        init(_ bytes: [UInt8], _ contentType: String) {
            buffer = ByteBuffer(bytes: bytes)
            self.contentType = contentType
            etag = "\"" + SHA256.hash(data: bytes).prefix(8).map { String(UInt16($0) | 0x100, radix: 16).dropFirst() }.joined() + "\""
        }
    }

    static let javascript = "text/javascript; charset=utf-8"

    static let files: [String: File] = [
        "/": File(PackageResources.index_html, "text/html; charset=utf-8"),
        "/app.css": File(PackageResources.app_css, "text/css; charset=utf-8"),
        "/favicon.svg": File(PackageResources.favicon_svg, "image/svg+xml"),
        "/app.js": File(PackageResources.app_js, javascript),
        "/connection.js": File(PackageResources.connection_js, javascript),
        "/util.js": File(PackageResources.util_js, javascript),
        "/devices.js": File(PackageResources.devices_js, javascript),
        "/device.js": File(PackageResources.device_js, javascript),
        "/bridge.js": File(PackageResources.bridge_js, javascript),
        "/controls.js": File(PackageResources.controls_js, javascript),
        "/login.js": File(PackageResources.login_js, javascript),
    ]

    static let ingressPathHeader = HTTPField.Name("X-Ingress-Path")!
    static let baseTag = Array(#"<base href="/">"#.utf8)

    /// The base path from `X-Ingress-Path` (`/api/hassio_ingress/<token>`): nil when absent or
    /// not a plain absolute path (not `//`, at most 512 bytes of letters, digits and `/_-.~`, no `..`).
    static func ingressBase(_ header: String?) -> String? {
        guard var path = header, path.hasPrefix("/"), !path.hasPrefix("//"), path.utf8.count <= 512, !path.contains("..") else { return nil }
        guard path.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "/_-.~".unicodeScalars.contains($0)) })
        else { return nil }
        while path.hasSuffix("/") { path.removeLast() }
        return path.isEmpty ? nil : path + "/"
    }

    /// The page with `<base href="<base>">` (base from `ingressBase`, so nothing to escape).
    static func page(base: String) -> File {
        let page = PackageResources.index_html
        guard let at = page.indices.first(where: { page[$0...].starts(with: baseTag) }) else { return files["/"] ?? File(page, "text/html; charset=utf-8") }
        let bytes = Array(page[..<at]) + Array("<base href=\"\(base)\">".utf8) + Array(page[(at + baseTag.count)...])
        return File(bytes, "text/html; charset=utf-8")
    }

    /// The file for a path; the page's own routes (`/device/...`, `/bridge`) get the page.
    static func file(_ path: String) -> File? {
        if let file = files[path] { return file }
        if path == "/bridge" || path == "/index.html" || path.hasPrefix("/device/") { return files["/"] }
        return nil
    }
}
