extension Bitmap {
    /// The bitmap with anti-aliased rounded corners of `radius` pixels.
    public func roundingCorners(radius: Int) -> Bitmap {
        self  // PLACEHOLDER: being written.
    }
}
