import AsyncImageCache
import Foundation

/// `aic thumbnail INPUT --width W [--radius R] --output OUT.png`: one image through the store, as
/// an app would ask for it, written as an RGBA PNG. `aic thumbnail INPUT... --output-dir DIR` does a
/// batch through one store, several images at a time.
enum ThumbnailCommand: Subcommand {
    static let name = "thumbnail"
    static let summary = "write a PNG of an image scaled to a width, with optional rounded corners"
    static let synopsis = "aic thumbnail INPUT --width W [--radius R] --output OUT.png | INPUT... --output-dir DIR"
    static let details = """
        Loads INPUT through the store at the given width, as `store.image(for: ImageRequest(url:
        targetWidth:cornerRadius:))` does in an app: decoded at display size, turned upright (EXIF),
        resized, corners rounded with transparent, anti-aliased edges. Images are scaled down,
        never up. Writes an 8-bit RGBA PNG and prints its path and size.

        OPTIONS
          --width W          the width in pixels, 1-\(maximumWidth) (required)
          --radius R         the corner radius in pixels at W (default 0: square corners); an image
                             narrower than W gets corners smaller in proportion
          --output FILE      where to write the PNG of the one INPUT; an existing file is replaced
          --output-dir DIR   instead of --output: any number of INPUTs, each written to DIR/NAME.png
                             (NAME is the input's file name without its extension, or input-N for
                             the Nth INPUT when it has none, as a data: URL), one per core at a time;
                             an INPUT that fails is listed at the end, the others are still written,
                             and the exit status is 1

        EXAMPLES
          aic thumbnail photo.jpg --width 320 --output photo-320.png
          aic thumbnail https://example.com/a.jpg --width 120 --radius 60 --output avatar.png
          aic thumbnail photos/*.jpg --width 320 --output-dir thumbnails
        """
    static let options: Set<String> = ["--width", "--radius", "--output", "--output-dir"]
    static let flags: Set<String> = []

    /// Wider than any screen; a typo such as an extra zero is caught before a huge decode.
    static let maximumWidth = 16_384

    static func run(_ arguments: Arguments) async throws {
        let width = try arguments.integer("--width", in: 1...maximumWidth)
        let radius = try arguments.integer("--radius", default: 0, in: 0...maximumWidth)
        let jobs: [(url: URL, output: PNGOutput)]
        if let folder = arguments.value("--output-dir") {
            guard arguments.value("--output") == nil else {
                throw UsageError("give --output or --output-dir, not both")
            }
            guard !arguments.positionals.isEmpty else { throw UsageError("\(name) needs an INPUT") }
            // The folder's bytes as given, which need not be UTF-8 (``RawArguments``).
            let folderBytes = try Inputs.pathBytes(of: folder)
            let named = try arguments.positionals.enumerated().map { position, input in
                let url = try Inputs.url(for: input)
                // A URL's last component is percent-decoded: `..%2Fx.jpg` names "../x.jpg", which must not
                // lead out of the folder, so a "/" (or a NUL) in it becomes "_", byte by byte (a "/" with a
                // combining mark after it is one Character, which a "/" never equals). An input without a
                // file name (a `data:` URL, whose "name" would be its payload) is named by its place; one whose
                // name is not UTF-8 (`caf\xE9.jpg`, which `lastPathComponent` gives as "") by the name's bytes.
                let base =
                    Inputs.fileName(of: url) == nil
                    ? Inputs.fileNameBytes(of: url).map(stem(ofFileName:))
                    : Array(url.deletingPathExtension().lastPathComponent.utf8)
                let file =
                    (base ?? Array("input-\(position + 1)".utf8)).map { $0 == slash || $0 == 0 ? underscore : $0 }
                    + Array(".png".utf8)
                return (url: url, output: try PNGOutput(pathBytes: folderBytes + [slash] + file), file: file)
            }
            // Two inputs with one name (a/x.jpg, b/x.png) would overwrite each other's thumbnail. Names are
            // compared byte for byte, as Linux names files: as text, `café` spelt with a combining accent equals
            // `café` with a precomposed one, two files that do not overwrite each other.
            var names = Set<[UInt8]>()
            if let clash = named.first(where: { !names.insert($0.file).inserted }) {
                throw UsageError("two inputs would both write \(clash.output.path)")
            }
            jobs = named.map { ($0.url, $0.output) }
        } else {
            let input = try arguments.single("INPUT", of: name)
            let path = try PNGOutput.checkedPath(try arguments.required("--output"))
            jobs = [(try Inputs.url(for: input), try PNGOutput(argument: path))]
        }
        // `--output-dir photos` for photos/a.png would replace the photo with its own thumbnail.
        try PNGOutput.checkNoneOverwrites(jobs.map(\.url), outputs: jobs.map(\.output))

        let store = try Inputs.store()
        // Ctrl-C lets a PNG being written finish (``Interruption``), so that no temporary file stays beside it.
        let interruption = Interruption(removing: nil)
        // Each image decodes and resizes on its own; as many at once as there are cores keeps them busy
        // while one waits for its file or writes its PNG.
        let lanes = max(1, ProcessInfo.processInfo.activeProcessorCount)
        // An input that fails does not stop the others, as in a sheet: the first failure used to end the
        // batch, leaving the thumbnails of whichever inputs happened to be done and no word of the rest.
        let failures = await withTaskGroup(of: (Int, (any Error)?).self) { group in
            var failures: [(index: Int, error: any Error)] = []
            func record(_ done: (Int, (any Error)?)) {
                if let error = done.1 { failures.append((done.0, error)) }
            }
            for (index, job) in jobs.enumerated() {
                if index >= lanes, let done = await group.next() { record(done) }
                group.addTask {
                    (index, await failure(of: job, width: width, radius: radius, in: store, interruption: interruption))
                }
            }
            for await done in group { record(done) }
            return failures.sorted { $0.index < $1.index }.map(\.error)
        }
        // Let a trim that the download scheduled finish, so the cache is within budget on exit.
        store.waitForDiskMaintenance()
        guard let first = failures.first else { return }
        guard jobs.count > 1 else { throw first }
        let list = failures.map { "  " + Console.oneLine(AIC.message(for: $0)) }.joined(separator: "\n")
        Console.error("\(failures.count) of \(jobs.count) failed:\n\(list)\n")
        // Said only when there are others: with every input failed, nothing was written.
        let others = failures.count < jobs.count ? "; the others were written" : ""
        throw CommandFailure("\(failures.count) of \(jobs.count) thumbnails failed\(others)")
    }

    private static let slash = UInt8(ascii: "/")
    private static let underscore = UInt8(ascii: "_")

    /// `name` without its extension, as `URL.deletingPathExtension()` takes it off a name in UTF-8: from
    /// its last "." on, unless that "." ends it or only dots come before it (`.hidden`).
    private static func stem(ofFileName name: [UInt8]) -> [UInt8] {
        let dot = UInt8(ascii: ".")
        guard let last = name.lastIndex(of: dot), last != name.count - 1, name[..<last].contains(where: { $0 != dot })
        else { return name }
        return Array(name[..<last])
    }

    /// Why the thumbnail of `job` could not be made or written; `nil` once it is written.
    ///
    /// A function of its own rather than a `do` block in the child task, as ``SheetCommand`` loads: with
    /// Swift 6.3.1 at -O, such a block in an async closure corrupted the captured index.
    private static func failure(
        of job: (url: URL, output: PNGOutput), width: Int, radius: Int, in store: ImageStore,
        interruption: Interruption
    ) async -> (any Error)? {
        do {
            try await thumbnail(
                job.url, width: width, radius: radius, to: job.output, in: store, interruption: interruption)
            return nil
        } catch {
            return error
        }
    }

    private static func thumbnail(
        _ url: URL, width: Int, radius: Int, to output: PNGOutput, in store: ImageStore, interruption: Interruption
    ) async throws {
        let image: Bitmap
        do {
            image = try await store.image(
                for: ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius)))
        } catch {
            throw CommandFailure(Inputs.describe(error, loading: url))
        }
        try interruption.finishing { try output.write(image) }
        Console.out("\(Console.printable(output.path.description)): \(image.pixelSize) PNG")
    }
}
