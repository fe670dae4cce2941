import Foundation

@testable import AsyncImageCache

/// Checks a disk-tier folder against the sources its files came from: every file must be named for
/// one of the source URLs, hold exactly that source's bytes, decode, and carry either no pixel-size
/// attribute or the right one. "Nothing torn is ever served" is this check coming back empty.
struct CacheAudit {
    /// Source bytes by the disk file name of their URL.
    private var sources: [String: Data] = [:]

    init(sources: [URL: Data]) {
        for (url, data) in sources { self.sources[SHA256.hexDigest(of: url.absoluteString)] = data }
    }

    struct Report {
        var checkedFiles = 0
        var temporaryFiles: [String] = []
        var problems: [String] = []
    }

    func check(_ directory: URL) -> Report {
        var report = Report()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names.sorted() {
            if name.hasPrefix(".tmp-") {
                report.temporaryFiles.append(name)
                continue
            }
            report.checkedFiles += 1
            let path = directory.appendingPathComponent(name).path
            guard let expected = sources[name] else {
                report.problems.append("\(name): not named for any source URL")
                continue
            }
            guard let data = FileManager.default.contents(atPath: path), data == expected else {
                report.problems.append("\(name): bytes differ from the source")
                continue
            }
            guard let header = try? ImageHeader.parse(data),
                (try? ImageDecoders.Default().decode(data, context: ImageDecodingContext(header: header))) != nil
            else {
                report.problems.append("\(name): does not decode")
                continue
            }
            if let raw = FileExtendedAttributes().value(named: PixelSizeAttribute.name, atPath: path),
                PixelSizeAttribute.decode(raw) != header.displaySize
            {
                report.problems.append("\(name): pixel-size attribute \(raw) does not match \(header.displaySize)")
            }
        }
        return report
    }
}
