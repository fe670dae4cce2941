import AsyncImageCache
import Foundation

/// `aic sheet INPUT... --output sheet.png`: many images through one store, a few at a time, laid
/// out in a grid and written as one PNG.
///
/// A failed image is reported and left out; the sheet is written when at least one made it.
enum SheetCommand: Subcommand {
    static let name = "sheet"
    static let summary = "write a contact sheet: many images as thumbnails in a grid, one PNG"
    static let synopsis = "aic sheet INPUT... [--width W] [--columns C] [--radius R] --output sheet.png"
    static let details = """
        Each INPUT is an image file, a folder or an http:, https:, file: or data: URL; a folder is
        searched recursively for \(extensionList) files. The images load through one
        store, \(concurrency) at a time, at the cell width, and are laid out in a grid \(gap) px apart
        on a white background; each row is as tall as its tallest thumbnail.

        Progress goes to stderr: a bar on a terminal, a line per image ([3/20] photo.jpg) otherwise.
        Images that fail are listed at the end and left out; a summary line follows on stdout.

        OPTIONS
          --width W       the cell width in pixels, 1-\(ThumbnailCommand.maximumWidth) (default \(defaultWidth))
          --columns C     the number of columns, 1-\(maximumColumns) (default \(defaultColumns))
          --radius R      the thumbnails' corner radius in pixels (default 0)
          --output FILE   where to write the PNG (required)

        EXAMPLES
          aic sheet ~/Pictures/trip --output trip.png
          aic sheet a.jpg b.png https://example.com/c.jpg --width 160 --columns 3 --radius 8 --output abc.png

        Exit code 0 when at least one image made it into the sheet; 1 when none did, or the sheet would be
        over \(SheetLayout.maximumSide) px tall or \(SheetLayout.maximumPixels) pixels (known once the thumbnails are);
        2 when the sheet would be over \(SheetLayout.maximumSide) px wide (known before anything loads).
        """
    static let options: Set<String> = ["--width", "--columns", "--radius", "--output"]
    static let flags: Set<String> = []

    static let defaultWidth = 240
    static let defaultColumns = 4
    static let maximumColumns = 100
    /// Loads at a time: enough to overlap downloads with decodes on a few cores without holding
    /// many full-size originals in memory at once.
    static let concurrency = 4
    /// Pixels between cells and around the edge.
    static let gap = 8
    private static var extensionList: String { Inputs.imageExtensions.sorted().map { "." + $0 }.joined(separator: " ") }

    static func run(_ arguments: Arguments) async throws {
        guard !arguments.positionals.isEmpty else { throw UsageError("sheet needs at least one INPUT") }
        let width = try arguments.integer("--width", default: defaultWidth, in: 1...ThumbnailCommand.maximumWidth)
        let columns = try arguments.integer("--columns", default: defaultColumns, in: 1...maximumColumns)
        let radius = try arguments.integer("--radius", default: 0, in: 0...ThumbnailCommand.maximumWidth)
        let output = try PNGOutput(argument: try PNGOutput.checkedPath(try arguments.required("--output")))
        let store = try Inputs.store()
        // Ctrl-C lets the sheet's write finish (``Interruption``), so that no temporary file stays beside it.
        let interruption = Interruption(removing: nil)

        let urls = try Inputs.expandingFolders(arguments.positionals)
        guard !urls.isEmpty else {
            throw CommandFailure("no images found in \(arguments.positionals.joined(separator: " "))")
        }
        try PNGOutput.checkNoneOverwrites(urls, outputs: [output])
        let sheetWidth = SheetLayout.width(count: urls.count, cellWidth: width, columns: columns, gap: gap)
        guard sheetWidth <= SheetLayout.maximumSide else {
            throw UsageError(
                "\(min(columns, urls.count)) columns of \(width) px make a sheet \(sheetWidth) px wide; "
                    + "a PNG is at most \(SheetLayout.maximumSide): use a smaller --width or fewer --columns")
        }
        let clock = ContinuousClock()
        let start = clock.now
        let requests = urls.map { ImageRequest(url: $0, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius)) }
        let results = await load(requests, through: store)
        store.waitForDiskMaintenance()

        let thumbnails = results.compactMap { try? $0.get() }
        let failures = zip(urls, results).compactMap { url, result -> String? in
            guard case .failure(let error) = result else { return nil }
            return "  \(Inputs.displayName(of: url)): \(Console.oneLine(error.description))"
        }
        if !failures.isEmpty {
            Console.error("\(failures.count) of \(urls.count) failed:\n" + failures.joined(separator: "\n") + "\n")
        }
        guard !thumbnails.isEmpty else { throw CommandFailure("no image made it into the sheet; nothing written") }

        let layout = SheetLayout(sizes: thumbnails.map(\.pixelSize), cellWidth: width, columns: columns, gap: gap)
        guard layout.fitsLimits else {
            throw CommandFailure(
                "the sheet would be \(layout.canvasSize) px, over \(SheetLayout.maximumSide) px a side "
                    + "or \(SheetLayout.maximumPixels) pixels in all: use a smaller --width, fewer images or more --columns"
            )
        }
        let sheet = layout.composite(thumbnails)
        try interruption.finishing { try output.write(sheet) }
        let counts = "\(thumbnails.count) of \(urls.count) images, \(sheet.pixelSize) px"
        let elapsed = Formatted.seconds(clock.now - start)
        Console.out(
            "\(Console.printable(output.path.description)): \(counts); \(describe(store.statistics)); \(elapsed)")
    }

    /// Loads every request through `store`, at most ``concurrency`` at a time, reporting progress;
    /// the results come back in the order of `requests`.
    static func load(
        _ requests: [ImageRequest], through store: ImageStore
    ) async -> [Result<Bitmap, ImageLoadingError>] {
        var results = [Result<Bitmap, ImageLoadingError>](repeating: .failure(.cancelled), count: requests.count)
        var progress = Progress(total: requests.count)
        func record(_ index: Int, _ result: Result<Bitmap, ImageLoadingError>) {
            results[index] = result
            progress.advance(Inputs.displayName(of: requests[index].url), failed: (try? result.get()) == nil)
        }
        await withTaskGroup(of: (Int, Result<Bitmap, ImageLoadingError>).self) { group in
            for (index, request) in requests.enumerated() {
                // Past the first few, each new load waits for one to finish.
                if index >= concurrency, let (done, result) = await group.next() { record(done, result) }
                group.addTask { (index, await outcome(of: request, through: store)) }
            }
            for await (done, result) in group { record(done, result) }
        }
        progress.finish()
        return results
    }

    /// The image for `request`, or why there is none.
    ///
    /// A function of its own rather than a `do throws(ImageLoadingError)` block in the child task:
    /// with Swift 6.3.1 at -O, such a block in an async closure corrupted the captured index.
    private static func outcome(
        of request: ImageRequest, through store: ImageStore
    ) async -> Result<Bitmap, ImageLoadingError> {
        do {
            return .success(try await store.image(for: request))
        } catch {
            return .failure(error)
        }
    }

    /// `fetched 12.3 MB; hits: memory 0, disk 3, source 17`.
    private static func describe(_ statistics: ImageStore.Statistics) -> String {
        let memory = statistics.variantHits + statistics.originalMemoryHits
        let hits = "memory \(memory), disk \(statistics.diskHits), source \(statistics.sourceFetches)"
        return "fetched \(Formatted.bytes(statistics.bytesFetched)); hits: \(hits)"
    }
}
