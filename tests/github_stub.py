"""A stand-in for GitHub's API on 127.0.0.1, serving REST and GraphQL from tests/data/github fixtures.

GraphQL answers are the fixture records projected through the query's own selection set (graphql-core
parses it), so a field the query asks for that the fixture lacks fails loudly. Connections take
first/after/orderBy/filterBy.since; REST lists take per_page/page and answer with Link headers and ETags.
Every request is recorded; `faults` is a queue of scripted failures, each consumed by the first request
it matches: rate limits with reset headers, Retry-After, 5xx, slow answers, truncated JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from graphql import FieldNode, InlineFragmentNode, parse
from graphql.language import OperationDefinitionNode
from graphql.utilities import value_from_ast_untyped

FIXTURES = Path(__file__).parent / "data" / "github"


@dataclass
class Fault:
    """A scripted failure for the next `times` requests whose path starts with `path` (None: any)."""

    kind: str  # primary | graphql_limited | secondary | status | slow | truncate
    path: str | None = None
    times: int = 1
    status: int = 403
    seconds: float = 0.0  # reset/Retry-After for limits, delay for slow


@dataclass
class Request:
    """One request as the stand-in saw it."""

    method: str
    path: str
    query: dict[str, str]
    variables: dict[str, Any] | None
    headers: dict[str, str]
    status: int = 0


@dataclass
class Repo:
    """One repository's fixture: GraphQL PullRequest and Issue nodes, REST releases."""

    name: str
    pulls: list[dict]
    issues: list[dict]
    releases: list[dict]


def load_repos(*names: str) -> dict[str, Repo]:
    """Fixture repositories by name, from tests/data/github/OWNER+NAME.json."""
    found = {}
    for name in names:
        data = json.loads((FIXTURES / f"{name.replace('/', '+')}.json").read_text(encoding="utf-8"))
        found[name] = Repo(name, data["pullRequests"], data["issues"], data["releases"])
    return found


def cursor(offset: int) -> str:
    return base64.b64encode(f"cursor:v2:{offset}".encode()).decode()


def offset(token: str | None) -> int:
    return int(base64.b64decode(token).decode().rsplit(":", 1)[1]) if token else 0


# -- GraphQL: fixtures projected through the selection set -----------------------------------------


class FixtureError(Exception):
    """The query asks for something the fixture does not hold."""


def _connection(value: Any, args: dict[str, Any]) -> dict:
    nodes = list(value if isinstance(value, list) else value.get("nodes", []))
    order = args.get("orderBy")
    if order and order.get("field") == "UPDATED_AT":
        nodes.sort(key=lambda n: (n["updatedAt"], n["number"]), reverse=order.get("direction") == "DESC")
    since = (args.get("filterBy") or {}).get("since")
    if since:
        nodes = [n for n in nodes if n["updatedAt"] >= since]
    start = offset(args.get("after"))
    page = nodes[start:start + args["first"]]
    end = start + len(page)
    return {"totalCount": len(nodes), "nodes": page,
            "pageInfo": {"hasNextPage": end < len(nodes), "endCursor": cursor(end) if page else None}}


def _included(node: FieldNode | InlineFragmentNode, variables: dict[str, Any]) -> bool:
    for d in node.directives or ():
        args = {a.name.value: value_from_ast_untyped(a.value, variables) for a in d.arguments or ()}
        if (d.name.value == "include" and not args["if"]) or (d.name.value == "skip" and args["if"]):
            return False
    return True


def project(value: Any, selections, variables: dict[str, Any]) -> Any:
    """`value` cut down to the fields of `selections` (lists element-wise)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [project(v, selections, variables) for v in value]
    out: dict[str, Any] = {}
    for sel in selections.selections:
        if not _included(sel, variables):
            continue
        if isinstance(sel, InlineFragmentNode):
            if sel.type_condition is None or sel.type_condition.name.value == value.get("__typename"):
                out.update(project(value, sel.selection_set, variables))
            continue
        name = sel.name.value
        key = sel.alias.value if sel.alias else name
        args = {a.name.value: value_from_ast_untyped(a.value, variables) for a in sel.arguments or ()}
        if name not in value:
            raise FixtureError(f"fixture has no field {name!r}")
        field_value = value[name]
        if callable(field_value):
            field_value = field_value(args)
        elif "first" in args and isinstance(field_value, (list, dict)):
            field_value = _connection(field_value, args)
        out[key] = project(field_value, sel.selection_set, variables) if sel.selection_set else field_value
    return out


# -- REST shapes derived from the same records ------------------------------------------------------


def _rest_user(author: dict | None) -> dict:
    login = (author or {}).get("login", "ghost")
    return {"login": login + ("[bot]" if (author or {}).get("__typename") == "Bot" else ""), "type": "User"}


def rest_pull(node: dict) -> dict:
    return {"number": node["number"], "title": node["title"], "body": node["body"],
            "state": "open" if node["state"] == "OPEN" else "closed", "draft": node["isDraft"],
            "user": _rest_user(node["author"]), "labels": [{"name": n["name"]} for n in node["labels"]["nodes"]],
            "created_at": node["createdAt"], "updated_at": node["updatedAt"], "closed_at": node["closedAt"],
            "merged_at": node["mergedAt"], "merge_commit_sha": (node["mergeCommit"] or {}).get("oid"),
            "base": {"ref": node["baseRefName"]}}


def rest_issue(node: dict, is_pull: bool) -> dict:
    obj = {"number": node["number"], "title": node["title"], "body": node["body"],
           "state": "open" if node["state"] == "OPEN" else "closed", "user": _rest_user(node["author"]),
           "labels": [{"name": n["name"]} for n in node["labels"]["nodes"]], "created_at": node["createdAt"],
           "updated_at": node["updatedAt"], "closed_at": node["closedAt"]}
    if is_pull:
        obj["pull_request"] = {"url": f"/pulls/{node['number']}", "merged_at": node.get("mergedAt")}
    return obj


def rest_file(f: dict) -> dict:
    status = {"ADDED": "added", "DELETED": "removed", "RENAMED": "renamed"}.get(f["changeType"], "modified")
    row = {"sha": hashlib.sha1(f["path"].encode()).hexdigest(), "filename": f["path"], "status": status,
           "additions": f["additions"], "deletions": f["deletions"], "changes": f["additions"] + f["deletions"]}
    if "patch" in f:  # as the API: absent for a binary file or one too big to show
        row["patch"] = f["patch"]
    return row


# -- the server ---------------------------------------------------------------------------------------


@dataclass
class GitHubStub:
    """The stand-in: start(), then point GITHUB_API_URL at `.url`; `.requests` logs what came in."""

    repos: dict[str, Repo]
    token: str | None = None
    faults: deque = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    remaining: int = 5000

    def start(self) -> GitHubStub:
        stub = self

        class Handler(_Handler):
            owner = stub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> GitHubStub:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fault(self, kind: str, path: str | None = None, times: int = 1, **kw: Any) -> None:
        """Queue a fault (see Fault)."""
        self.faults.append(Fault(kind, path, times, **kw))

    def take_fault(self, path: str) -> Fault | None:
        for f in list(self.faults):
            if f.path is None or path.startswith(f.path):
                f.times -= 1
                if f.times <= 0:
                    self.faults.remove(f)
                return f
        return None

    def count(self, prefix: str = "") -> int:
        """Requests whose path starts with `prefix`."""
        return sum(1 for r in self.requests if r.path.startswith(prefix))

    # -- answers: (status, headers, body) -------------------------------------------------------------

    def graphql(self, body: dict) -> tuple[int, dict, Any]:
        doc = parse(body["query"])
        op = next(d for d in doc.definitions if isinstance(d, OperationDefinitionNode))
        variables = body.get("variables") or {}
        reset = datetime.fromtimestamp(time.time() + 3600, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        root = {"rateLimit": {"cost": 1, "remaining": self.remaining, "resetAt": reset},
                "repository": lambda args: self._graphql_repo(args)}
        try:
            return 200, {}, {"data": project(root, op.selection_set, variables)}
        except FixtureError as exc:
            return 200, {}, {"data": None, "errors": [{"type": "STUB", "message": str(exc)}]}

    def _graphql_repo(self, args: dict) -> dict | None:
        repo = self.repos.get(f"{args['owner']}/{args['name']}")
        return None if repo is None else {"pullRequests": repo.pulls, "issues": repo.issues}

    def rest(self, path: str, query: dict[str, str]) -> tuple[int, dict, Any]:
        parts = path.strip("/").split("/")
        if len(parts) < 4 or parts[0] != "repos" or f"{parts[1]}/{parts[2]}" not in self.repos:
            return 404, {}, {"message": "Not Found"}
        repo, rest = self.repos[f"{parts[1]}/{parts[2]}"], parts[3:]
        if rest == ["releases"]:
            rows = repo.releases
        elif rest == ["pulls"]:
            rows = [rest_pull(n) for n in sorted(repo.pulls, key=lambda n: n["updatedAt"], reverse=True)]
        elif rest == ["issues"]:
            both = [(n, False) for n in repo.issues] + [(n, True) for n in repo.pulls]
            rows = [rest_issue(n, p) for n, p in sorted(both, key=lambda x: x[0]["updatedAt"], reverse=True)
                    if n["updatedAt"] >= query.get("since", "")]
        elif len(rest) == 3 and rest[0] == "pulls" and rest[2] == "files":
            node = next((n for n in repo.pulls if str(n["number"]) == rest[1]), None)
            if node is None:
                return 404, {}, {"message": "Not Found"}
            rows = [rest_file(f) for f in node["files"]["nodes"]][:3000]
        else:
            return 404, {}, {"message": "Not Found"}
        return self._paged(path, query, rows)

    def _paged(self, path: str, query: dict[str, str], rows: list) -> tuple[int, dict, Any]:
        per_page, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        last = max(1, -(-len(rows) // per_page))
        links = []
        for rel, n in (("next", page + 1), ("last", last)):
            if page < last:
                links.append(f'<{self.url}{path}?{urlencode({**query, "page": n})}>; rel="{rel}"')
        return 200, {"Link": ", ".join(links)} if links else {}, rows[(page - 1) * per_page:page * per_page]


class _Handler(BaseHTTPRequestHandler):
    owner: GitHubStub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body in separate writes would wait on delayed ACKs
    wbufsize = 1 << 16

    def log_message(self, *_args: Any) -> None:  # keep test output quiet
        return None

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        stub, split = self.owner, urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else {}
        record = Request(method, split.path, dict(parse_qsl(split.query)), body.get("variables") if body else None,
                         {k.lower(): v for k, v in self.headers.items()})
        stub.requests.append(record)
        status, headers, data = self._answer(method, split.path, record, body)
        self._send(status, headers, data, record)

    def _answer(self, method: str, path: str, record: Request, body: dict) -> tuple[int, dict, Any]:
        stub = self.owner
        auth = record.headers.get("authorization")
        if stub.token and auth is not None and auth not in (f"Bearer {stub.token}", f"token {stub.token}"):
            return 401, {}, {"message": "Bad credentials"}
        if path == "/graphql":
            if not auth:
                return 401, {}, {"message": "This endpoint requires you to be authenticated."}
            return stub.graphql(body)
        if method != "GET":
            return 404, {}, {"message": "Not Found"}
        return stub.rest(path, record.query)

    def _send(self, status: int, headers: dict, data: Any, record: Request) -> None:
        stub = self.owner
        payload = json.dumps(data).encode()
        fault = stub.take_fault(record.path)
        extra = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": str(stub.remaining),
                 "x-ratelimit-reset": str(int(time.time()) + 3600)}
        if fault and fault.kind == "primary":
            status, payload = fault.status, b'{"message": "API rate limit exceeded for user ID 1."}'
            extra.update({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time() + fault.seconds))})
        elif fault and fault.kind == "graphql_limited":  # GraphQL says so in a 200 answer
            payload = b'{"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]}'
            extra.update({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time() + fault.seconds))})
        elif fault and fault.kind == "secondary":
            status, extra["retry-after"] = fault.status, str(int(fault.seconds))
            payload = b'{"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}'
        elif fault and fault.kind == "status":
            status, payload = fault.status, b"<html>Bad Gateway</html>"
        elif fault and fault.kind == "slow":
            time.sleep(fault.seconds)
        elif fault and fault.kind == "truncate":
            payload = payload[: len(payload) // 2]
        if self.command == "GET" and status == 200 and not (fault and fault.kind == "truncate"):
            etag = f'"{hashlib.sha1(payload).hexdigest()}"'
            extra["ETag"] = etag
            if self.headers.get("If-None-Match") == etag:
                status, payload = 304, b""
        record.status = status
        try:
            self.send_response(status)
            for key, value in {**headers, **extra}.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)
