import Foundation
import Presentation
import Replica
import Store

/// Files named on the command line (`send --attach`, `profile --avatar`) and written
/// (`attachment --out`): read with a size limit, typed by extension, written without clobbering.
enum FileInput {
    /// A file's name (without directories), content and media type.
    struct File {
        let name: String
        let bytes: [UInt8]
        let mime: String
    }

    /// Reads `path` for `option`, refusing missing files, directories and files over 8 MiB with
    /// a message that names the file and the fix.
    static func read(_ path: String, option: String) throws(CLIError) -> File {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .failure("cannot read \(path) for --\(option): no such file; check the path")
        }
        guard !isDirectory.boolValue else { throw .failure("cannot use \(path) for --\(option): it is a directory, not a file") }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard size <= Blobs.maxBlobBytes else {
            throw .failure(
                "\(path) is \(Format.byteCount(UInt64(size))), over the \(Format.byteCount(UInt64(Blobs.maxBlobBytes))) limit for --\(option); "
                    + "choose a smaller file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .failure("cannot read \(path) for --\(option): permission denied; check its permissions")
        }
        guard data.count <= Blobs.maxBlobBytes else {
            throw .failure("\(path) grew over the \(Format.byteCount(UInt64(Blobs.maxBlobBytes))) limit for --\(option) while it was read")
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        var shortened = name
        while shortened.utf8.count > BodyLimits.nameBytes * 2 { shortened.removeFirst() }  // keep the extension
        return File(name: shortened, bytes: Array(data), mime: mimeType(forName: name))
    }

    /// The media type for a file name's extension; `application/octet-stream` when unknown.
    static func mimeType(forName name: String) -> String {
        let ext = URL(fileURLWithPath: name).pathExtension.lowercased()
        return types[ext] ?? "application/octet-stream"
    }

    static let types: [String: String] = [
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "heic": "image/heic", "bmp": "image/bmp", "ico": "image/x-icon",
        "txt": "text/plain", "md": "text/markdown", "csv": "text/csv", "html": "text/html", "htm": "text/html",
        "json": "application/json", "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip",
        "tar": "application/x-tar", "mp3": "audio/mpeg", "ogg": "audio/ogg", "wav": "audio/wav", "m4a": "audio/mp4",
        "mp4": "video/mp4", "webm": "video/webm", "mov": "video/quicktime",
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "odt": "application/vnd.oasis.opendocument.text",
    ]

    /// Writes `bytes` to `path` through a temporary file and a rename, refusing an existing file
    /// unless `force`.
    static func write(_ bytes: [UInt8], to path: String, force: Bool) throws(CLIError) {
        if FileManager.default.fileExists(atPath: path) && !force {
            throw .failure("\(path) already exists; choose another file or pass --force to replace it")
        }
        let temporary = path + ".partial"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw .failure("cannot write \(path): check that its directory exists and is writable")
        }
        _ = try? FileManager.default.removeItem(atPath: path)
        do {
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .failure("cannot move the file into \(path): \(error.localizedDescription)")
        }
    }
}
