"""A read-only view of a repository's files: one interface over a folder, a git revision, a Hub repo.

Detectors see only a Tree. Sources list their files once; detectors then look up paths in that
listing (no stat, no network) and read the few files they need through capped reads.
"""

from __future__ import annotations

import fnmatch
import io
import os
import stat
from collections.abc import Iterable, Iterator
from itertools import compress, repeat
from typing import BinaryIO

MAX_READ = 1024 * 1024  # cap on any marker file read (task.toml, openenv.yaml, pyproject.toml, sources)


class TreeError(Exception):
    """The source cannot be read at all (missing folder, bad revision, unknown Hub repo)."""


class FileTooLarge(Exception):
    """A marker file is larger than the read cap; detectors report it as a problem."""

    def __init__(self, path: str, size: int, cap: int):
        super().__init__(f"{path}: {size} bytes is larger than the {cap} byte cap; not read")
        self.path, self.size, self.cap = path, size, cap


def parent(path: str) -> str:
    """The repo-relative parent folder of a path, ``.`` for the repo root."""
    head, _, _ = path.rpartition("/")
    return head or "."


def join(folder: str, name: str) -> str:
    return name if folder in (".", "") else f"{folder}/{name}"


def basename(path: str) -> str:
    return path.rpartition("/")[2]


class Tree:
    """Base class: subclasses fill ``_files`` and ``_dirs`` (repo-relative POSIX paths) once.

    ``full_reads`` is False for remote sources: detectors then read heads of data files and a
    bounded sample (``sample_limit``) of marker files instead of everything.
    """

    full_reads = True
    sample_limit: int | None = None
    fork_safe = False  # True when a forked child may read this tree (see parallel.py)

    def __init__(self, name: str, skip: Iterable[str] = ()):
        self.name = name
        self.skip = [p.rstrip("/") for p in skip if p.strip()]
        self._files: set[str] = set()
        self._dirs: set[str] = {"."}
        self._by_name: dict[str, list[str]] | None = None
        self.bytes_read = 0
        self.reads = 0

    # -- listing -----------------------------------------------------------------------------
    def skipped(self, path: str) -> bool:
        """True when ``path`` matches a configured skip pattern (glob on the path or a parent)."""
        if not self.skip:
            return False
        for pattern in self.skip:
            if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern + "/*"):
                return True
        return False

    def files(self) -> set[str]:
        return self._files

    def is_file(self, path: str) -> bool:
        return path in self._files

    def is_dir(self, path: str) -> bool:
        return path in self._dirs

    def exists(self, path: str) -> bool:
        return path in self._files or path in self._dirs

    def named(self, name: str) -> list[str]:
        """Every file whose base name is ``name``, sorted."""
        if self._by_name is None:
            index: dict[str, list[str]] = {}
            for path in self._files:
                index.setdefault(basename(path), []).append(path)
            for paths in index.values():
                paths.sort()
            self._by_name = index
        return self._by_name.get(name, [])

    def with_suffix(self, suffix: str | tuple[str, ...]) -> list[str]:
        """Every file whose name ends with ``suffix`` (or one of them), sorted."""
        files = list(self._files)
        return sorted(compress(files, map(str.endswith, files, repeat(suffix))))

    def holds_files(self, folder: str) -> bool:
        """Whether something besides empty folders lies below ``folder``: git and the Hub keep no empty
        folder, so one that is empty here is gone after a commit or an upload. A listing built from file
        paths (git, the Hub) has no empty folder; LocalTree tells."""
        return True

    def under(self, folder: str) -> Iterator[str]:
        """Files below ``folder`` (any depth)."""
        if folder in (".", ""):
            yield from self._files
            return
        prefix = folder + "/"
        for path in self._files:
            if path.startswith(prefix):
                yield path

    # -- reading -----------------------------------------------------------------------------
    def size(self, path: str) -> int:
        raise NotImplementedError

    def _read(self, path: str, limit: int) -> bytes:
        raise NotImplementedError

    def read(self, path: str, cap: int = MAX_READ) -> bytes:
        """The whole file, refusing one larger than ``cap`` (FileTooLarge)."""
        size = self.size(path)
        if size > cap:
            raise FileTooLarge(path, size, cap)
        data = self._read(path, cap + 1)
        if len(data) > cap:  # grew between listing and read
            raise FileTooLarge(path, len(data), cap)
        self.reads += 1
        self.bytes_read += len(data)
        return data

    def read_head(self, path: str, nbytes: int) -> bytes:
        """The first ``nbytes`` of a file (a ranged read on remote sources)."""
        data = self._read(path, nbytes)
        self.reads += 1
        self.bytes_read += len(data)
        return data

    def open(self, path: str) -> BinaryIO:
        """A stream over the whole file (local and git sources; remote sources read the head)."""
        return io.BytesIO(self.read_head(path, self.size(path)))

    def prefetch(self, paths: Iterable[str]) -> None:
        """A hint that these files will be read soon (remote sources fetch them in parallel)."""

    def after_fork(self) -> None:
        """Called in a forked child before it reads: let go of what the parent process owns."""


class LocalTree(Tree):
    """A folder on disk. Skips dot-directories, never follows a symlink to a directory, and
    follows a symlink to a file only when its target stays inside the folder."""

    fork_safe = True  # plain file reads

    def __init__(self, root: str | os.PathLike, skip: Iterable[str] = (), *, only: Iterable[str] | None = None):
        root = os.fspath(root)
        if not os.path.isdir(root):
            raise TreeError(f"{root}: not a folder")
        super().__init__(root, skip)
        self.root = os.path.realpath(root)
        self.unreadable: list[str] = []
        self._content_dirs: set[str] = set()  # folders holding more than folders (see holds_files)
        if only is None:
            self._walk()
        else:  # just these top-level files, no walk (reading the repo's config before the walk)
            self._files = {name for name in only if os.path.isfile(os.path.join(self.root, name))}

    def _walk(self) -> None:
        files, dirs = self._files, self._dirs
        by_name: dict[str, list[str]] = {}
        self._by_name = by_name
        stack = [(self.root, "")]
        root_prefix = self.root + os.sep
        content = self._content_dirs
        while stack:
            folder, rel = stack.pop()
            try:
                entries = os.scandir(folder)
            except OSError:
                self.unreadable.append(rel or ".")
                continue
            seen = walked = 0
            with entries:
                for entry in entries:
                    seen += 1
                    name = entry.name
                    path = f"{rel}/{name}" if rel else name
                    if "\n" in name or "\r" in name:
                        self.unreadable.append(path)
                        continue
                    try:  # d_type answers these without a stat; regular files first, the common case
                        if entry.is_file(follow_symlinks=False):
                            if self.skip and self.skipped(path):
                                continue
                            files.add(path)
                            by_name.setdefault(name, []).append(path)
                        elif entry.is_dir(follow_symlinks=False):
                            if name.startswith(".") or (self.skip and self.skipped(path)):
                                continue
                            dirs.add(path)
                            stack.append((entry.path, path))
                            walked += 1
                        elif entry.is_symlink():
                            target = os.path.realpath(entry.path)
                            if not target.startswith(root_prefix) or not os.path.isfile(target):
                                continue  # out of the tree, a directory, or dangling
                            if self.skip and self.skipped(path):
                                continue
                            files.add(path)
                            by_name.setdefault(name, []).append(path)
                    except OSError:
                        self.unreadable.append(path)
            if seen > walked:  # something besides folders to walk: a file, a link, a dot-folder...
                content.add(rel or ".")
        for paths in by_name.values():
            paths.sort()

    def holds_files(self, folder: str) -> bool:
        if folder in self._content_dirs:
            return True
        below = folder + "/"
        return any(d.startswith(below) for d in self._content_dirs)  # only folders here: look deeper

    def local_path(self, path: str) -> str:
        if os.sep == "/":
            return f"{self.root}/{path}"
        return os.path.join(self.root, *path.split("/"))

    def size(self, path: str) -> int:
        st = os.stat(self.local_path(path))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        return st.st_size

    def _read(self, path: str, limit: int) -> bytes:
        with open(self.local_path(path), "rb") as handle:
            return handle.read(limit)

    def read(self, path: str, cap: int = MAX_READ) -> bytes:
        # one open + bounded read instead of stat + open: the hot path of a 100,000-task walk
        with open(self.local_path(path), "rb") as handle:
            data = handle.read(cap + 1)
        if len(data) > cap:
            raise FileTooLarge(path, self.size(path), cap)
        self.reads += 1
        self.bytes_read += len(data)
        return data

    def open(self, path: str) -> BinaryIO:
        return open(self.local_path(path), "rb")
