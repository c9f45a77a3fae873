"""`set KEY=VALUE` done to a running stack: its configs rendered again with the tunable changed, as a deploy
changes a setting, and copied into its roles' containers; the action that puts it in effect (a reload) follows
(`events.fire`).

The render is the lab's own (`lab.render.render`) over the deployment's plan: the same ports, pages, app and
certificate, the settings in effect with KEY changed and checked again by the stack's checks (a value they
refuse fails the event in one line). The user's own files (`--config`) stay as they are. The deployment's plan
is replaced by the new one, so a second `set` adds to the first.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..lab import render
from ..lab.archives import config_tar
from ..lab.model import TLS_PART
from ..units import Setting

if TYPE_CHECKING:
    from ..lab.containers import Deployment


def apply(dep: Deployment, key: str, value: Setting) -> None:
    """Render the deployment's configs with `key` at `value` and copy each role's into its container
    (ConfigError: the stack's checks refuse the value; LabError: Docker's)."""
    plan = dep.plan
    settings = plan.stack.effective({**plan.settings, key: value})
    if plan.tls is None:  # a plain run renders no TLS lines: its tls.* settings are not in effect
        settings = {k: v for k, v in settings.items() if k.split(".", 1)[0] != TLS_PART}
    www = render.USER_WWW if plan.www else render.WWW
    fresh = render.render(plan.stack, settings, plan.ports, plan.bind, dep.host.nofile, www, plan.app, plan.tls)
    old = {r.role.name: r for r in plan.rendered}
    for r in fresh:
        for dest in r.files:
            if f"{r.role.name}/{dest}" in plan.own:  # the user's own file is theirs, whatever the settings
                r.files[dest] = old[r.role.name].files[dest]
        dep.container_of(r.role.name).put_archive("/etc", config_tar(r.files))
    dep.plan = replace(plan, settings={k: v for k, v in settings.items() if k in plan.settings or k == key},
                       rendered=tuple(fresh))
