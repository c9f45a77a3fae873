"""Events in a trial: a reload, a restart, a killed worker or a paused role, fired during the measured window.

    plan.py     `--event 'AT ACTION'` (and `[[events]]`) read into `Asked`: when (a time in the window, or
                `every DURATION`) and what; the times each fires at; the problems of a spec's events at once
    actions.py  what each action does on a stack, from its data (`[events.ACTION]` in its parts and stack file:
                a command exec'd in a role's container, or Docker's restart), and the generic `pause ROLE
                DURATION`, `restart ROLE` and `set KEY=VALUE`; whether a stack's tables are well-formed
    change.py   `set KEY=VALUE` done: the configs rendered again with the tunable changed, copied into the
                running containers (then its reload, as fire does any action)
    bounded.py  each Docker call of an event held to a time limit; a container left frozen thawed by its cgroup
    fire.py     `Firer`: fires the events of one trial beside the load (a thread each: Docker's calls block), times
                them on the load's clock, and quotes the servers' own lines about each as its evidence

Imports go one way: fire -> change, bounded; actions -> plan. Outside the package: the lab (a stack's data, a
deployment's containers, Docker's errors named) and the kernel. `loadcmp.sweep.trial` drives it; the report reads
what it stored (`facts.EventDoc`), never this package.
"""
