"""Provide the Iceberg Spark runtime jars without Maven Central.

The Iceberg 1.10 Spark runtime comes from the PyPI package
``snowpark-connect-deps-iceberg``. That copy lacks the relocated Jackson
classes (``org.apache.iceberg.shaded.com.fasterxml.jackson.*``) Iceberg needs
to write table metadata, so the Jackson jars shipped with pyspark are
relocated into that package name with Debian's jarjar.

Idempotent: nothing is done when the jars are already in place.
Users who can reach Maven Central may skip all this: see the README
("Iceberg from Maven").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lakehouse_cdc import PROJECT_ROOT

ICEBERG_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
SHADED_JAR = "iceberg-shaded-deps.jar"
JACKSON = ("jackson-core", "jackson-databind", "jackson-annotations", "jackson-datatype-jsr310")
JARJAR = Path("/usr/share/java/jarjar.jar")
RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"


def jars_dir() -> Path:
    return Path(os.environ.get("LAKEHOUSE_JARS_DIR", PROJECT_ROOT / ".jars"))


def jar_paths() -> list[Path]:
    """The jars to put on ``spark.jars``, in order."""
    d = jars_dir()
    return [d / ICEBERG_JAR, d / SHADED_JAR]


def _iceberg_source() -> Path:
    import snowpark_connect_deps_iceberg as pkg

    return Path(pkg.__file__).parent / "jars" / ICEBERG_JAR


def _jackson_sources() -> list[Path]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = []
    for name in JACKSON:
        matches = sorted(p for p in jars.glob(f"{name}-2.*.jar"))
        if not matches:
            raise SystemExit(f"pyspark ships no {name} jar in {jars}")
        found.append(matches[-1])
    return found


def _merge_jars(sources: list[Path], target: Path) -> None:
    seen: set[str] = set()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for src in sources:
            with zipfile.ZipFile(src) as zin:
                for item in zin.infolist():
                    # signatures and per-jar manifests would not match the merge
                    if item.filename in seen or item.filename.upper().startswith("META-INF/"):
                        continue
                    seen.add(item.filename)
                    out.writestr(item, zin.read(item.filename))


def ensure_jars(quiet: bool = False) -> list[Path]:
    d = jars_dir()
    d.mkdir(parents=True, exist_ok=True)
    iceberg, shaded = jar_paths()
    if not iceberg.exists():
        shutil.copyfile(_iceberg_source(), iceberg)
        if not quiet:
            print(f"copied {ICEBERG_JAR} into {d}", file=sys.stderr)
    if not shaded.exists():
        if not JARJAR.exists():
            raise SystemExit(
                f"{JARJAR} is missing: install Debian's libjarjar-java "
                "(scripts/bootstrap.sh does this) to relocate the Jackson classes"
            )
        with tempfile.TemporaryDirectory() as tmp:
            merged = Path(tmp) / "jackson.jar"
            rules = Path(tmp) / "rules.txt"
            _merge_jars(_jackson_sources(), merged)
            rules.write_text(RULE)
            partial = Path(tmp) / SHADED_JAR
            subprocess.run(
                ["java", "-jar", str(JARJAR), "process", str(rules), str(merged), str(partial)],
                check=True,
                capture_output=True,
            )
            shutil.move(partial, shaded)
        if not quiet:
            print(f"wrote relocated Jackson classes to {shaded}", file=sys.stderr)
    return [iceberg, shaded]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lakehouse_cdc.jars",
        description="Put the Iceberg Spark runtime and its relocated Jackson classes "
        "into .jars/ (or $LAKEHOUSE_JARS_DIR).",
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing when all is in place")
    args = parser.parse_args(argv)
    for path in ensure_jars(quiet=args.quiet):
        if not args.quiet:
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
