"""The lab: what runs the servers. Stacks are data in configs/; this package reads them and runs them.

    model.py       what a stack is, as typed values (roles, images, tunables, checks, causes, status pages)
    rules.py       the expression language of a stack's checks (read with ast, never run as code)
    partfile.py    the tables a part file and a stack file share, read and checked; every problem with its line
    stackfile.py   a stack's folder (stack.toml, the parts it names, its templates) read into a Stack
    stacks.py      the catalog: ours, LOADCMP_STACKS and --stacks; lookup by name or alias; --set parsed
    apps.py        applications as data (app.toml): read, looked up by name, laid over a stack
    ownconfig.py   the user's own config files (--config): which role's file they replace, its port, its status pages
    render.py      config files rendered from Jinja2 templates; the plan for ports already chosen (no I/O)
    certs.py       --tls: the run's CA and the server certificates it issues (cryptography)
    planning.py    a deployment decided: ports picked (or checked) here or on another engine's host, then rendered
    dockerapi.py   docker-py at the lab's edge: its errors mapped to loadcmp's in one table; what its wide types hold
    dockerhost.py  which Docker engine runs the stacks, how it is reached (TLS, ssh) and its client, where the
                   clients reach the servers
    images.py      the base image and the server images (hash-tagged, built with docker-py)
    containers.py  a deployment's containers from a plan: start, readiness, state, logs, versions
    cleanup.py     containers removed: a deployment's, a run's or all by label, and those of dead runs
    archives.py    what is copied into a container before it starts: its configs, the user's pages on a remote engine
    fetch.py       one GET to a server: from here, or inside its container through the Docker API
    www.py         the user's pages (--www): which file a request path is, the hash run.json keeps
    provenance.py  the machine and the commit a run ran on; the owner process and whether it is gone

Imports go one way: containers -> cleanup, fetch; planning -> render -> certs, stacks -> stackfile -> partfile -> model
-> rules; apps -> stackfile; images, dockerhost and provenance -> dockerapi, beside them.
Importing this package imports nothing: docker-py loads only when a container is needed.
"""
