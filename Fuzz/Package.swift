// swift-tools-version: 6.0
import PackageDescription

// libFuzzer targets for the header reader and the decoders. A separate package so that the main
// build never sees sanitizer flags; `scripts/fuzz` builds it with
// `-sanitize=fuzzer,address` and runs each target for a fixed number of executions.
let package = Package(
    name: "AsyncImageCacheFuzz",
    dependencies: [.package(name: "AsyncImageCache", path: "..")],
    targets: [
        .target(name: "CFuzzerDriver"),
        .executableTarget(
            name: "ImageFuzzer",
            dependencies: ["CFuzzerDriver", .product(name: "AsyncImageCache", package: "AsyncImageCache")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
