#!/usr/bin/env python3
"""Writes the Swift examples of the documentation into one Swift file that scripts/typecheck type-checks.

The examples are the ```swift blocks of README.md, of the DocC articles and of the `///` comments in
Sources/AsyncImageCache and Sources/AsyncImageCacheUI. Each goes into a scope of its own: examples that
only declare (a view, a function) into an enum, the others into an async function, so that their names
never clash. The names they take as given (`url`, `store`, `bitmap`, a row, a view ...) are declared once
at the top. Examples for UIKit or AppKit are left out, since Linux has neither and the stand-ins cover only
SwiftUI; the script names them.

usage: doc-snippets.py OUTPUT.swift
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The names the examples use without declaring them.
CONTEXT = """
let url = URL(string: "https://example.com/photo.jpg")!
let store = ImageStore.shared
let request = ImageRequest(url: url, targetWidth: 320)
let data = Data()
let header = try! ImageHeader.parse(data)
let bitmap = Bitmap(width: 1, height: 1, pixels: [0, 0, 0, 0])
struct Row { var url: URL; var frame: CGRect = .zero; var height: CGFloat = 0 }
let photo = Row(url: url)
let upcomingRows: [Row] = []
let upcoming: [Row] = []
nonisolated(unsafe) var row = Row(url: url)
let rowWidth: CGFloat = 320
@MainActor final class SomeView { func setNeedsDisplay() {} }
@MainActor let view = SomeView()
@MainActor final class SomeImageView { var image: PlatformImage? }
@MainActor let imageView = SomeImageView()
"""

APPLE_ONLY = re.compile(r"^import (UIKit|AppKit)\b|\bUI[A-Z]\w+|\bNS[A-Z]\w*View\b|\btraitCollection\b", re.M)
APPLE_CONDITION = re.compile(r"#(else)?if canImport\((ImageIO|UIKit|AppKit)\)")
DECLARATION = re.compile(r"^(@MainActor\s+)?(public\s+)?(struct|final class|class|enum|actor|func)\b")


def markdown_blocks(path):
    blocks, current = [], None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if current is None and line.strip() == "```swift":
            current = (number + 1, [])
        elif current is not None and line.strip() == "```":
            blocks.append((path, current[0], current[1], False))
            current = None
        elif current is not None:
            current[1].append(line)
    return blocks


def comment_blocks(path):
    """The examples of a source file; those inside `#if canImport(ImageIO|UIKit|AppKit)` count as Apple's."""
    blocks, current, conditions = [], None, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#if "):
            conditions.append(stripped)
        elif stripped.startswith(("#elseif", "#else")) and conditions:
            conditions[-1] = stripped
        elif stripped.startswith("#endif") and conditions:
            conditions.pop()
        if not stripped.startswith("///"):
            current = None
            continue
        text = stripped[3:]
        text = text[1:] if text.startswith(" ") else text
        if current is None and text.strip() == "```swift":
            current = (number + 1, [])
        elif current is not None and text.strip() == "```":
            apple = any(APPLE_CONDITION.match(condition) for condition in conditions)
            blocks.append((path, current[0], current[1], apple))
            current = None
        elif current is not None:
            current[1].append(text)
    return blocks


def collect():
    blocks = markdown_blocks(ROOT / "README.md")
    for article in sorted((ROOT / "Sources/AsyncImageCache/AsyncImageCache.docc").glob("*.md")):
        blocks += markdown_blocks(article)
    for folder in ("Sources/AsyncImageCache", "Sources/AsyncImageCacheUI"):
        for source in sorted((ROOT / folder).rglob("*.swift")):
            blocks += comment_blocks(source)
    return blocks


def main():
    output = Path(sys.argv[1])
    imports = {"import AsyncImageCache", "import Foundation"}
    scopes, skipped = [], []
    for index, (path, line, lines, in_apple_code) in enumerate(collect()):
        where = f"{path.relative_to(ROOT)}:{line}"
        code = "\n".join(lines)
        if in_apple_code or APPLE_ONLY.search(code):
            skipped.append(where)
            continue
        imports.update(text for text in lines if text.startswith("import "))
        top_level = [
            text
            for text in lines
            if text and not text[0].isspace() and not text.startswith(("import ", "//", "}", ")"))
        ]
        declares_only = all(DECLARATION.match(text) or text.startswith("@") for text in top_level)
        effects = "async throws" if "await" in code else "throws"
        opening = f"enum Snippet{index} {{" if declares_only else f"@MainActor func snippet{index}() {effects} {{"
        # Errors name the example's own file and line. Its import lines became blank lines, keeping the count.
        lines = ["" if text.startswith("import ") else text for text in lines]
        location = f'#sourceLocation(file: "{path.relative_to(ROOT)}", line: {line})'
        scopes.append(f"{opening}\n{location}\n" + "\n".join(lines) + "\n#sourceLocation()\n}\n")
    imports = sorted(imports)
    output.write_text("\n".join(imports) + "\n" + CONTEXT + "\n" + "\n".join(scopes))
    print(f"doc-snippets: {len(scopes)} examples to type-check; left out for UIKit or AppKit: {len(skipped)}")
    for where in skipped:
        print(f"  {where}")


main()
