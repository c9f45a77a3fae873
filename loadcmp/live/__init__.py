"""The live page: a command's per-second records in the browser as they are stored, and the same page for a
stored run (`loadcmp serve`).

    hub.py      every event kept in order and fanned out, a bounded queue per browser; slow ones dropped
    feed.py     the command's records as the page's events: taken where the store takes them (the
                window's seconds as they close, the sampler's rows, the writer's watch), nothing parsed
    server.py   aiohttp in a thread and an event loop of its own: the page, server-sent events, the token
    storedruns.py  `loadcmp serve`: the stored runs listed, a run's events made from its folder, its report
    catalogpages.py  `loadcmp serve`'s compare and history pages and their JSON (/api/compare, /api/history),
                from the catalog's answers (the history drawn by static/history.js with uPlot)
    static/     the page (index.html, live.js, live.css; history.js for the history page) and uPlot,
                vendored at a pinned version with its LICENSE (static/vendor/uplot-1.6.32/): no build step, no CDN

Inside, imports go one way: storedruns -> catalogpages, feed, server, hub; feed -> hub; server -> hub. The
package imports catalog, store, report and load (below it), never sweep: the sweep's hooks
(`sweep.trial.SweepHooks.sample`, `stored`) and the writer's watch (`store.writer.Watch`) are plain
callables, and `loadcmp.cli.live` hands them the feed's methods.
"""

DEFAULT_PORT = 5665
"""`--live` without a port, as k6's dashboard."""
