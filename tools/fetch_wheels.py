"""Download the wheels that blender_manifest.toml lists into wheels/, each checked by sha256.

Owns the wheel download for `make extension` and nothing else. The file names come from the
manifest (the one list of wheels); the expected hashes come from tools/wheels.sha256. A wheel
already present with the right hash is kept, so a second run needs no network.

    python tools/fetch_wheels.py [--repo DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HASH_FILE = Path(__file__).resolve().parent / "wheels.sha256"


class FetchError(RuntimeError):
    """A wheel could not be listed, downloaded or verified; the message names the file."""


@dataclass(frozen=True)
class WheelName:
    """The parts of a wheel file name (PEP 427) that pip needs to download it for another platform."""

    filename: str
    distribution: str
    version: str
    python_tag: str
    abi_tag: str
    platform_tags: tuple[str, ...]

    @classmethod
    def parse(cls, filename: str) -> "WheelName":
        stem = filename.removesuffix(".whl")
        parts = stem.split("-")
        if stem == filename or len(parts) not in (5, 6):
            raise FetchError(
                f"{filename}: not a wheel file name; expected "
                "'{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl'"
            )
        return cls(
            filename=filename,
            distribution=parts[0],
            version=parts[1],
            python_tag=parts[-3],
            abi_tag=parts[-2],
            platform_tags=tuple(parts[-1].split(".")),
        )

    def pip_download_args(self) -> list[str]:
        """Arguments for `pip download` that select exactly this wheel's platform, ABI and Python."""
        if not (self.python_tag.startswith("cp") and self.python_tag[2:].isdigit()):
            raise FetchError(f"{self.filename}: expected a CPython tag such as 'cp311', got {self.python_tag!r}")
        digits = self.python_tag[2:]
        args = [
            "--only-binary=:all:",
            "--no-deps",
            "--implementation", "cp",
            "--python-version", f"{digits[0]}.{digits[1:]}",
            "--abi", self.abi_tag,
        ]
        for tag in self.platform_tags:
            args += ["--platform", tag]
        return args + [f"{self.distribution}=={self.version}"]


def manifest_wheels(repo: Path) -> list[Path]:
    """Wheel paths listed in `repo`/blender_manifest.toml, relative to `repo`."""
    manifest_path = repo / "blender_manifest.toml"
    with open(manifest_path, "rb") as fh:
        manifest = tomllib.load(fh)
    wheels = manifest.get("wheels", [])
    if not isinstance(wheels, list) or not all(isinstance(w, str) for w in wheels):
        raise FetchError(f"{manifest_path}: 'wheels' must be a list of paths, got {wheels!r}")
    return [Path(w) for w in wheels]


def expected_hashes(path: Path = HASH_FILE) -> dict[str, str]:
    """Map wheel file name -> sha256 hex digest, read from a `sha256sum`-format file."""
    hashes = {}
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            raise FetchError(f"{path}:{lineno}: expected '<sha256>  <file name>', got {line!r}")
        hashes[name.strip()] = digest
    return hashes


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(target: Path, digest: str) -> bool:
    """Make `target` hold the wheel named by its file name, with sha256 `digest`.

    Returns True when it was downloaded, False when a good copy was already there.
    Raises FetchError when pip fails or the download has another name or hash.
    """
    if target.exists() and sha256(target) == digest:
        return False
    wheel = WheelName.parse(target.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="symplex-wheel-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", tmp, *wheel.pip_download_args()]
        result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if result.returncode != 0:
            raise FetchError(f"{target.name}: pip download failed:\n{result.stderr.strip()}")
        downloaded = Path(tmp) / target.name
        if not downloaded.exists():
            got = ", ".join(p.name for p in Path(tmp).iterdir()) or "nothing"
            raise FetchError(f"{target.name}: pip downloaded {got} instead; fix the name in blender_manifest.toml")
        got_digest = sha256(downloaded)
        if got_digest != digest:
            raise FetchError(
                f"{target.name}: sha256 {got_digest} does not match {digest} in {HASH_FILE.name}"
            )
        shutil.move(downloaded, target)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        hashes = expected_hashes()
        for rel in manifest_wheels(args.repo):
            if rel.name not in hashes:
                raise FetchError(f"{rel.name}: listed in blender_manifest.toml but has no hash in {HASH_FILE}")
            fetched = fetch_wheel(args.repo / rel, hashes[rel.name])
            print(f"{'downloaded' if fetched else 'up to date'}: {rel}")
    except FetchError as exc:
        print(f"fetch_wheels: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
