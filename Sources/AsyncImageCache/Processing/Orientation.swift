extension Bitmap {
    /// The bitmap turned upright according to `orientation`.
    public func oriented(_ orientation: ImageOrientation) -> Bitmap {
        self  // PLACEHOLDER: being written.
    }
}
