"""What a Spark cluster's executors need to run the lab: a packed environment and the package.

The executors run :func:`groupcoord.lab.runs.run_one`, so they import ``groupcoord`` and its
dependencies (kio, msgpack, google-re2 — compiled extensions — and pyarrow for ``mapInArrow``).
Locally they run the driver's own interpreter; on a cluster their Python is whatever the node
has. Spark's documented way to ship a Python environment ("Python Package Management", "Using
Virtualenv") is an archive of a virtualenv packed with ``venv-pack``, sent through
``spark.archives`` (``env.tar.gz#environment``) and run as ``./environment/bin/python``
(``spark.pyspark.python``). This module builds that archive from the driver's own virtualenv,
and a zip of the ``groupcoord`` package the driver imported (sent with ``addPyFile`` /
``--py-files``):

- **Only what executors import.** The archive holds the distributions that ``groupcoord``
  requires (its ``Requires-Dist`` without extras, transitively) plus :data:`EXECUTOR_EXTRA`
  (pyarrow), and the interpreter links. Everything else of a development virtualenv (pytest,
  mypy, matplotlib, confluent-kafka, ...) stays out; so do pyspark and py4j (:data:`WORKER_PROVIDED`),
  490 MB that every Spark worker already has: its ``SPARK_HOME/python/lib/pyspark.zip`` and
  ``py4j-*.zip`` come first on the Python workers' path, whatever the archive holds.
- **The package travels as a zip, never in the archive.** venv-pack refuses a virtualenv with
  an editable install (``pip install -e``: a ``.pth`` pointing outside the environment), which
  is how the project is developed; and the package changes at every commit while its
  dependencies rarely do. So ``groupcoord`` (the directory the driver imported it from, with
  its package data) is zipped separately (``zipimport`` reads it; package data is read through
  ``importlib.resources``), and the archive is packed from our file list with venv-pack's
  ``Packer`` (its relinking of the interpreter, shebang rewriting and activate scripts), which
  skips venv-pack's editable check because the editable package is not in the list.
- **Cached.** The archive's name is a hash of what goes in (every file's path, size and
  modification time, the interpreter, venv-pack's version and the options): a second run with
  the same environment reuses it (``ShippedEnv.packed`` is False) instead of packing again.
  Archives live in :func:`default_cache_dir` (``$GROUPCOORD_LAB_CACHE``, else
  ``$XDG_CACHE_HOME/groupcoord/lab``, else ``~/.cache/groupcoord/lab``); the newest
  :data:`KEEP_ARCHIVES` are kept.

The archive's ``bin/python`` is a link to the driver's base interpreter (venv-pack does not
copy Python): nodes need the same Python version at the same path, or give ``python_prefix``
(venv-pack's ``--python-prefix``: where Python lives on the nodes), and the same OS and CPU
architecture for the compiled extensions. :mod:`groupcoord.lab.probe` checks an executor before
a sweep and says which of these failed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import logging
import os
import re
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Distributions the executors import beyond ``groupcoord``'s own requirements.
EXECUTOR_EXTRA: tuple[str, ...] = ("pyarrow",)
#: Distributions every Spark worker provides to its Python workers (left out of the archive).
WORKER_PROVIDED: frozenset[str] = frozenset({"pyspark", "py4j", "groupcoord"})
#: How many packed archives the cache keeps (the newest by modification time).
KEEP_ARCHIVES = 3
#: gzip level of the archive: 1 packs about twice as fast as venv-pack's default 4 for 9 %
#: more bytes (66 MB in about 5 s against 60 MB in 9-10 s: docs/lab.md "On a cluster").
COMPRESS_LEVEL = 1
#: The name executors see the unpacked archive under (``spark.archives`` fragment).
ARCHIVE_ALIAS = "environment"
#: Bumped when the archive's layout changes, so old cached archives are not reused.
_LAYOUT = "1"


class ShipError(Exception):
    """The environment cannot be packed; the message says why and what to do instead."""


@dataclass(slots=True, frozen=True)
class ShippedEnv:
    """A packed environment and the package zip, ready for ``spark.archives`` / ``addPyFile``."""

    archive: Path
    package_zip: Path
    #: True when this call packed the archive, False when it came from the cache.
    packed: bool
    pack_s: float
    distributions: tuple[str, ...]

    @property
    def python(self) -> str:
        """The executors' interpreter inside the unpacked archive."""
        return f"./{ARCHIVE_ALIAS}/bin/python"

    def spark_conf(self) -> dict[str, str]:
        """The settings a new session needs (the package zip is added after it starts)."""
        return {"spark.archives": f"{self.archive.as_uri()}#{ARCHIVE_ALIAS}",
                "spark.pyspark.python": self.python}

    def submit_args(self) -> list[str]:
        """The same as ``spark-submit`` options, for a driver in client mode on this machine
        (spark-submit runs the driver with ``spark.pyspark.python`` unless
        ``spark.pyspark.driver.python`` says otherwise: this interpreter)."""
        return ["--archives", f"{self.archive}#{ARCHIVE_ALIAS}",
                "--conf", f"spark.pyspark.python={self.python}",
                "--conf", f"spark.pyspark.driver.python={sys.executable}",
                "--py-files", str(self.package_zip)]


def default_cache_dir() -> Path:
    env = os.environ.get("GROUPCOORD_LAB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groupcoord" / "lab"


def venv_prefix() -> Path:
    """The driver's virtualenv; :class:`ShipError` when the driver does not run in one."""
    if sys.prefix == sys.base_prefix or not (Path(sys.prefix) / "pyvenv.cfg").exists():
        raise ShipError(
            f"the driver's Python ({sys.executable}) is not a virtualenv, so there is no "
            f"environment to pack for the executors: run groupcoord from a virtualenv, or pack "
            f"one yourself and pass it with --archive (docs/lab.md \"On a cluster\")")
    return Path(sys.prefix)


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def executor_distributions(roots: tuple[str, ...] | None = None) -> list[md.Distribution]:
    """The installed distributions executors import: ``groupcoord``'s requirements (no
    extras) and :data:`EXECUTOR_EXTRA`, with everything they require, less
    :data:`WORKER_PROVIDED`."""
    from packaging.requirements import Requirement

    if roots is None:
        own = md.requires("groupcoord") or []
        roots = (*(r for r in own if "extra ==" not in r.replace("'", '"')), *EXECUTOR_EXTRA)
    todo = [Requirement(r) if isinstance(r, str) else r for r in roots]
    seen: dict[str, md.Distribution] = {}
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = _canon(req.name)
        if name in seen or name in WORKER_PROVIDED:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            raise ShipError(f"the executors need {req.name}, which is not installed in "
                            f"{sys.prefix} (pip install '.[lab]')") from None
        seen[name] = dist
        todo.extend(Requirement(r) for r in dist.requires or [])
    return [seen[n] for n in sorted(seen)]


def _site_packages(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python*/site-packages"))
    if len(found) != 1:
        raise ShipError(f"{prefix}: expected one lib/python*/site-packages, found {len(found)}")
    return found[0]


def environment_files(prefix: Path, dists: list[md.Distribution]) -> list[tuple[str, str]]:
    """``(source, target)`` of every file the archive holds: the interpreter links in ``bin/``
    and the top-level entries of ``site-packages`` that the distributions installed (their
    packages with any ``__pycache__``, their ``.dist-info`` and ``.libs``)."""
    site = _site_packages(prefix)
    tops: set[str] = set()
    for dist in dists:
        base = Path(str(dist.locate_file("")))
        if base.resolve() != site.resolve():
            raise ShipError(f"{dist.metadata['Name']} is installed in {base}, outside the "
                            f"virtualenv {prefix}; install it there (pip install '.[lab]')")
        for f in dist.files or []:
            if f.parts and f.parts[0] != "..":
                tops.add(f.parts[0])
    out: list[tuple[str, str]] = []
    bindir = prefix / "bin"
    for p in sorted(bindir.iterdir()):
        if re.fullmatch(r"python[\d.]*", p.name):
            out.append((str(p), f"bin/{p.name}"))
    rel_site = site.relative_to(prefix)
    for top in sorted(tops):
        path = site / top
        if path.is_dir() and not path.is_symlink():
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    src = Path(root) / name
                    out.append((str(src), str(rel_site / src.relative_to(site))))
        elif path.exists() or path.is_symlink():
            out.append((str(path), str(rel_site / top)))
    return out


def _fingerprint(files: list[tuple[str, str]], *extra: str) -> str:
    h = hashlib.sha256()
    for part in (_LAYOUT, sys.version, sys.platform, os.uname().machine, *extra):
        h.update(part.encode() + b"\0")
    for src, target in files:
        st = os.lstat(src)
        h.update(f"{target}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:20]


def _prune(cache: Path, pattern: str, keep: int) -> None:
    olds = sorted(cache.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in olds[keep:]:
        try:
            old.unlink()
        except OSError as e:  # another run may be reading it: leave it
            log.debug("cache: %s: %s", old, e)


def pack_environment(cache_dir: Path | None = None, python_prefix: str | None = None,
                     compress_level: int = COMPRESS_LEVEL) -> tuple[Path, bool, float,
                                                                     list[str]]:
    """The archive of the executors' environment (packed, or reused from the cache): its
    path, whether this call packed it, the seconds it took and the distributions in it."""
    import venv_pack
    from venv_pack.core import File, Packer, VenvPackException, check_prefix
    from venv_pack.formats import archive as open_archive

    t0 = time.monotonic()
    prefix = venv_prefix()
    dists = executor_distributions()
    names = [f"{d.metadata['Name']}=={d.version}" for d in dists]
    files = environment_files(prefix, dists)
    key = _fingerprint(files, venv_pack.__version__, str(python_prefix), str(compress_level))
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"env-{key}.tar.gz"
    if target.exists():
        os.utime(target)  # newest: kept by _prune
        return target, False, time.monotonic() - t0, names
    try:
        context = check_prefix(str(prefix))
        fd, tmp = tempfile.mkstemp(dir=cache, prefix=".env-", suffix=".tar.gz.part")
        try:
            with os.fdopen(fd, "wb") as fh, open_archive(fh, "tar.gz",
                                                         compress_level=compress_level) as arc:
                packer = Packer(context, arc, python_prefix)
                for src, tgt in files:
                    packer.add(File(src, tgt))
                packer.finish()
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except VenvPackException as e:
        raise ShipError(f"venv-pack cannot pack {prefix}: {e}") from None
    _prune(cache, "env-*.tar.gz", KEEP_ARCHIVES)
    return target, True, time.monotonic() - t0, names


def package_zip(cache_dir: Path | None = None) -> Path:
    """A zip of the ``groupcoord`` package the driver imported (sources and package data, no
    bytecode), named by a hash of its contents."""
    import groupcoord

    pkg = Path(groupcoord.__file__).resolve().parent
    entries: list[tuple[Path, str]] = []
    h = hashlib.sha256(_LAYOUT.encode())
    for root, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            src = Path(root) / name
            arcname = str(Path("groupcoord") / src.relative_to(pkg))
            entries.append((src, arcname))
            h.update(arcname.encode() + b"\0" + src.read_bytes() + b"\0")
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"groupcoord-{h.hexdigest()[:20]}.zip"
    if not target.exists():
        fd, tmp = tempfile.mkstemp(dir=cache, prefix=".groupcoord-", suffix=".zip.part")
        try:
            with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
                for src, arcname in entries:
                    zf.write(src, arcname)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _prune(cache, "groupcoord-*.zip", KEEP_ARCHIVES * 3)
    else:
        os.utime(target)
    return target


def ship(cache_dir: Path | None = None, python_prefix: str | None = None,
         archive: Path | None = None) -> ShippedEnv:
    """The environment archive (``archive`` as given, else packed or cached) and the package
    zip."""
    t0 = time.monotonic()
    if archive is not None:
        if not archive.is_file():
            raise ShipError(f"--archive {archive}: no such file")
        env_path, packed, names = archive.resolve(), False, list[str]()
    else:
        env_path, packed, _, names = pack_environment(cache_dir, python_prefix)
    pz = package_zip(cache_dir)
    return ShippedEnv(env_path, pz, packed, time.monotonic() - t0, tuple(names))
