extension Bitmap {
    /// The bitmap resampled to exactly `size`.
    public func resized(to size: PixelSize) -> Bitmap {
        self  // PLACEHOLDER: being written.
    }
}
