"""What a stack is, as typed values: roles, images, tunables, checks, log causes, status pages.

`stackfile` reads them from a stack's directory (`configs/stacks/<name>/stack.toml` and the
parts it names in `configs/parts/`), `stacks` keeps the catalog, `render` turns a stack and
its settings into files. Nothing here reads a file but `project_root`, so all of it is
plain data that tests build by hand.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..protocols import DEFAULT as DEFAULT_PROTOCOL
from ..errors import ConfigError
from ..units import Setting
from . import rules


def project_root() -> Path:
    """Where `configs/` and the Dockerfiles live; the one place that decides it.

    1. LOADCMP_HOME, when set: a user's own copy of them, which wins over everything.
    2. The checkout the package is imported from (`configs/` beside the `loadcmp/` folder: a
       clone, an editable install), so that an edit there takes effect at once.
    3. Else the copy a wheel installs in `loadcmp/_data` (setup.py puts it there, byte for byte,
       so the image tags come out as in the checkout).
    """
    env = os.environ.get("LOADCMP_HOME")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent
    if (checkout / "configs" / "stacks").is_dir() and (checkout / "configs" / "parts").is_dir():
        return checkout
    return package / "_data"


def configs_dir() -> Path:
    return project_root() / "configs"


@dataclass(frozen=True)
class Tunable:
    """One knob of a server config, with its default and its bounds."""

    key: str
    default: Setting
    doc: str
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]

    def parse(self, raw: object) -> Setting:
        """Turn a value (a --set string or a TOML value) into this knob's type."""
        d = self.default
        if isinstance(d, bool):
            if isinstance(raw, bool):
                return raw
            s = str(raw).strip().lower()
            if s in ("1", "true", "on", "yes"):
                return True
            if s in ("0", "false", "off", "no"):
                return False
            raise ConfigError(f"{self.key}: expected on/off, got {raw!r}")
        if isinstance(d, int):
            try:
                v = int(str(raw).strip()) if not isinstance(raw, bool) else None
            except ValueError:
                v = None
            if v is None:
                raise ConfigError(f"{self.key}: expected a whole number, got {raw!r}")
            if self.min is not None and v < self.min or self.max is not None and v > self.max:
                raise ConfigError(f"{self.key}: {v} is outside {self.min}..{self.max}")
            return v
        s = str(raw).strip()
        if self.choices and s not in self.choices:
            raise ConfigError(f"{self.key}: expected one of {', '.join(self.choices)}, got {raw!r}")
        if self.pattern and not re.match(self.pattern, s):
            raise ConfigError(f"{self.key}: {raw!r} is not a valid value ({self.doc or self.pattern})")
        return s

    def others(self) -> list[Setting]:
        """A few values it takes besides its default (its bounds, its neighbours, the other choices; none for a
        free string): what `Stack.fixes` tries."""
        d = self.default
        if isinstance(d, bool):
            return [not d]
        if isinstance(d, int):
            lo, hi = self.min if self.min is not None else d - 1, self.max if self.max is not None else 2 * d + 1
            return [v for v in dict.fromkeys((lo, hi, d - 1, d + 1, 2 * d)) if v != d and lo <= v <= hi]
        return [c for c in self.choices or () if c != d]


@dataclass(frozen=True)
class Check:
    """A combination of settings the server refuses or silently changes (`rules`)."""

    rule: str
    tree: ast.expr = field(compare=False, repr=False)
    says: str
    """What to tell the user when the rule does not hold; `{expression}`s are filled in."""


@dataclass(frozen=True)
class Cause:
    """A limit a server says it met, and the log line that says so."""

    key: str
    """Stable name, `program.what`: the key of TrialRecord.log_evidence."""
    pattern: re.Pattern[str] | None
    """Matches the line; its match is what a note quotes. None: no line says it (the kernel's counters do)."""
    phrase: str
    """What it means, in words, naming the limit."""
    setting: str | None = None
    """The tunable it points to (`{workers}`-style names are filled from the roles' vars); None: not a tunable."""
    kinds: tuple[str, ...] = ()
    """The client failure kinds it makes (`records.FAIL_KINDS`); () = it makes none by itself."""
    peak: str | None = None
    """A status column whose peak at the setting's value is evidence too (all workers busy)."""
    peak_said: str = ""  #: that evidence in words; `{limit}` is the setting's value
    counter: str | None = None
    """A status counter whose rise in the window is evidence too (php-fpm's 'max children reached')."""
    counter_said: str = ""  #: that evidence in words; `{times}` is the rise in words
    total: str | None = None
    """A server column whose sum over the window is evidence too (the kernel's listen-queue overflows)."""
    total_said: str = ""  #: that evidence in words; `{times}` is the sum in words, `{scope}` what the counters cover
    also: str | None = None
    """Another tunable its words name beside `setting` (`{accept_limit}`: the worker limit behind a full queue)."""
    held: str | None = None  #: a state column that held most busy workers when all were held (`evidence.held_at`)
    held_said: str = ""  #: that evidence in words: `{held}` of `{busy}` busy workers, `{limit}` the setting's value


@dataclass(frozen=True)
class StatusPage:
    """A status page on the front port, read from the server's own loopback at 1 Hz."""

    kind: str
    path: str
    format: str
    """regex (column = a regex with one group), json (column = a key of an object) or
    prometheus (column = a metric name, summed over its labels)."""
    fields: tuple[tuple[str, str], ...]
    """(column, what to read) pairs."""
    find: str | None = None  #: a regex whose group is the page's path in a config file of the user's (`ownconfig`)
    role: str | None = None
    """Not a page but a command run in this role's container (a database has no HTTP page); None: a page."""
    command: str | None = None
    """That command (`sh -c`); its output is read by `format` as a page's text would be."""
    count: tuple[tuple[str, str], ...] = ()  #: (column, characters): a regex field's group counted, not read
    states: tuple[tuple[str, str], ...] = ()  #: (column, its state in words): connections by state, shown per level


@dataclass(frozen=True)
class ErrorLogFind:
    """How a program's config file names its error log: read from a user's own file (`ownconfig.error_logs`)."""

    program: str
    files: tuple[str, ...]
    """The config files in this syntax (the rendered file's name that the user's file replaces)."""
    find: str
    """A regex (multi-line) whose group 1 is where the log goes, as written."""
    root: str | None = None
    """What a relative path is relative to (the program's prefix); None: unknown."""
    default: str | None = None
    """Where the program logs when its file names no log; None: its stderr."""
    always: bool = False
    """The default is read beside the logs the file names, when it is there (nginx writes its core's errors
    there unless the main context names another log)."""


FORMATS = ("regex", "json", "prometheus")
TLS_PART = "tls"
"""The part a stack lists to serve https: its `tls.*` settings, rendered by its templates only under `--tls`."""


@dataclass(frozen=True)
class Image:
    """One image the lab builds: a Dockerfile and the folder its context comes from."""

    key: str
    """The image's name under loadcmp/ (the tag is a hash of its inputs)."""
    dockerfile: Path
    """The Dockerfile; for an app's image, the app.toml it is made from (`context` holds its Dockerfile)."""
    home: Path | None = None
    """The stack folder whose files form the build context; None: a shared image of the
    project root (its context is configs/www and configs/entrypoint.sh)."""
    parent: Image | None = None
    """The image this one is built on (an app's layer on a stack's image); None: the Debian base."""
    context: tuple[tuple[str, bytes], ...] = field(default=(), compare=False, repr=False)
    """The whole build context, when it is made rather than read from a folder (an app's image)."""


@dataclass(frozen=True)
class Role:
    """One container of a stack."""

    name: str
    """Short role name, part of the container name (web, backend)."""
    image: Image
    command: tuple[str, ...]
    """The arguments of the image's entrypoint."""
    files: tuple[tuple[str, str], ...]
    """(file under /etc/loadcmp, the template that renders it)."""
    vars: Mapping[str, object] = field(default_factory=dict)
    """Values the templates read as `vars.<name>` (which MPM, how PHP runs)."""
    versions: tuple[tuple[str, str], ...] = ()
    """(program, the command whose first line is its version)."""
    ready: str | None = None
    """A command (`sh -c`, `{port}` filled) that succeeds inside the container once the role serves; None:
    the HTTP ready path answers (a web role). A database has no page to ask."""
    apart: bool = False
    """Measured apart from the server (an app's database): its CPU and memory are its own columns
    (`<role>_cpu_pct`, `<role>_mem_bytes`), not part of the server's."""


@dataclass(frozen=True, eq=False)
class Stack:
    """A server set-up: what runs, how PHP runs, which tunables apply, what its logs and pages say.

    Compared by identity: the catalog holds one of each."""

    name: str
    description: str
    roles: tuple[Role, ...]
    php_api: str
    """What phpinfo() says as "Server API" on this stack."""
    tunables: Mapping[str, Tunable]
    checks: tuple[Check, ...] = ()
    causes: tuple[Cause, ...] = ()
    status: tuple[StatusPage, ...] = ()
    busy_workers: tuple[str, ...] = ()
    """Status columns that count busy workers, the first one present wins."""
    busy_limit: str | None = None
    """The tunable that caps what the first of `busy_workers` counts (all busy: requests queue)."""
    backlog: str | None = None  #: the tunable of the front's listen backlog (the kernel's accept queue), if any
    accept_limit: str | None = None  #: the tunable whose limit, all busy, stops the front accepting (a process each)
    parts: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    smoke: bool = False
    """One of `loadcmp smoke`'s servers when none are named."""
    home: Path | None = None  #: the folder it was read from
    origin: str = "built-in"
    """built-in, or the --stacks folder (or LOADCMP_STACKS / experiment file) it came from."""
    listen: tuple[str, ...] = ()
    """Regexes whose group 1 is the port in the front role's main config (a user's own file: `ownconfig`)."""
    error_logs: tuple[ErrorLogFind, ...] = ()
    """Where each program's config names its error log (a user's own file: `ownconfig.error_logs`)."""
    order: int = 100
    """Where it is listed (and run, for `all`) among the stacks of its folder: lowest first, then by name."""
    protocols: tuple[str, ...] = (DEFAULT_PROTOCOL,)
    """What its front role's config offers, by name in `loadcmp.protocols` (the primer checks what it negotiates);
    those over TLS only (h2, h3) with --tls only."""
    goaway_after: str | None = None
    """The tunable after whose count of requests on one connection the server sends GOAWAY (its keep-alive limit)."""

    @property
    def serves_https(self) -> bool:
        """Whether it can serve https (`--tls`): it lists the part `tls`, whose settings its templates read."""
        return TLS_PART in self.parts

    @property
    def front(self) -> Role:
        """The role the clients talk to (the last one started)."""
        return self.roles[-1]

    @property
    def sections(self) -> tuple[str, ...]:
        """The tunable sections that apply (`--set SECTION.KEY=…`)."""
        return tuple(dict.fromkeys(t.section for t in self.tunables.values()))

    @property
    def vars(self) -> dict[str, object]:
        """Every role's vars, the front's winning."""
        out: dict[str, object] = {}
        for r in self.roles:
            out.update(r.vars)
        return out

    @property
    def workers(self) -> str | None:
        """How the server handles connections, in its own word, as a role's `vars.workers` says (stored
        with each label), if one does."""
        v = self.vars.get("workers")
        return str(v) if v is not None else None

    @property
    def images(self) -> tuple[Image, ...]:
        return tuple(dict.fromkeys(r.image for r in self.roles))

    def setting_of(self, cause: Cause, name: str | None = None) -> str | None:
        """The tunable a cause points to (or `name`, another it names), its `{var}`s filled from the roles' vars
        and the stack's own `{busy_limit}`, `{backlog}` and `{accept_limit}`; None where one is missing."""
        name = cause.setting if name is None else name
        if name is None:
            return None
        own = {k: v for k in ("busy_limit", "backlog", "accept_limit") if (v := getattr(self, k))}
        try:
            return name.format(**self.vars, **own)
        except (KeyError, IndexError, ValueError):
            return None

    def fixes(self, key: str) -> bool:
        """Whether its checks keep `key` at its default: each other value tried breaks a check that reads it
        alone (a setting its server has no switch for, as Caddy's HTTP/2 streams)."""
        t, own = self.tunables.get(key), [c for c in self.checks if rules.names(c.tree) == {key}]
        if t is None or not own or not t.others():
            return False
        vals = {k: x.default for k, x in self.tunables.items()}
        return all(any(not rules.evaluate(c.tree, {**vals, key: v}) for c in own) for v in t.others())

    def broken_checks(self, vals: Mapping[str, Setting]) -> list[str]:
        """What the stack's checks say of these values (a rule that cannot be evaluated on them says so too)."""
        out = []
        for c in self.checks:
            try:
                if not rules.evaluate(c.tree, vals):
                    out.append(rules.fill(c.says, vals))
            except (rules.RuleError, ArithmeticError, TypeError) as e:
                out.append(f"check {c.rule!r} cannot be evaluated on these settings ({type(e).__name__}: {e})")
        return out

    def effective(self, overrides: Mapping[str, object]) -> dict[str, Setting]:
        """The values in effect: the defaults, then the overrides of this stack's own keys (parsed
        again by its own tunable: a user's stack may bound a key differently), then its checks."""
        vals = {k: t.default for k, t in self.tunables.items()}
        errs: list[str] = []
        for k, v in overrides.items():
            if k in vals:
                try:
                    vals[k] = self.tunables[k].parse(v)
                except ConfigError as e:
                    errs.append(f"{self.name}: {e}")
        if errs:
            raise ConfigError(errs[0], errs)
        broken = self.broken_checks(vals)
        if broken:
            raise ConfigError(f"{self.name}: " + "; ".join(broken), broken)
        return vals


APP_DIR = "/srv/app"  # where an app's code is in its images


@dataclass(frozen=True)
class AppPage:
    """A page of an app: what a run may load, and what a good answer holds."""

    name: str
    path: str
    """The request path, from / (with its query, if the page needs one)."""
    expect: str
    """Text a good answer contains (the primer refuses one without it: an error page, another site)."""
    doc: str = ""


@dataclass(frozen=True, eq=False)
class App:
    """An application run behind any web stack (`configs/apps/<name>/app.toml`), as data.

    Compared by identity: the catalog holds one of each."""

    name: str
    description: str
    home: Path  #: the folder it was read from
    packages: tuple[str, ...]
    """Debian packages installed into each image it runs in."""
    code: str | None
    """The folder (beside app.toml) copied to APP_DIR; None: the packages bring all of it."""
    root: str
    """The document root, relative to APP_DIR (`public`)."""
    front: str
    """The front controller, relative to the root: a path that is no file is answered by it."""
    writable: tuple[str, ...]
    """Folders under APP_DIR the web server's user writes (caches, logs)."""
    setup: tuple[str, ...]
    """Commands run once when a container starts, in APP_DIR as www-data, before its server."""
    ready: str
    """A path that answers 200 once the server is up, without running the app (a static file)."""
    settings: Mapping[str, Setting]
    """Tunables it starts with (pool sizes it needs), under the user's --set."""
    pages: tuple[AppPage, ...]
    origin: str = "built-in"
    roles: tuple[Role, ...] = ()
    """Its own containers (a database), started before the web stack's, measured apart."""
    tunables: Mapping[str, Tunable] = field(default_factory=dict)
    """Its roles' tunables (`db.max_connections`), set with --set like a server's."""
    causes: tuple[Cause, ...] = ()
    status: tuple[StatusPage, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    """(file under /etc/loadcmp, its template beside app.toml), rendered into every web role (how it
    reaches its database: `ports.<role>`)."""
    build: tuple[str, ...] = ()
    """Commands run as root when its image layer is built, after its packages and code."""
    smoke_checks: tuple[str, ...] = ()
    """`loadcmp smoke --app`'s checks (its `[smoke] checks`), in place of the default file's: its own pace."""

    @property
    def www(self) -> str:
        """The document root in the container."""
        return f"{APP_DIR}/{self.root}".rstrip("/") if self.root else APP_DIR

    def page_for(self, page: str) -> AppPage | None:
        """The app's page a request path is (its query aside, unless the page names one), or None."""
        bare = page.split("#", 1)[0]
        return next((p for p in self.pages if p.path == bare), None) or \
            next((p for p in self.pages if p.path == bare.split("?", 1)[0]), None)

    def template_vars(self) -> dict[str, str]:
        """What the stacks' templates see as `app` (routing to the front controller)."""
        return {"name": self.name, "root": self.www, "front": self.front}
