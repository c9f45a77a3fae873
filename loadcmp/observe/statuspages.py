"""What the stacks' own status pages say: busy and idle workers, connections by state.

A stack names its pages and what to read from each (`[status.KIND]` in its part or stack
file: `model.StatusPage`); here a page's text becomes numbers by its format, with no
server named: `regex` (Apache mod_status `?auto`, nginx stub_status, lighttpd's status),
`json` (php-fpm `?json`) or `prometheus` (a metrics endpoint). A regex page may also count
a scoreboard's characters (`count`: Apache's and lighttpd's one character per slot, by state). Pure functions, tested
from fixtures in tests/test_metrics.py; both samplers (metrics.Sampler on this machine,
apimetrics.ApiSampler through the Docker API) read the pages and hand the text here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

from ..lab.model import Stack, StatusPage
from ..lab.dockerapi import output_of
from ..lab.fetch import get_inside

if TYPE_CHECKING:
    from ..lab.containers import Deployment


def parse_regex(text: str, fields: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Each column's regex searched line by line; its one group is the number."""
    out: dict[str, float] = {}
    for column, rx in fields:
        m = re.search(rx, text, re.M)
        if m:
            out[column] = float(m.group(1))
    return out


def parse_json(text: str, fields: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Each column a key of the JSON object the page is (ValueError when it is not one)."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"the status page is not a JSON object: {text[:60]!r}")
    return {column: float(doc[key]) for column, key in fields if key in doc}


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_prometheus(text: str, fields: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Each column a metric of Prometheus' text format, summed over its labels (every handler, every server)."""
    wanted = {metric: column for column, metric in fields}
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) in wanted:
            try:
                v = float(m.group(3))
            except ValueError:
                continue
            column = wanted[m.group(1)]
            out[column] = out.get(column, 0.0) + v
    return out


PARSERS = {"regex": parse_regex, "json": parse_json, "prometheus": parse_prometheus}
"""A status page's format (model.FORMATS) -> its parser."""


def count_slots(text: str, fields: Iterable[tuple[str, str, str]]) -> dict[str, float]:
    """Each column the characters of its regex's group (a scoreboard: one character per worker slot or
    connection) that are among its own (Apache's `K`: a worker held by an idle keep-alive connection)."""
    out: dict[str, float] = {}
    for column, rx, chars in fields:
        m = re.search(rx, text, re.M)
        if m:
            out[column] = float(sum(m.group(1).count(ch) for ch in chars))
    return out


def parse_page(page: StatusPage, text: str) -> dict[str, float]:
    """A page's text as the columns its stack reads from it (those it counts on a scoreboard: `count_slots`)."""
    counted = dict(page.count)
    return PARSERS[page.format](text, [(c, what) for c, what in page.fields if c not in counted]) | count_slots(
        text, [(c, what, counted[c]) for c, what in page.fields if c in counted])


def command_status(dep: Deployment, page: StatusPage) -> dict[str, float]:
    """A status read by a command in a role's container (a database's `SHOW GLOBAL STATUS`), parsed as a
    page's text; ValueError when the command fails (the database refused it, the container ended)."""
    assert page.role is not None and page.command is not None
    res = dep.container_of(page.role).exec_run(["sh", "-c", page.command])
    code, text = res.exit_code, output_of(res).decode(errors="replace")
    if code != 0:
        raise ValueError(f"`{page.command}` exited with {code}: {' '.join(text.split())[:200]}")
    return parse_page(page, text)


BUSY_UNREAD = "busy_unread"
"""A second's column: 1 when the pages read that count busy workers gave none (unanswered, or no figure)."""


def with_busy_workers(status: dict[str, float], columns: Iterable[str],
                      pages: Iterable[StatusPage] = ()) -> dict[str, float]:
    """Adds busy_workers: the first of the stack's `busy_workers` columns that the pages gave
    (the front server's workers where it has them, else PHP's). Where none came though one of the `pages`
    read counts them, `BUSY_UNREAD`: a page its own workers serve goes unanswered when every one is held."""
    columns = list(columns)
    busy = next((status[c] for c in columns if c in status), None)
    if busy is not None:
        return {**status, "busy_workers": busy}
    read = {col for page in pages for col, _ in page.fields}
    return {**status, BUSY_UNREAD: 1.0} if read.intersection(columns) else status


def unanswered(pages: Iterable[StatusPage], get: Callable[[str], tuple[int, bytes]]) -> dict[str, str]:
    """The pages that do not answer with their figures (kind -> why): on a server that runs the user's own
    config they are left out and named, not read as zeros. `get` fetches a path (status, body)."""
    out: dict[str, str] = {}
    for page in pages:
        if page.command is not None:
            continue  # not the user's server's: an app's role, read by its command
        try:
            code, body = get(page.path)
            figures = parse_page(page, body.decode(errors="replace")) if code == 200 else {}
        except (OSError, ValueError) as e:
            out[page.kind] = f"{page.path} gave no answer ({e})"
            continue
        if code != 200:
            out[page.kind] = f"{page.path} answered HTTP {code}"
        elif not figures:
            out[page.kind] = f"{page.path} answered without its figures"
    return out


def leave_out_unanswered(dep: Deployment) -> None:
    """On a server that runs the user's own config, the pages it lacks (or keeps elsewhere) are left out of
    `dep.status_pages` and named in `dep.unmeasured`; ours always answer."""
    if dep.plan.own:
        dep.unmeasured.update(unanswered(dep.status_pages.values(), partial(get_inside, dep.front, dep.port,
                                                                           tls=dep.plan.tls is not None)))


def unmeasured(stack: Stack, missing: dict[str, str]) -> list[str]:
    """What is not measured without these pages, in words: each page's figures, and the evidence that reads them
    (busy workers; a cause's 'all workers busy' or counter)."""
    gone = {col for page in stack.status if page.kind in missing for col, _ in page.fields}
    out = [f"the {kind} status page ({why}), so its figures "
           f"({', '.join(col for page in stack.status if page.kind == kind for col, _ in page.fields)})"
           for kind, why in missing.items()]
    if stack.busy_workers and set(stack.busy_workers) <= gone:
        out.append("busy workers (none of the pages that count them answers)")
    out += [f"the status-page evidence of {c.key} ({c.peak or c.counter})" for c in stack.causes
            if (c.peak or c.counter) in gone]
    return out
