"""A local stand-in for the Hugging Face Hub HTTP API, for tests.

It speaks the part of the Hub API that the real ``huggingface_hub`` client (1.x/2.x, httpx based) uses for
repo info, listings, downloads and NDJSON commits, so tests can drive the real client over real HTTP::

    with HubServer(tree_page_size=2) as hub:
        hub.add_token("hf_w", namespaces=["alice"])
        hub.create_repo("alice/data", files={"README.md": b"---\ntags: [x]\n---\n"})
        api = HfApi(endpoint=hub.url, token="hf_w")
        api.list_repo_tree("alice/data", repo_type="dataset", recursive=True)

Standard library only (``http.server.ThreadingHTTPServer`` in a background thread). PyYAML is used when it is
importable (a dependency of ``huggingface_hub``) to fill ``cardData``; without it ``cardData`` is omitted.

The server never logs headers, so tokens are never printed: the request log holds method, path, query,
status and byte counts only.

Storage model: blobs are content addressed; a commit is an immutable snapshot ``path -> blob oid`` with a
parent, a message and a sha; branches, tags and pull requests (``refs/pr/N``) map to commit shas. Every
upload is answered with ``uploadMode: "regular"`` so file content always travels inline, base64, in the
NDJSON commit: no LFS and no Xet protocol is involved. Files given to the helper API may be ``bytes``/``str``
or "virtual" objects (anything with a ``size`` attribute and a ``read(offset, length)`` method, such as
:class:`VirtualFile`) whose content is generated on demand, so a 1 GB file is never materialised. Virtual
files and files bigger than ``lfs_threshold`` are reported as LFS files (``lfs`` info in tree listings,
``X-Linked-Etag``/``X-Linked-Size`` on resolve); their sha256 is computed from their head and tail (plus
size) unless the object provides a ``sha256`` attribute, i.e. it is a stable identifier, not a real digest.

``HubServer(lfs_uploads=True)`` also serves the Git LFS "basic" upload the client uses for files that the
repo's ``.gitattributes`` marks ``filter=lfs`` (or bigger than ``lfs_threshold``): preupload answers ``lfs``
for them, ``POST /{datasets|spaces/}{repo_id}.git/info/lfs/objects/batch`` hands out an upload URL, the
content is ``PUT`` there (sha256 checked), and the commit refers to it with an ``lfsFile`` line.
Off by default.

Hostile-Hub modes, for testing a client that must not trust the server: ``hub.listing_sizes[(repo_id, path)]``
makes tree listings (not paths-info) report a wrong ``size`` for a file (an int), or no ``size`` at all (None);
``hub.listing_faults[repo_id]`` makes that repo's recursive listings misbehave (see ``LISTING_FAULTS``);
``hub.max_range_bytes`` answers a ranged read with at most that many bytes (a 206 whose ``Content-Range`` still
gives the file's size, as a CDN serving big ranges in parts); and an
injected fault may run a callback when it fires (``on_fire=``), e.g. to commit concurrently while the client's
commit is answered 502 and not applied.

Repo listings (``/api/datasets``, ``/api/spaces``, ``/api/models``) answer like the Hub's: ``author``, ``search``
(substring of the id) and ``filter`` (repeated: every value must be one of the repo's tags, the card's ``tags:``
plus ``license:...`` and the like), cursor pagination through the ``Link`` header (``repo_list_page_size`` a page,
or ``limit`` when smaller), and ``expand`` (repeated) to get only ``id``, ``_id`` and the fields named, e.g.
``sha``, ``tags``, ``cardData`` (the card's parsed YAML header) and ``siblings`` (``[{"rfilename": path}]``, every
file of the main branch). Access rules that make a listed repo unreadable, for audits: ``hub.set_gated(repo_id)``
makes file downloads answer 403 ``GatedRepo`` to every token outside the repo's namespace (listing, repo info
and tree listing still answer, as on the Hub); ``hub.stale_listing`` holds ``(repo_type, repo_id)`` pairs that
listings still show although the repo is private to the caller (the Hub's search index lagging behind a
visibility change); ``hub.listing_extra`` holds ``(repo_type, repo_id)`` pairs that every listing of that type
names whatever its query (a hostile listing steering a client to someone else's repo); ``hub.null_sha`` holds repo
ids whose info and listing items answer ``"sha": null``; ``hub.endless_discussions`` holds repo ids whose pull
request list never ends (a fresh page of open PRs each time, ``count`` 10**9). Pull requests keep the
commit description as their opening comment (``events[0]`` of the discussion details), can be closed or
reopened (``POST .../discussions/N/status``, by their author or a writer), and ``hub.open_pr(...)`` opens one as
any user. ``hub.set_rate_limit(N, seconds)`` enforces a fixed-window quota as the Hub does: every answer carries
its ``RateLimit``/``RateLimit-Policy`` headers, and a request past the quota is answered 429;
``set_rate_limit(N, seconds, resource="resolvers")`` (or ``"api"``) keeps one resource's quota apart, as the Hub
does (a path with /resolve/ counts against resolvers).
``HubServer(latency=s)`` (or ``hub.latency``) delays every request by ``s`` seconds, a fixed round trip for
benchmarks.

The package, by area: server.py (HubServer: lifecycle, helper API, storage, routing), listing.py, files.py,
commits.py, discussions.py, faults.py (the routes of each area), http.py (handler, server, request context),
model.py (what it stores and answers with), env.py (environments pointing huggingface_hub at it).
"""

from .env import hub_env, isolate_in_process_client, resolve_url
from .http import _Handler
from .model import (
    LISTING_FAULTS,
    Commit,
    FileContent,
    PullRequest,
    RequestRecord,
    VirtualFile,
    _json_response,
)
from .server import HubServer

__all__ = [
    "LISTING_FAULTS",
    "Commit",
    "FileContent",
    "HubServer",
    "PullRequest",
    "RequestRecord",
    "VirtualFile",
    "_Handler",
    "_json_response",
    "hub_env",
    "isolate_in_process_client",
    "resolve_url",
]
