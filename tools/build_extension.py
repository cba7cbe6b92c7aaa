"""Build the per-platform Symplex extension packages (dist/symplex-<version>-<platform>.zip).

Owns packaging only: it validates blender_manifest.toml with Blender's own `blender_ext.py`
(shipped inside the bpy wheel), builds one zip per platform with `--split-platforms`, adds the
locally compiled kernel library to the host platform's zip, and validates every zip it wrote.
Wheels must already be in wheels/ (tools/fetch_wheels.py); kernels are built by `make kernels`.

    python tools/build_extension.py [--out dist] [--blender-ext PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VALID_TAGS = Path(__file__).resolve().parent / "valid_tags.json"
# Compiled kernels (`make kernels`); they can only run on the platform that built them.
NATIVE_LIBS = ("addon/solver/native/libsymplex_kernels.so",)


class BuildError(RuntimeError):
    """Packaging failed; the message says which step and file."""


def find_blender_ext() -> Path:
    """Path of blender_ext.py inside the bpy package importable from this interpreter."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(
            f"bpy is not installed for {sys.executable}; run `make venv` and use .venv/bin/python, "
            "or pass --blender-ext"
        )
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
        if found:
            return found[-1]
    raise BuildError(f"no blender_ext.py under {list(spec.submodule_search_locations)}; pass --blender-ext")


def host_platform() -> str:
    """This machine as a Blender extension platform name: linux-x64, macos-arm64, windows-x64..."""
    system = {"linux": "linux", "darwin": "macos", "windows": "windows"}.get(platform.system().lower())
    machine = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}.get(
        platform.machine().lower()
    )
    if system is None or machine is None:
        raise BuildError(f"unsupported build host {platform.system()} {platform.machine()}")
    return f"{system}-{machine}"


def package_path(out_dir: Path, manifest: dict, platform_name: str) -> Path:
    """The zip `blender_ext.py build --split-platforms` writes for `platform_name`."""
    return out_dir / f"{manifest['id']}-{manifest['version']}-{platform_name.replace('-', '_')}.zip"


def run_blender_ext(blender_ext: Path, *args: str) -> None:
    cmd = [sys.executable, str(blender_ext), *args]
    result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"`blender_ext.py {args[0]}` failed:\n{(result.stdout + result.stderr).strip()}")


def build(repo: Path, out_dir: Path, blender_ext: Path) -> list[Path]:
    """Validate, build every platform's zip into `out_dir` and return their paths.

    The kernel libraries in NATIVE_LIBS that exist are added to the host platform's zip only.
    Raises BuildError when a wheel is missing or Blender's validator rejects the manifest or a zip.
    """
    with open(repo / "blender_manifest.toml", "rb") as fh:
        manifest = tomllib.load(fh)
    missing = [w for w in manifest.get("wheels", []) if not (repo / w).is_file()]
    if missing:
        raise BuildError(f"missing wheels {missing}; run `python tools/fetch_wheels.py` (or `make wheels`)")

    valid_tags = f"--valid-tags={VALID_TAGS}"
    run_blender_ext(blender_ext, "validate", valid_tags, str(repo))

    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(f"{manifest['id']}-*.zip"):
        stale.unlink()
    run_blender_ext(
        blender_ext, "build", "--split-platforms", valid_tags,
        "--source-dir", str(repo), "--output-dir", str(out_dir),
    )
    packages = [package_path(out_dir, manifest, p) for p in manifest["platforms"]]
    for package in packages:
        if not package.is_file():
            raise BuildError(f"blender_ext.py build did not write {package}")

    host = host_platform()
    if host in manifest["platforms"]:
        with zipfile.ZipFile(package_path(out_dir, manifest, host), "a", zipfile.ZIP_DEFLATED) as zf:
            for rel in NATIVE_LIBS:
                if (repo / rel).is_file():
                    zf.write(repo / rel, rel)

    for package in packages:
        run_blender_ext(blender_ext, "validate", valid_tags, str(package))
    return packages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="output directory (default: dist/)")
    parser.add_argument("--repo", type=Path, default=REPO, help="extension source (default: this checkout)")
    parser.add_argument("--blender-ext", type=Path, help="blender_ext.py to use (default: the one in bpy)")
    args = parser.parse_args(argv)
    try:
        blender_ext = args.blender_ext or find_blender_ext()
        for package in build(args.repo.resolve(), args.out.resolve(), blender_ext):
            print(f"built {package} ({package.stat().st_size / 1e6:.1f} MB)")
    except BuildError as exc:
        print(f"build_extension: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
