"""A Tree over a committed git revision (tag, branch, sha), read straight from git objects.

No checkout and no process per file: the listing is one ``git ls-tree -r -l -z`` call (paths, modes,
blob ids and sizes), started early and written to a temporary file; the marker files detectors prefetch
come from one streamed ``git cat-file --batch`` run by GitPython (``_Batch``), and any other file from
GitPython's persistent batch reader, only those the detectors ask for. The rules are LocalTree's:
dot-directories are skipped, a submodule (mode 160000) is an empty folder, a symlink (mode 120000) is
followed only to a file whose target stays inside the tree (the link text is resolved against the
listing, relative to the link's folder), never to a directory.

``import git`` happens here only, when a GitTree is built (``envtag detect PATH --rev REV``).
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Iterable
from itertools import compress, repeat
from operator import itemgetter
from typing import Any, BinaryIO

from .tree import MAX_READ, FileTooLarge, Tree, TreeError, basename, parent

MODE_LINK = "120000"  # a symlink; submodules (160000) are commits, not blobs, and are skipped
MAX_LINK_HOPS = 40  # as the kernel's ELOOP limit
MAX_LINK_BYTES = 4095  # PATH_MAX - 1: the longest link text a checkout can hold
DRAIN_LIMIT = 8 * 1024 * 1024  # past this many unread bytes, restart the batch reader instead of draining
PREFETCH_FILE_MAX = MAX_READ  # prefetch only marker-sized blobs; data files are streamed on demand
PREFETCH_BUDGET = 128 * 1024 * 1024  # bytes a tree keeps from prefetching, at most


def _import_git() -> Any:
    try:
        import git  # GitPython; lazy so that local detection never pays for it
    except ImportError as exc:  # no GitPython, or no git executable on PATH
        raise TreeError(f"reading a git revision needs GitPython and the git command: {exc}") from None
    return git


class _Entry:
    """A blob of the listing, parsed from its ``ls-tree -l`` record (``<mode> blob <sha> <size>\t<path>``)
    on use: the listing keeps only the raw record, so a 100,000-file tree costs one dict entry per file."""

    __slots__ = ("mode", "sha", "size")

    def __init__(self, record: str):
        mode, _, sha, size = record.partition("\t")[0].split()
        self.mode, self.sha, self.size = mode, sha, int(size)


def _relative_listing_works() -> bool:
    """``git ls-tree REV`` run in a folder lists that folder's part of REV, unless GIT_DIR or
    GIT_WORK_TREE is set (as in a hook of a linked worktree): git then takes the current folder for the
    top of the work tree. The listing then names the folder itself (``REV:PREFIX``), once it is known."""
    return not (os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"))


class _Listing:
    """``git ls-tree -r -l -z TREEISH`` run in ``folder``: ``REV`` lists the folder's part of the revision
    with paths relative to it, ``REV:PREFIX`` (with --full-tree) the same wherever git takes the work
    tree to be. Its output goes to an unnamed temporary file, so git runs at full speed while this process
    goes on (loading the plugins, importing GitPython) instead of stalling on a full pipe."""

    def __init__(self, folder: str, treeish: str, full_tree: bool = False):
        import tempfile

        command = [os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git", "ls-tree", "-r", "-l", "-z",
                   *(["--full-tree"] if full_tree else []), treeish]
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(command, cwd=folder, stdin=subprocess.DEVNULL, stdout=self._out,
                                            stderr=self._err)
        except OSError as exc:
            self._close()
            raise TreeError(f"reading a git revision needs the git command: {exc}") from None

    def result(self) -> tuple[int, bytes, bytes]:
        """git's exit status, its output and its error text (waits for git to finish)."""
        status = self.process.wait()
        try:
            self._out.seek(0)
            self._err.seek(0)
            return status, self._out.read(), self._err.read()
        finally:
            self._close()

    def cancel(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._close()

    def _close(self) -> None:
        self._out.close()
        self._err.close()


_pending: dict[tuple[str, str], _Listing] = {}
_inherited: list[object] = []  # a forked child's references to its parent's git processes, kept alive


def _usable_rev(rev: str | None) -> str:
    rev = (rev or "").strip()
    if not rev or rev.startswith("-") or any(c in rev for c in "\n\r\0"):
        raise TreeError(f"{rev!r}: not a usable git revision")
    return rev


def start_listing(folder: str | os.PathLike, rev: str) -> None:
    """A hint: the caller will soon build ``GitTree(folder, rev)``, so start git listing it now, in
    parallel with whatever the caller does first (the CLI loads the plugins). Errors wait for GitTree;
    ``cancel_listings`` stops a listing nobody came for."""
    folder = os.fspath(folder)
    try:
        rev = _usable_rev(rev)
        if os.path.isdir(folder) and (folder, rev) not in _pending and _relative_listing_works():
            _pending[(folder, rev)] = _Listing(folder, rev)
    except TreeError:
        pass


def cancel_listings() -> None:
    """Stop the hinted listings no GitTree used (the command failed before it got there)."""
    while _pending:
        _pending.popitem()[1].cancel()


def _dotted(paths: Iterable[str]) -> list[str]:
    """The paths with a component that starts with a dot (filtered in C: no Python call per path)."""
    paths = list(paths)
    return [*compress(paths, map(str.startswith, paths, repeat("."))),
            *compress(paths, map(str.__contains__, paths, repeat("/.")))]


class GitTree(Tree):
    """The files of ``folder`` (a git work tree, a folder inside one, or a bare repo) at revision ``rev``."""

    full_reads = True
    fork_safe = True  # after_fork gives a child its own git processes

    def __init__(self, folder: str | os.PathLike, rev: str, skip: Iterable[str] = ()):
        folder = os.fspath(folder)
        rev = _usable_rev(rev)
        if not os.path.isdir(folder):
            raise TreeError(f"{folder}: not a folder")
        listing = _pending.pop((folder, rev), None)
        if listing is None and _relative_listing_works():
            listing = _Listing(folder, rev)
        try:
            git = _import_git()
            try:
                self.repo = git.Repo(folder, search_parent_directories=True)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                raise TreeError(f"{folder}: not a git repository (--rev reads a committed revision)") from None
            super().__init__(f"{folder}@{rev}", skip)
            self.folder, self.rev = folder, rev
            self.unreadable: list[str] = []
            # every listed entry (dot-directories included: symlink targets may sit there) -> its ls-tree record
            self._entries: dict[str, str] = {}
            self._links: dict[str, str] = {}  # a listed symlink -> the file it ends at
            self._paths: list[str] = []  # every listed path, in listing order
            self._names: list[str] | None = None  # their base names, built on the first named()
            self._name_set: set[str] = set()
            self._stream: _BlobStream | None = None
            self._cache: dict[str, bytes] = {}  # blob sha -> content, filled by prefetch()
            self._folder_rules: dict[str, bool] = {}
            self._cached_bytes = 0
            self._batch: _Batch | None = None  # the prefetch under way
            self._prefetched: dict[str, _Entry] = {}  # path -> its parsed listing line, for prefetched files
            if listing is None:
                prefix = self.prefix
                listing = _Listing(folder, f"{rev}:{prefix}" if prefix else rev, full_tree=True)
            self._list(listing)
        except BaseException:
            if listing is not None:
                listing.cancel()
            raise

    # -- listing -----------------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        """The folder's path inside the repository ("" for its top or a bare repository)."""
        top = self.repo.working_tree_dir
        if top is None:
            return ""
        rel = os.path.relpath(os.path.realpath(self.folder), os.path.realpath(top))
        return "" if rel == "." else rel.replace(os.sep, "/")

    def _list(self, listing: _Listing) -> None:
        """Parse the listing and filter it by LocalTree's rules (dot-directories, skip patterns, unusable
        names; symlinks resolved once the whole listing is known). The common case is whole-list work done
        in C (split, slice, zip, map); only paths that can be special (a dot, a newline, a skip pattern, an
        odd mode) are looked at one by one. Folders are the parents of the listed entries: git stores no
        empty folder."""
        status, out, err = listing.result()
        if status != 0:
            raise TreeError(self._bad_revision_message(err.decode("utf-8", "replace")))
        text = out.decode("utf-8", "surrogateescape")
        if not text and self.prefix and not self._has_folder():
            raise TreeError(self._bad_revision_message())
        if text.count("\t") == text.count("\0"):  # no tab inside a path: one split gives meta, path, meta...
            fields = text.replace("\t", "\0").split("\0")
            metas, paths = fields[0:-1:2], fields[1::2]
        else:
            records = [record.partition("\t") for record in text.split("\0")[:-1]]
            metas, paths = list(map(itemgetter(0), records)), list(map(itemgetter(2), records))
        entries = self._entries = dict(zip(paths, metas, strict=True))
        self._paths = paths
        odd = bool(self.skip) or "\n" in text or "\r" in text
        dotted = odd or "/." in text or "\t." in text or text.startswith(".")
        hidden: set[str] = set()
        maybe_hidden = (paths if odd else _dotted(paths)) if dotted else []
        if maybe_hidden:
            hidden = {p for p in maybe_hidden if not self._shown(p)}
        links: list[str] = []
        submodules: list[str] = []
        if "120000 " in text or "160000 " in text:  # a symlink or a submodule somewhere (or such a name)
            for path, meta in zip(paths, metas, strict=True):
                if meta.startswith(MODE_LINK):
                    if path not in hidden:
                        links.append(path)  # resolved below, once the whole listing is known
                    hidden.add(path)
                elif meta[7:11] != "blob":  # a submodule (mode 160000, a commit): an empty folder here
                    hidden.add(path)
                    del entries[path]
                    submodules.append(path)
        files = self._files = set(paths).difference(hidden) if hidden else set(paths)
        folders = set(map(itemgetter(0), map(str.rpartition, entries, repeat("/")))).union(submodules)
        level = folders
        while level:  # every ancestor of a listed entry, one depth at a time
            level = set(map(itemgetter(0), map(str.rpartition, level, repeat("/")))).difference(folders)
            folders |= level
        folders.discard("")
        if odd:
            folders.difference_update([f for f in folders if not self._visible(f)])
        elif maybe_hidden:  # only a folder on the way to a dotted path (or a dotted submodule) can be hidden
            on_the_way = {path[:at] for path in maybe_hidden for at, char in enumerate(path) if char == "/"}
            on_the_way.update(folders.intersection(maybe_hidden))
            folders.difference_update([f for f in on_the_way if not self._visible(f)])
        self._dirs = folders
        self._dirs.add(".")
        if links:
            self._links = self._resolve_links(links)
            files.update(self._links)
        self._apply_file_set(hidden, links)

    def _apply_file_set(self, hidden: set[str], links: list[str]) -> None:
        """The file set's other rules (fileset.py): environments, caches, credential files, and links
        whose target is left out; the dot-directories hidden above are reported as left out too."""
        from .fileset import HIDDEN, LINK, filter_folders, filter_listing

        kept, self.left_out = filter_listing(self._files)
        dot_dirs = set()
        for path in hidden:
            parts = path.split("/")
            for depth, part in enumerate(parts[:-1]):
                if part.startswith("."):
                    dot_dirs.add("/".join(parts[: depth + 1]) + "/")
                    break
        self.left_out = sorted([*self.left_out, *((folder, HIDDEN) for folder in dot_dirs)])
        if len(kept) != len(self._files):
            self._files = kept
            self._dirs = filter_folders(self._dirs, self.left_out) | {"."}
        for link, target in list(self._links.items()):
            if target not in kept:
                self._files.discard(link)
                del self._links[link]
        self.left_out = sorted([*self.left_out, *((link, LINK) for link in links if link not in self._links)])

    def named(self, name: str) -> list[str]:
        """Every file whose base name is ``name``, sorted: one pass over the listing per name asked for."""
        memo = self._by_name
        if memo is None:
            memo = self._by_name = {}
        found = memo.get(name)
        if found is None:
            if self._names is None:
                self._names = list(map(itemgetter(2), map(str.rpartition, self._paths, repeat("/"))))
                self._name_set = set(self._names)
            if name not in self._name_set:
                found = memo[name] = []
            else:
                files = self._files
                found = memo[name] = sorted(p for p in compress(self._paths, map(name.__eq__, self._names))
                                            if p in files)
        return found

    def _has_folder(self) -> bool:
        try:
            return self.repo.git.cat_file("-t", f"{self.rev}:{self.prefix}").strip() == "tree"
        except Exception:  # noqa: BLE001 - GitCommandError: nothing at that path in this revision
            return False

    def _shown(self, path: str) -> bool:
        """A listed file's verdict by LocalTree's rules: in a visible folder, a usable name, not skipped."""
        folder, _, name = path.rpartition("/")
        if folder and not self._visible(folder):
            return False
        if "\n" in name or "\r" in name:
            self.unreadable.append(path)
            return False
        return not (self.skip and self.skipped(path))

    def _visible(self, folder: str) -> bool:
        """False for a dot-directory, a folder under one, a skipped folder, or an unusable name."""
        if not self.skip and not folder.startswith(".") and "/." not in folder and "\n" not in folder \
                and "\r" not in folder:
            return True  # the common case
        shown = self._folder_rules.get(folder)
        if shown is None:
            name = basename(folder)
            shown = "/" not in folder or self._visible(parent(folder))
            if shown and ("\n" in name or "\r" in name):  # LocalTree's rule for unusable names comes first
                self.unreadable.append(folder)
                shown = False
            shown = shown and not name.startswith(".") and not (self.skip and self.skipped(folder))
            self._folder_rules[folder] = shown
        return shown

    def _bad_revision_message(self, stderr: str = "") -> str:
        where = self.repo.working_tree_dir or self.repo.git_dir
        detail = " ".join(line.strip() for line in stderr.strip("'\" \n").splitlines() if line.strip())
        try:
            self.repo.git.get_object_header(f"{self.rev}^{{tree}}")
        except ValueError:
            if detail and "not a valid object name" not in detail.lower():
                return f"{self.folder}: cannot read revision {self.rev!r} of {where}: {detail}"
            shallow = os.path.exists(os.path.join(self.repo.git_dir, "shallow"))
            hint = (f"; this is a shallow clone: fetch it first (`git fetch --depth=1 origin {self.rev}`, or "
                    "`fetch-depth: 0` in actions/checkout)") if shallow else ""
            return (f"{self.folder}: bad revision {self.rev!r}: no branch, tag or commit of that name "
                    f"in the git repository at {where}{hint}")
        return f"{self.folder}: revision {self.rev!r} of {where} has no folder {self.prefix!r}"

    def _resolve_links(self, links: list[str]) -> dict[str, str]:
        """link path -> the regular file it ends at inside the tree (links that do not are left out)."""
        if not links:
            return {}
        link_entries = {path: _Entry(self._entries[path]) for path in links}
        # a link text longer than PATH_MAX names no file git could check out: left unresolved, unread
        link_entries = {path: entry for path, entry in link_entries.items() if entry.size <= MAX_LINK_BYTES}
        self._fetch_many({entry.sha: entry.size for entry in link_entries.values()})
        texts: dict[str, str] = {}
        for path, entry in link_entries.items():
            data = self._blob_bytes(entry.sha, entry.size)
            texts[path] = data.decode("utf-8", "surrogateescape")
        resolved: dict[str, str] = {}
        for path in links:
            target = self._follow(path, texts)
            if target is not None:
                resolved[path] = target
        return resolved

    def _follow(self, link: str, texts: dict[str, str]) -> str | None:
        """Resolve ``link`` component by component, as realpath would, without leaving the tree."""
        hops = 0
        pending = texts.get(link)
        if pending is None:  # a link text too long to read
            return None
        base = parent(link)
        while True:
            if pending.startswith("/") or not pending:
                return None  # absolute links leave the tree (the tree has no fixed place on disk)
            parts = [] if base == "." else base.split("/")
            names = pending.split("/")
            for index, name in enumerate(names):
                if name in ("", "."):
                    continue
                if name == "..":
                    if not parts:
                        return None  # climbs out of the tree
                    parts.pop()
                    continue
                parts.append(name)
                current = "/".join(parts)
                meta = self._entries.get(current)
                if meta is not None and meta.startswith(MODE_LINK):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        return None
                    rest = "/".join(names[index + 1:])
                    text = texts.get(current)
                    if text is None:  # a link outside the listing's link set cannot happen; be safe
                        return None
                    base = parent(current)
                    pending = text + ("/" + rest if rest else "")
                    break
            else:
                final = "/".join(parts)
                meta = self._entries.get(final)
                if meta is None or meta.startswith(MODE_LINK):
                    return None  # a directory, a missing target
                return final

    # -- reading -----------------------------------------------------------------------------
    def _entry(self, path: str) -> _Entry:
        if path not in self._files:
            raise FileNotFoundError(f"{path}: not a file at {self.rev}")
        return _Entry(self._entries[self._links.get(path, path)])

    def size(self, path: str) -> int:
        return self._entry(path).size

    def _release(self) -> None:
        """Make the batch reader free: an open stream keeps its unread bytes in memory from now on."""
        if self._stream is not None:
            self._stream.detach()
            self._stream = None

    def _raw_stream(self, sha: str) -> Any:
        self._release()
        try:
            _, kind, _, stream = self.repo.git.stream_object_data(sha)
        except ValueError as exc:
            raise OSError(f"cannot read git object {sha}: {exc}") from None
        if isinstance(kind, bytes):
            kind = kind.decode("ascii", "replace")
        if kind != "blob":
            del stream
            raise OSError(f"git object {sha} is a {kind}, not a blob")
        return stream

    def prefetch(self, paths: Iterable[str]) -> None:
        """Start reading the blobs of these files with one ``git cat-file --batch`` (see _Batch): git
        works through the list while the caller parses the first ones, instead of a round trip per file."""
        wanted: dict[str, int] = {}
        budget = PREFETCH_BUDGET - self._cached_bytes
        files, entries, links, cache = self._files, self._entries, self._links, self._cache
        for path in paths:
            if path not in files:
                continue
            entry = _Entry(entries[links.get(path, path)])
            if entry.size > PREFETCH_FILE_MAX or entry.sha in cache or entry.sha in wanted:
                continue
            if entry.size > budget:
                break
            budget -= entry.size
            wanted[entry.sha] = entry.size
            self._prefetched[path] = entry
        if len(wanted) >= 2:
            self._fetch_many(wanted)

    def _fetch_many(self, wanted: dict[str, int]) -> None:
        """Queue these blobs (sha -> size, under PREFETCH_BUDGET in all) for one batch read."""
        if self._batch is not None:
            self._batch.finish(self._store)
        self._batch = _Batch(self.repo, list(wanted))

    def _store(self, sha: str, data: bytes) -> None:
        self._cache[sha] = data
        self._cached_bytes += len(data)

    def _blob_bytes(self, sha: str, size: int, limit: int | None = None) -> bytes:
        cached = self._cache.get(sha)
        if cached is None and self._batch is not None and sha in self._batch.pending:
            if self._batch.until(sha, self._store):
                self._batch = None
            cached = self._cache.get(sha)
        if cached is not None:
            return cached if limit is None else cached[:limit]
        stream = self._raw_stream(sha)
        want = size if limit is None else min(size, limit)
        data = stream.read(want)
        left = size - len(data)
        if left > DRAIN_LIMIT:  # cheaper to restart the reader than to pipe the rest through
            stream._nbr = stream._size  # noqa: SLF001 - keep its __del__ from draining
            self.repo.git.clear_cache()
        del stream  # drains what is left (the batch protocol needs it)
        return data

    def read(self, path: str, cap: int = MAX_READ) -> bytes:
        entry = self._prefetched.get(path) or self._entry(path)  # the listing's line, parsed once
        if entry.size > cap:
            raise FileTooLarge(path, entry.size, cap)
        data = self._blob_bytes(entry.sha, entry.size)
        self.reads += 1
        self.bytes_read += len(data)
        return data

    def _read(self, path: str, limit: int) -> bytes:
        entry = self._entry(path)
        return self._blob_bytes(entry.sha, entry.size, limit)

    def open(self, path: str) -> BinaryIO:
        """A stream over the whole blob, fed by the batch reader (no copy of a big file in memory)."""
        entry = self._entry(path)
        if entry.size <= DRAIN_LIMIT:
            return io.BytesIO(self._read(path, entry.size))
        stream = _BlobStream(self._raw_stream(entry.sha), entry.size, self)
        self._stream = stream
        return stream  # type: ignore[return-value]

    def after_fork(self) -> None:
        """In a forked child: leave the parent's git processes alone (their pipes are shared: reading
        them here would steal the parent's answers, and dropping GitPython's handles would kill them)
        and read through processes of its own, started on first use."""
        git = _import_git()
        _inherited.append((self.repo, self._batch, self._stream))
        self.repo = git.Repo(self.repo.working_tree_dir or self.repo.git_dir)
        self._batch = None
        self._stream = None

    def close(self) -> None:
        """Stop the git processes this tree started (they also stop when it is garbage collected)."""
        self._release()
        if self._batch is not None:
            self._batch.cancel()
            self._batch = None
        self._cache.clear()
        self._prefetched.clear()
        self._cached_bytes = 0
        self.repo.close()

    def __enter__(self) -> GitTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Batch:
    """One ``git cat-file --batch`` run by GitPython over a known list of blobs, read as the tree needs
    them: the requests come from a temporary file (nothing to feed, so no pipe can deadlock) and the
    answers are read off the pipe in big chunks only when a blob not yet read is asked for. git works
    through the list on another core while the detectors parse the blobs that already arrived."""

    CHUNK = 1 << 20

    def __init__(self, repo: Any, shas: list[str]):
        import tempfile

        self.pending = set(shas)
        self._buffer = b""
        self._at = 0
        self._wanted = 1  # bytes the answer being read needs in the buffer before it can be parsed
        with tempfile.TemporaryFile() as request:
            request.write("".join(f"{sha}\n" for sha in shas).encode("ascii"))
            request.seek(0)
            self._process = repo.git.cat_file("--batch", as_process=True, istream=request)
        self._fd = self._process.stdout.fileno()

    def until(self, sha: str, store: Any) -> bool:
        """Read answers (handing each blob to ``store``) until ``sha`` has come; True once all came."""
        while sha in self.pending:
            chunks, have = [self._buffer[self._at:]], len(self._buffer) - self._at
            while True:  # gather at least what the answer being read still lacks, then parse once
                chunk = os.read(self._fd, self.CHUNK)
                if not chunk:  # git ended early (a broken repository): the rest is read one by one
                    self.cancel()
                    return True
                chunks.append(chunk)
                have += len(chunk)
                if have >= self._wanted:
                    break
            self._buffer, self._at = b"".join(chunks), 0
            self._parse(store)
        if not self.pending:
            self.cancel()
            return True
        return False

    def finish(self, store: Any) -> None:
        for sha in list(self.pending):
            if self.until(sha, store):
                return

    def _parse(self, store: Any) -> None:
        buffer, at, pending = self._buffer, self._at, self.pending
        while True:
            end = buffer.find(b"\n", at)
            if end < 0:
                break
            header = buffer[at:end].split()
            sha = header[0].decode("ascii", "replace") if header else ""
            if len(header) != 3:  # "<sha> missing": nothing follows
                pending.discard(sha)
                at = end + 1
                continue
            size = int(header[2])
            if end + 1 + size + 1 > len(buffer):
                self._wanted = end + 1 + size + 1 - at  # the rest of this blob is still on its way
                self._at = at
                return
            pending.discard(sha)
            if header[1] == b"blob":
                store(sha, buffer[end + 1:end + 1 + size])
            at = end + 1 + size + 1  # the content and its newline
        self._at = at
        self._wanted = 1

    def cancel(self) -> None:
        self.pending = set()
        process, self._process = self._process, None
        if process is not None:
            if process.proc.poll() is None:
                process.proc.kill()
            process.proc.stdout.close()
            process.proc.stderr.close()
            process.proc.wait()


class _BlobStream(io.RawIOBase):
    """A readable stream over one blob of the batch reader. When the tree needs the reader for another
    object while this one is still open, the unread rest is moved into memory (``detach``)."""

    def __init__(self, stream: Any, size: int, owner: GitTree):
        super().__init__()
        self._stream: Any = stream
        self._buffer: io.BytesIO | None = None
        self._left = size
        self._owner = owner

    def readable(self) -> bool:
        return True

    def detach(self) -> None:  # type: ignore[override]
        if self._stream is not None:
            self._buffer = io.BytesIO(self._stream.read(self._left) if self._left else b"")
            self._stream = None

    def read(self, size: int = -1) -> bytes:
        if self._buffer is not None:
            data = self._buffer.read(size)
        elif self._stream is not None:
            data = self._stream.read(size if size is not None and size >= 0 else self._left)
        else:
            return b""
        self._left -= len(data)
        if self._left <= 0 and self._stream is not None:
            self._stream = None
            if self._owner._stream is self:
                self._owner._stream = None
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            if self._owner._stream is self:
                self._owner._stream = None
            if self._left > DRAIN_LIMIT:
                stream._nbr = stream._size  # noqa: SLF001
                self._owner.repo.git.clear_cache()
            del stream  # drains the rest
        super().close()
