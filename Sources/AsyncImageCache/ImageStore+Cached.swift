import Foundation

extension ImageStore {
    /// The ready-to-draw image for `request` if memory has one; `nil` otherwise.
    ///
    /// A lookup under a lock: no file system access (not even for `file:` URLs, whose freshness
    /// the next ``load(_:completion:)`` checks), safe to call during layout. When the exact
    /// variant is missing, a larger decode of the same URL that looks the same at this width
    /// (same corners in proportion, or none) is returned: draw it scaled to the frame.
    public func cachedImage(for request: ImageRequest) -> PlatformImage? {
        guard let hit = variants.value(for: request) else { return nil }
        markDiskUse(of: request.url, hit.diskUse)
        return hit.image.value
    }

    /// The natural pixel size of the image at `url` as displayed (EXIF orientation applied),
    /// without decoding it; `nil` for a remote image whose size memory does not hold and whose disk file
    /// the store never kept (a `no-store` response, one over the disk budget, a failed write) or has
    /// removed since, for a URL of another scheme that memory does not hold (a custom ``DataLoading``'s:
    /// never kept on disk), and for a `file:` or `data:` URL whose header cannot be read.
    ///
    /// The lookup goes size memo -> memory originals -> the cached file's extended attribute (one
    /// `getxattr`) -> the cached file's header, after which a missing attribute is written back on a
    /// background queue (the call never waits for that write). So a
    /// cached image's size is known on the first frame after a relaunch. For `file:` and `data:`
    /// URLs the header of the file or payload is read, the first time only: a `file:` URL's size in
    /// memory is answered without looking at the file, so a file rewritten since keeps its old size
    /// here until the next load of it, which checks the file's version (or ``clearMemory()``).
    public func cachedPixelSize(for url: URL) -> CGSize? {
        pixelSize(for: url)?.cgSize
    }

    /// The original bytes of the image at `url` and its displayed pixel size, from memory or the
    /// disk tier; `nil` when neither has them. The bytes are exactly what the source sent (the
    /// store never transcodes), for copying or sharing. For a `file:` URL they are those its last load
    /// read: the file is not looked at, and one rewritten since is seen by the next load.
    ///
    /// Unlike ``cachedImage(for:)`` it may touch the file system: a remote URL that memory misses has
    /// its whole file read from the disk tier, on the calling thread, and kept in memory for the next
    /// call. During layout, ask ``cachedPixelSize(for:)`` instead, which reads at most a header.
    public func cachedOriginalBytes(for url: URL) -> (data: Data, pixelSize: CGSize)? {
        if let original = originals.value(forKey: url.cacheKey) {
            markDiskUse(of: url, original.diskUse)
            return (original.data, original.pixelSize.cgSize)
        }
        let key = url.cacheKey
        let (generation, replacement) = (disk.generation, replacementCount(ofKey: key))
        guard url.isRemote, let entry = disk.stored(for: url), let header = try? ImageHeader.parse(entry.data) else {
            return nil
        }
        // Its caching facts come into memory with it, as with a load's read of the file: once the file
        // is gone (trimmed, purged), a load served these bytes from memory would find none and take
        // them for fresh until evicted, never revalidated. They are the file's own when memory's name
        // another response (another store or process wrote the file since), as a load takes them; the
        // images of other bytes go with that step.
        let metadata = cacheMetadata(forDiskRead: entry, of: url).facts
        let data = entry.data
        let original = OriginalImage(data: data, header: header, fileStamp: nil)
        // Handed out, but not kept when a `removeAll()` or a revalidation's new image came since the
        // file was read.
        _ = ifCurrent(generation: generation, replacement: replacement, forKey: key) {
            keepOriginal(original, forKey: key)
            memoize(original.pixelSize, forKey: key)
            restoreCacheMetadata(metadata, for: url)  // a `clearMemory()` may have emptied them since
        }
        return (data, original.pixelSize.cgSize)
    }

    /// After a memory hit on `url`'s image, marks its disk file used as a read would: otherwise an image
    /// that memory serves all day keeps the date of its last disk read, and a trim removes it before
    /// colder files. Throttled by `throttle` (a lock and a clock read per hit, and for `file:` URLs
    /// nothing more), and dated on the disk queue, never on this thread.
    func markDiskUse(of url: URL, _ throttle: DiskUseThrottle) {
        guard throttle.claim(), url.isRemote else { return }
        disk.markUsed(url)
    }

    func pixelSize(for url: URL) -> PixelSize? {
        let key = url.cacheKey
        // Every original kept in memory also has its size in the memo, so one lookup answers both.
        if let size = sizeMemo.value(forKey: key) ?? originals.value(forKey: key)?.pixelSize {
            count { $0.sizesFromMemory += 1 }
            return size
        }
        // A size read from a file that a `removeAll()`, a `removeImage(for:)` or a revalidation's new image
        // has removed or replaced since is answered, but neither remembered nor written onto the new file.
        let (generation, replacement) = (disk.generation, replacementCount(ofKey: key))
        if url.isRemote {
            // The attribute, else the header (the file's path made once for both).
            let stored = disk.storedPixelSize(forKey: key) { Self.readHeader(from: $0)?.displaySize }
            if case .attribute(let size)? = stored {
                count { $0.sizesFromAttribute += 1 }
                _ = ifCurrent(generation: generation, replacement: replacement, forKey: key) {
                    memoize(size, forKey: key)
                }
                return size
            }
            guard case .header(let size, let file)? = stored else { return nil }
            count { $0.sizesFromHeader += 1 }
            let isCurrent =
                ifCurrent(generation: generation, replacement: replacement, forKey: key) {
                    memoize(size, forKey: key)
                    return true
                } ?? false
            // Written back on the disk queue, not during layout: only while the bytes read are still current,
            // and onto the file read (another process may rename a new image into its place). Asked there, the
            // check needs no lock held through the write: a store's file appears at the path only by a commit,
            // and the commits of every store on the folder go on that queue, one at a time; a file removed
            // meanwhile takes no write. (Held, the lock kept this thread's next lookups waiting.)
            if isCurrent {
                disk.writeLater { [self] in
                    guard ifCurrent(generation: generation, replacement: replacement, forKey: key, { true }) != nil
                    else { return }
                    disk.setPixelSize(size, for: url, readFrom: file)
                }
            }
            return size
        }
        if url.isLocalFileURL {
            return localFileSize(for: url, key: key, generation: generation, replacement: replacement)
        }
        if url.scheme?.lowercased() == "data" {
            // Only as much of the payload as the header takes is decoded, not the whole image.
            let text = url.absoluteString
            guard let header = Self.readHeader(from: { DataURL.payloadPrefix(of: text, maxLength: $0) }) else {
                return nil
            }
            return remember(header.displaySize, forKey: key, generation: generation, replacement: replacement)
        }
        return nil
    }

    /// The size from the header of the local file `url` names, remembered with the version read unless the
    /// file changed meanwhile.
    private func localFileSize(for url: URL, key: String, generation: Int, replacement: Int) -> PixelSize? {
        guard let path = try? FileSystemPath(url) else { return nil }
        // The version read. A regular file named directly (most) is opened without following a link and its
        // version taken from the open descriptor before and after the read (`nil` when they differ: the file
        // changed while it was read), with no `stat` by path; a symbolic link (or a file that first open
        // missed) is statted by path before its read, as a load does. A larger header's later reads open the
        // path again, and are checked by path below.
        var stamp: FileStamp?
        var isCheckedByDescriptor = false
        var isFirstRead = true
        let header = Self.readHeader { length in
            isCheckedByDescriptor = false
            if isFirstRead {
                isFirstRead = false
                let found = DiskStore.prefixAndStamp(ofRegularFileAt: path, maxLength: length) {
                    configuration.localHeaderReadObserver?(url)
                }
                if let found {
                    (stamp, isCheckedByDescriptor) = (found.stamp, true)
                    return found.data
                }
                stamp = fileStamp(at: path)
            }
            return DiskStore.prefix(ofFileAt: path, maxLength: length)
        }
        guard let header else { return nil }
        count { $0.sizesFromHeader += 1 }
        _ = ifCurrent(generation: generation, replacement: replacement, forKey: key) {
            // A header read while the file changed is answered, not remembered: it may be of either version.
            guard let stamp else { return }
            // The version a load last recorded, unchanged through the read: remembered as it stands. (Were the
            // path to name another file by now, that is a change after this lookup, which the next load sees.)
            if isCheckedByDescriptor, localFileVersions.value(forKey: key) == stamp {
                memoize(header.displaySize, forKey: key)
                return
            }
            // Otherwise statted again under the lock a load takes to record the version it reads: a version
            // recorded before and different is older than the one still there now.
            guard stamp == fileStamp(at: path) else { return }
            // Recorded as the latest, a decode of an older version that lands later is delivered but not
            // kept, and cannot take the size back to the old one.
            if localFileVersions.value(forKey: key) != stamp {
                recordVersion(stamp, forKey: key)
            }
            memoize(header.displaySize, forKey: key)
        }
        return header.displaySize
    }

    /// The size in the disk-tier file's extended attribute: one `getxattr`, no file read.
    func sizeFromAttribute(for url: URL) -> PixelSize? {
        disk.pixelSize(for: url)
    }

    /// The size parsed from the disk-tier file's header, reading only the first kilobytes, and the
    /// file it was read from.
    func sizeFromHeader(for url: URL) -> (size: PixelSize, file: DiskStore.FileIdentity)? {
        disk.headerPixelSize(forKey: url.cacheKey) { Self.readHeader(from: $0)?.displaySize }
    }

    private func remember(_ size: PixelSize, forKey key: String, generation: Int, replacement: Int) -> PixelSize {
        count { $0.sizesFromHeader += 1 }
        _ = ifCurrent(generation: generation, replacement: replacement, forKey: key) { memoize(size, forKey: key) }
        return size
    }

    /// Parses a header from growing prefixes of a file: 16 KiB first, doubling while the header
    /// runs past the prefix (a JPEG's EXIF block can be large), up to 16 MiB.
    static func readHeader(from prefix: (Int) -> Data?) -> ImageHeader? {
        var length = 16 * 1024
        while length <= 16 * 1024 * 1024 {
            guard let data = prefix(length) else { return nil }
            do {
                return try ImageHeader.parse(data)
            } catch  where error.reason == .truncated && data.count == length {
                length *= 2
            } catch {
                return nil
            }
        }
        return nil
    }
}
