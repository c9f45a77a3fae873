"""The lab: what runs the servers. Stacks are data in configs/; this package reads them and runs them.

    stacks.py      the stacks as data (configs/stacks/): tunables, their checks, the effective settings
    render.py      config files rendered from templates; the deployment plan (no I/O)
    images.py      the base image and the server images (hash-tagged, built with docker-py)
    containers.py  containers from a plan: start, readiness, logs, cleanup by label and of dead runs
    pages.py       one GET to a server: from here, or inside its container through the Docker API
    dockerhost.py  which Docker engine runs the stacks, how it is reached (TLS, ssh), where the clients reach them
    provenance.py  the machine and the commit a run ran on; the owner process and whether it is gone

Imports go one way: containers -> render -> stacks; images and dockerhost beside them.
Importing this package imports nothing: docker-py loads only when a container is needed.
"""
