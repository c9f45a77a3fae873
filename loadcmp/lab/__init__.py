"""The lab: what runs the servers. Stacks are data in configs/; this package reads them and runs them.

    model.py       what a stack is, as typed values (roles, images, tunables, checks, causes, status pages)
    rules.py       the expression language of a stack's checks (read with ast, never run as code)
    partfile.py    the tables a part file and a stack file share, read and checked; every problem with its line
    stackfile.py   a stack's folder (stack.toml, the parts it names, its templates) read into a Stack
    stacks.py      the catalog: ours, LOADCMP_STACKS and --stacks; lookup by name or alias; --set parsed
    render.py      config files rendered from Jinja2 templates; the deployment plan (no I/O)
    images.py      the base image and the server images (hash-tagged, built with docker-py)
    containers.py  containers from a plan: start, readiness, logs, cleanup by label and of dead runs
    archives.py    what is copied into a container before it starts: its configs, the user's pages on a remote engine
    pages.py       one GET to a server: from here, or inside its container through the Docker API
    dockerhost.py  which Docker engine runs the stacks, how it is reached (TLS, ssh), where the clients reach them
    provenance.py  the machine and the commit a run ran on; the owner process and whether it is gone

Imports go one way: containers -> stacks -> stackfile -> partfile, render -> model -> rules;
images and dockerhost beside them.
Importing this package imports nothing: docker-py loads only when a container is needed.
"""
