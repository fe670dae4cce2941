// swift-tools-version: 6.0
import PackageDescription

// Benchmarks live apart from the tests: `swift run -c release --package-path Benchmarks aic-benchmarks`.
// The thumbnail benchmark calls libvips in process as its reference (Debian: libvips-dev; see
// scripts/benchmark-thumbnails, which installs it).
let package = Package(
    name: "AsyncImageCacheBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "AsyncImageCache", path: "..")],
    targets: [
        .systemLibrary(name: "CBenchmarkSupport", path: "Sources/CBenchmarkSupport"),
        .systemLibrary(name: "CVips", path: "Sources/CVips", pkgConfig: "vips"),
        // vips_thumbnail() is variadic, which Swift cannot call: a few lines of C call it instead.
        // A C target gets CVips's headers but not its `link` (only a module import autolinks).
        .target(
            name: "VipsReference",
            dependencies: [.target(name: "CVips", condition: .when(platforms: [.linux]))],
            linkerSettings: [
                .linkedLibrary("vips", .when(platforms: [.linux])),
                .linkedLibrary("gobject-2.0", .when(platforms: [.linux])),
                .linkedLibrary("glib-2.0", .when(platforms: [.linux])),
            ]
        ),
        .executableTarget(
            name: "aic-benchmarks",
            dependencies: [
                .product(name: "AsyncImageCache", package: "AsyncImageCache"),
                .target(name: "CBenchmarkSupport", condition: .when(platforms: [.linux])),
                .target(name: "VipsReference", condition: .when(platforms: [.linux])),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
