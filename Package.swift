// swift-tools-version: 6.0
import PackageDescription

// The Linux codecs come from Debian's packages (see scripts/install-system-libraries).
let linux: TargetDependencyCondition? = .when(platforms: [.linux])

// The `aic` tool and the test suite are built on Linux only: they work with the package's own `Bitmap`
// (on Apple platforms `PlatformImage` is `UIImage`/`NSImage`), its libjpeg and libpng encoders and the
// Linux decoders, none of which an Apple build has. There the package is its two libraries.
#if os(Linux)
let linuxProducts: [Product] = [.executable(name: "aic", targets: ["aic"])]
let linuxTargets: [Target] = [
    // libwebp's encoder, which only the tests use, to make WebP files of any size.
    .systemLibrary(name: "CWebPEncode", path: "Tests/CWebPEncode"),
    // Child processes started with posix_spawn, not Foundation's Process (whose run() can crash the
    // parent in Swift 6.3.1): aic's relaunch and the tests' helpers. In no product; its API is `package`.
    .target(name: "Spawn"),
    .executableTarget(name: "aic", dependencies: ["AsyncImageCache", "Spawn"]),
    .testTarget(
        name: "AsyncImageCacheTests",
        dependencies: ["AsyncImageCache", "CResample", "Spawn", .target(name: "CWebPEncode", condition: linux)],
        resources: [.copy("Fixtures")]
    ),
]
#else
let linuxProducts: [Product] = []
let linuxTargets: [Target] = []
#endif

// Xcode (and SwiftPM's swiftbuild build system) ignore `condition:` on target dependencies: an iOS or
// macOS build would see the codec modules, so `canImport(CPNG)` and the like would hold there and pull
// in the Linux decoders (png.h, webp, gif, heif not found; cjpeg_* undefined). Declared only where
// the manifest runs on Linux; an Apple build decodes with ImageIO.
#if os(Linux)
let linuxCodecs: [Target.Dependency] = [
    .target(name: "CJPEGSupport", condition: linux),
    .target(name: "CPNGSupport", condition: linux),
    .target(name: "CPNG", condition: linux),
    .target(name: "CWebP", condition: linux),
    .target(name: "CGIF", condition: linux),
    .target(name: "CHEIF", condition: linux),
    .target(name: "CXattr", condition: linux),
]
#else
let linuxCodecs: [Target.Dependency] = []
#endif

let package = Package(
    name: "AsyncImageCache",
    platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "AsyncImageCache", targets: ["AsyncImageCache"]),
        .library(name: "AsyncImageCacheUI", targets: ["AsyncImageCacheUI"]),
    ] + linuxProducts,
    targets: [
        .systemLibrary(name: "CJPEG", path: "Sources/CJPEG"),
        .systemLibrary(name: "CPNG", path: "Sources/CPNG"),
        .systemLibrary(name: "CWebP", path: "Sources/CWebP"),
        .systemLibrary(name: "CGIF", path: "Sources/CGIF"),
        .systemLibrary(name: "CHEIF", path: "Sources/CHEIF"),
        .systemLibrary(name: "CXattr", path: "Sources/CXattr"),
        // libjpeg reports errors through a callback that must not return; this C target wraps
        // every libjpeg call in setjmp so that a corrupt file becomes an error code, never exit().
        // A C target gets the headers of CJPEG but not its `link "jpeg"` (only a module import autolinks),
        // so it names the library itself.
        .target(
            name: "CJPEGSupport",
            dependencies: [.target(name: "CJPEG", condition: linux)],
            linkerSettings: [.linkedLibrary("jpeg", .when(platforms: [.linux]))]
        ),
        // libpng's simplified API cannot choose the filter or zlib's strategy; this C target uses
        // the full API for writing, with its setjmp error handling kept in C.
        .target(
            name: "CPNGSupport",
            dependencies: [.target(name: "CPNG", condition: linux)],
            linkerSettings: [.linkedLibrary("png16", .when(platforms: [.linux]))]
        ),
        // The fixed-point resampling kernels, with SSE2 and AVX2 versions chosen at run time.
        .target(name: "CResample"),
        // The flag that asks a running decode to stop, polled atomically from Swift and from C.
        .target(name: "CAtomicFlag"),
        // SHA-256 of cache keys (the disk tier's file names), with the processor's SHA instructions
        // where it has them.
        .target(name: "CSHA256"),
        .target(
            name: "AsyncImageCache",
            dependencies: ["CAtomicFlag", "CResample", "CSHA256"] + linuxCodecs
        ),
        // SwiftUI's CachedImage: a thin binding of the portable CachedImageModel (empty on Linux).
        .target(name: "AsyncImageCacheUI", dependencies: ["AsyncImageCache"]),
    ] + linuxTargets,
    swiftLanguageModes: [.v6]
)
