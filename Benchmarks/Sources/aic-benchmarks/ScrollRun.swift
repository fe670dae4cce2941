import AsyncImageCache
import Foundation

/// What one loader did during the scripted flings; a child process prints it as one JSON line.
struct ScrollResult: Codable {
    var loader: String
    var decodesStarted: Int
    var decodeCPUSeconds: Double
    /// The kernel's part of `decodeCPUSeconds`: mostly first touches of fresh memory and file reads.
    var decodeSystemSeconds: Double
    var peakMemoryMB: Double
    var placeholderMeanMs: Double
    var placeholderP95Ms: Double
    var appearances: Int
    var leftBeforeImage: Int
    var frames: Int
    var lateFrames: Int
    var mainWorkMeanMs: Double
    var mainWorkMaxMs: Double
    var onMainThread: Bool
    /// Ours only: of the rows that waited for a decode started after they appeared, the mean time
    /// from appearing to that decode starting (fetch and decode-slot wait), and from the decode
    /// starting to the frame that drew it (decode and main-actor delivery); rows whose decode
    /// started before they appeared (prefetched) are counted apart.
    var waitForDecodeMs: Double?
    var decodeToFrameMs: Double?
    var decodedAfterAppearing: Int?
    var decodedBeforeAppearing: Int?
    /// Ours only: the CPU time libjpeg alone takes to decode each distinct image once at the DCT
    /// scale the store picks for its row (bytes already read, no resize): the floor of ours.
    var libjpegAloneSeconds: Double?
    /// Ours only: the same images decoded and resized to their rows' sizes as the store does it with
    /// every core busy (one thread, rows resized as they decode), bytes already read: what the store's
    /// own steps cost, without its scheduling, file reads and the flings around them.
    var decodeAndResizeSeconds: Double?
    /// Ours only: one of the photos decoded by libjpeg alone, in milliseconds of CPU (median of 5): at
    /// full size, and at the DCT scale its row's request takes.
    var photoFullMs: Double?
    var photoScaledMs: Double?
}

/// Flings through the list at a fixed frame rate on the main actor, making and dropping row images
/// as they enter and leave the screen, and timing each appearance's placeholder.
@MainActor
struct ScrollRun {
    nonisolated static let framesPerSecond = 60
    nonisolated static let framesPerFling = 40
    nonisolated static let restFrames = 10

    let layout: ScrollLayout
    let makeRow: (ScrollLayout.Row) -> any ScrollRowImage
    /// Called every frame after the rows update, with the offset and the velocity in points per
    /// frame (0 at rest); ours prefetches here.
    var onFrame: ((CGFloat, CGFloat) -> Void)?
    /// Called when a row's image is drawn, with the row and when it appeared.
    var onHydrated: ((Int, ContinuousClock.Instant) -> Void)?

    /// 30 flings: 20 down, then 10 back up; each starts at a speed from 6000 to 12000 pt/s that
    /// decays to under 2 % over 40 frames, then the list rests for 10 frames.
    nonisolated static func flings() -> [CGFloat] {
        var random = SplitMix(state: 42)
        return (0..<30).map { index in
            let speed = 6000 + CGFloat(random.unit()) * 6000
            return index < 20 ? speed : -speed
        }
    }

    private struct Visible {
        var row: any ScrollRowImage
        var appearedFrame: Int
        var appearedAt: ContinuousClock.Instant
        var hydrated: Bool
    }

    func run() async -> (
        placeholders: [Double], leftBeforeImage: Int, frames: Int, lateFrames: Int, mainWorkSeconds: [Double]
    ) {
        let clock = ContinuousClock()
        let frameDuration = Duration.nanoseconds(1_000_000_000 / Self.framesPerSecond)
        var visible: [Int: Visible] = [:]
        var placeholders: [Double] = []
        var mainWorkSeconds: [Double] = []
        var leftBeforeImage = 0
        var (frame, lateFrames, offset) = (0, 0, CGFloat(0))
        var deadline = clock.now
        let maxOffset = layout.contentHeight - ScrollLayout.screenHeight
        let decay = CGFloat(0.9)

        func seconds(since appeared: Int) -> Double { Double(frame - appeared) / Double(Self.framesPerSecond) }

        func update() {
            let onScreen = layout.visibleRows(at: offset)
            for (index, entry) in visible where !onScreen.contains(index) {
                if !entry.hydrated {
                    // Left before its image came: it showed the placeholder for as long as it was visible.
                    placeholders.append(seconds(since: entry.appearedFrame))
                    leftBeforeImage += 1
                }
                entry.row.disappear()
                visible[index] = nil
            }
            for index in onScreen where visible[index] == nil {
                visible[index] = Visible(
                    row: makeRow(layout.rows[index]), appearedFrame: frame, appearedAt: clock.now, hydrated: false)
            }
            for (index, entry) in visible where !entry.hydrated && entry.row.hasImage {
                placeholders.append(seconds(since: entry.appearedFrame))
                visible[index]?.hydrated = true
                onHydrated?(index, entry.appearedAt)
            }
        }

        for speed in Self.flings() {
            var velocity = speed / CGFloat(Self.framesPerSecond)  // points per frame
            for step in 0..<(Self.framesPerFling + Self.restFrames) {
                if clock.now > deadline + frameDuration { lateFrames += 1 }
                let moving = step < Self.framesPerFling
                if moving {
                    offset = min(max(0, offset + velocity), maxOffset)
                }
                let workStart = ThreadCPU.seconds()
                update()
                onFrame?(offset, moving ? velocity : 0)
                mainWorkSeconds.append(ThreadCPU.seconds() - workStart)
                if moving { velocity *= decay }
                frame += 1
                deadline += frameDuration
                await Self.nextFrame(at: deadline, clock: clock)
            }
        }
        for entry in visible.values {
            if !entry.hydrated {
                placeholders.append(seconds(since: entry.appearedFrame))
                leftBeforeImage += 1
            }
            entry.row.disappear()
        }
        return (placeholders, leftBeforeImage, frame, lateFrames, mainWorkSeconds)
    }

    /// Resumes at `deadline` from a timer on the main run loop, as a display link ticks on the main
    /// thread. (`Task.sleep` wakes on a worker thread and hops back to the main actor: about 0.15 s
    /// of CPU over the run's 1,500 frames that fell on the threads whose time counts as decode CPU.)
    private static func nextFrame(at deadline: ContinuousClock.Instant, clock: ContinuousClock) async {
        let fireDate = Date(timeIntervalSinceNow: max(0, (deadline - clock.now).seconds))
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let timer = Timer(fire: fireDate, interval: 0, repeats: false) { _ in continuation.resume() }
            RunLoop.main.add(timer, forMode: .common)
        }
    }
}

/// CPU time of the calling thread, and of the whole process.
enum ThreadCPU {
    /// The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID).
    static func seconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// User plus system CPU time of every thread of the process, in seconds.
    static func processSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// System CPU time of every thread but the calling one, in seconds.
    static func otherThreadsSystemSeconds() -> Double {
        func systemSeconds(_ who: Int32) -> Double {
            var usage = rusage()
            getrusage(__rusage_who_t(who), &usage)
            return seconds(usage.ru_stime)
        }
        // RUSAGE_THREAD (1) is a GNU extension Swift does not import by name.
        return systemSeconds(RUSAGE_SELF.rawValue) - systemSeconds(1)
    }

    private static func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
}

/// Memory figures from `/proc/self/status`, in megabytes.
enum ProcessMemory {
    /// The resident set now (`VmRSS`).
    static var residentMB: Double { field("VmRSS") }
    /// The peak resident set since the process started (`VmHWM`).
    static var peakMB: Double { field("VmHWM") }

    private static func field(_ name: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return .nan }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? .nan
            return kilobytes / 1024
        }
        return .nan
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}

extension Array where Element == Double {
    /// The value below which `fraction` of the sorted values fall (nearest rank).
    func percentile(_ fraction: Double) -> Double {
        guard !isEmpty else { return .nan }
        let sorted = self.sorted()
        let rank = Int((fraction * Double(count)).rounded(.up)) - 1
        return sorted[Swift.min(Swift.max(rank, 0), count - 1)]
    }

    var mean: Double { isEmpty ? .nan : reduce(0, +) / Double(count) }
}
