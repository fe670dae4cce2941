// swift-tools-version: 6.0
import PackageDescription

// Benchmarks live apart from the tests: `swift run -c release --package-path Benchmarks aic-benchmarks`.
let package = Package(
    name: "AsyncImageCacheBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "AsyncImageCache", path: "..")],
    targets: [
        .systemLibrary(name: "CBenchmarkSupport", path: "Sources/CBenchmarkSupport"),
        .executableTarget(
            name: "aic-benchmarks",
            dependencies: [
                .product(name: "AsyncImageCache", package: "AsyncImageCache"),
                .target(name: "CBenchmarkSupport", condition: .when(platforms: [.linux])),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
