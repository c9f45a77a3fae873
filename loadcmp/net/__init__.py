"""The network between the clients and the server (`--net`): conditions asked, the proxy that applies them,
the conditions seen, and what the proxy costs.

    conditions.py  SPEC and profiles (`configs/net/`) -> NetSpec; what no path carries (UDP, loss without netem)
    netem.py       whether this kernel has the netem path's qdiscs and filter (probed once), and why not
    qdisc.py       the netem path (`via=netem`, a loss): the conditions laid on lo with tc for the server's port
    toxiproxy.py   toxiproxy-server: found, started pinned, its API, stopped; strays for `loadcmp down`
    seen.py        the probe: a round trip and the rates measured through a sibling proxy before the window
    cost.py        the proxy's CPU over the window, per request; network-bound
    path.py        all of it around one load: `open_path` (or `open_netem`) -> NetPath (where the engine
                   is routed), its facts
    words.py       the facts in words, for the console and the report (from a stored summary)

Inside, imports go one way: path -> cost, seen, qdisc -> conditions -> toxiproxy, netem; words stands alone.
`load` never imports this package: the sweep and bench hand the engine the address to route to.
"""
