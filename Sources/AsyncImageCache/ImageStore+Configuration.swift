import Foundation

extension ImageStore {
    /// Everything that shapes a store: its name and budgets, and the parts it is built from.
    ///
    /// ```swift
    /// var configuration = ImageStore.Configuration(name: "avatars")
    /// configuration.memoryCountLimit = 500
    /// configuration.dataLoader = DataLoader(maximumResponseBytes: 8 << 20)
    /// let store = try ImageStore(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The store's name: its folder under ``rootDirectory``. At most 255 ASCII letters, digits, `-`,
        /// `_` and `.`, with no `..` in it (so not `.` or `..` either). `"default"` by default.
        public var name: String
        /// The most entries in each memory tier (variants, originals); 150 by default. With 0 the tiers
        /// keep nothing, and the disk tier still keeps every image that decodes. It does not bound the few
        /// downloads held for the next load after their load was cancelled (``ImageLoadTask/cancel()``),
        /// which ``memoryByteLimit`` does.
        public var memoryCountLimit = 150
        /// The most bytes in each memory tier; ``ImageStore/recommendedMemoryByteLimit()`` by default.
        /// A variant costs `width * height * 4`, an original its byte count; a `data:` URL's entries cost
        /// the URL's length besides, as its text holds the image again.
        public var memoryByteLimit = ImageStore.recommendedMemoryByteLimit()
        /// The disk tier's byte budget, which holds after every write (room is made before a new
        /// file appears); 200 MiB by default. A file counts the space it takes on disk, as `du` shows
        /// it: whole blocks, and the block its extended attributes take where the file system keeps
        /// them apart (about 8 KiB for a small image with its HTTP caching facts on ext4), never less
        /// than its size. Files another process adds to a shared folder count from the background
        /// trim that follows a write, which lists the folder at most once in 10 seconds, or from the
        /// one a store runs 10 seconds after it opens.
        public var diskByteLimit = 200 * 1024 * 1024
        /// The folder that holds one folder per store name; `nil` (the default) means
        /// `AsyncImageCache` in the user's cache folder (`$XDG_CACHE_HOME` when it is an absolute path,
        /// else `$HOME/.cache`, on Linux; `Library/Caches` on Apple platforms).
        public var rootDirectory: URL?
        /// Fetches bytes for every scheme; ``DataLoader`` by default.
        public var dataLoader: any DataLoading = DataLoader()
        /// Turns bytes into pixels; ``ImageDecoders/Default`` by default.
        ///
        /// The default decoder's own work around it is the store's: converting an embedded ICC profile
        /// to sRGB, resizing a sequential PNG or a JPEG row by row as it decodes, and decoding a WebP to
        /// cover three times the target. Another decoder, even one that forwards to
        /// ``ImageDecoders/Default``, gets none of that: its bitmap is resized whole, and its pixels are
        /// shown in whatever colour space it returns.
        public var decoder: any ImageDecoding = ImageDecoders.Default()
        /// The most pixels one decoded bitmap may have; ``ImageStore/recommendedPixelBudget()`` by
        /// default, 64 megapixels where the process may use 1 GiB of memory or more. At least 1:
        /// ``ImageStore/init(configuration:)`` refuses less with
        /// ``ImageStore/ConfigurationError/invalidPixelBudget(_:)``.
        public var pixelBudget = ImageStore.recommendedPixelBudget()
        /// The most decodes run at once; the active processor count by default. Loads beyond it
        /// wait for a slot, visible loads before prefetches. It also bounds the loads that fetch ahead
        /// of the decodes: at most twice as many visible loads (and at least 8) per host (and as many of
        /// local files, of `data:` URLs, of each scheme a custom ``DataLoading`` serves, and of remote
        /// images read back from the disk tier, whatever their host) are
        /// past the start of their fetch and short of a slot at once, and as many prefetches per source
        /// (at most four sources' worth in all); the others wait to start their fetch, so a burst of
        /// hundreds of loads holds the bytes of only a few images, and a host that does not answer holds
        /// up only its own loads and prefetches (a
        /// load that a redirect leads to another host counts under that host from then on, with the
        /// package's own ``DataLoader``; a load that joins a download under way holds no slot of its own).
        public var decodeConcurrency = ProcessInfo.processInfo.activeProcessorCount
        /// Called at the start of every pipeline stage with the URL it works on, on the thread that
        /// runs it (for instrumentation and tests); `nil` by default. Must be fast and not block.
        public var stageObserver: (@Sendable (Stage, URL) -> Void)?
        /// Whether a memory warning empties the memory tiers (iOS, tvOS and visionOS, through
        /// `UIApplication.didReceiveMemoryWarningNotification`); `true` by default. Elsewhere there
        /// is no such warning: call ``ImageStore/clearMemory()`` yourself.
        public var purgesOnMemoryWarning = true

        /// Reads and writes the pixel-size attribute; tests replace it to simulate file systems
        /// without extended attributes.
        var extendedAttributes: any ExtendedAttributeStoring = FileExtendedAttributes()
        /// Looks at local files' versions; tests replace it with a spy that counts calls.
        var fileInspector: any FileInspecting = SystemFileInspector()
        /// Called on the calling thread once a size lookup of a local file has read the file's first bytes
        /// through the descriptor whose status gives its version, before that status is taken again; tests
        /// change the file there.
        var localHeaderReadObserver: (@Sendable (URL) -> Void)?
        /// Called on the decoding thread after each batch of source rows a JPEG or PNG decodes row by
        /// row (an interlaced PNG's once per pass), and after each chunk of a WebP file libwebp is handed
        /// (its output rows so far), with the rows decoded so far and the rows in all; tests see how far a
        /// decode went, and hold it there.
        var decodeRowObserver: (@Sendable (_ rowsDecoded: Int, _ totalRows: Int) -> Void)?
        /// Called on the decoding thread as a resize starts (a JPEG's decode and resize in one step, or
        /// the resize of a whole bitmap), with whether it may use threads besides this one; tests see
        /// which loads spend other cores.
        var resizeThreadsObserver: (@Sendable (_ usesOtherThreads: Bool) -> Void)?
        /// Called on the thread that runs a load's run of the pipeline as the run has its original bytes (from
        /// memory, the disk tier or the source), before it waits for a decode slot, with the URL; tests hold
        /// a run there, its fetch ended and its decode not begun.
        var fetchedObserver: (@Sendable (URL) async -> Void)?
        /// Called on the thread that runs a visible load's run of the pipeline once it holds a slot of
        /// ``ImageStore/fetchSlots`` or has found that it needs none (its bytes in memory, or a fetch in flight
        /// to join), with the URL and whether it holds one; tests hold a run there.
        var fetchSlotObserver: (@Sendable (URL, _ holdsSlot: Bool) async -> Void)?

        /// Creates a configuration with default budgets and parts.
        public init(name: String = "default") {
            self.name = name
        }

        /// The store's own folder: `rootDirectory/name`.
        var directory: URL {
            (rootDirectory ?? Self.defaultRootDirectory).appendingPathComponent(name, isDirectory: true)
        }

        static var defaultRootDirectory: URL {
            #if canImport(Darwin)
            let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
            #else
            // The XDG base directory spec: an unset, empty or relative XDG_CACHE_HOME is ignored for
            // $HOME/.cache. Foundation's home directory comes from the account database whatever HOME
            // says, so it only stands in for a HOME that is unset, empty or relative.
            let environment = ProcessInfo.processInfo.environment
            func absolute(_ variable: String) -> URL? {
                environment[variable].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil }
            }
            let home = absolute("HOME") ?? FileManager.default.homeDirectoryForCurrentUser
            let caches = absolute("XDG_CACHE_HOME") ?? home.appendingPathComponent(".cache", isDirectory: true)
            #endif
            return caches.appendingPathComponent("AsyncImageCache", isDirectory: true)
        }
    }

    /// A step of the pipeline, as reported to ``Configuration/stageObserver``.
    public enum Stage: String, Sendable, CaseIterable {
        /// Fetching bytes from the source (network, file or `data:` URL).
        case fetch
        /// Decoding bytes into pixels.
        case decode
        /// Turning the pixels upright according to EXIF orientation.
        case orient
        /// Resampling to the requested width.
        case resize
        /// Converting the colours of an image with an embedded ICC profile other than sRGB to sRGB (on
        /// Linux, after resizing; ImageIO converts while it decodes on Apple platforms).
        case convertColor
        /// Rounding the corners.
        case roundCorners
    }

    /// Why a configuration was refused.
    public enum ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The name is empty, `.`, longer than a file name may be (255 bytes), has `..` in it, or has a
        /// character other than ASCII letters, digits, `-`, `_` and `.`.
        case invalidName(String)
        /// The ``Configuration/pixelBudget`` is 0 or negative: no bitmap would fit in it, and every
        /// decode would fail.
        case invalidPixelBudget(Int)

        /// One line saying what is wrong.
        public var description: String {
            switch self {
            case .invalidName(let name):
                "invalid store name \(String(reflecting: name)): use at most 255 ASCII letters, digits, '-', '_' "
                    + "and '.', without '..': a folder name, not a path"
            case .invalidPixelBudget(let budget):
                "invalid pixel budget \(budget): it must be at least 1 pixel, or every decode fails"
            }
        }
    }

    static func validate(name: String) throws(ConfigurationError) {
        // Checked as bytes: compared as characters, a KELVIN SIGN (U+212A) equals "K", and a name the folder
        // spells in other bytes than it says would pass.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.".utf8)
        // Past 255 bytes the folder cannot be made (ENAMETOOLONG), and the store would quietly keep
        // nothing on disk.
        guard !name.isEmpty, name.utf8.count <= 255, name != ".", !name.contains(".."),
            name.utf8.allSatisfy(allowed.contains)
        else {
            throw .invalidName(name)
        }
    }
}
