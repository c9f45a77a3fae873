"""Export: both sides' figures where teams already watch them, Prometheus and Grafana.

    families.py    the metric families, each named once (name, type, help, labels), the trial's labels, and the
                   latency histogram's buckets (edges of the recorder's own 1 % buckets, so counts are exact)
    points.py      the stored rows made series values: a second of the client, a server row per role, a trial's
                   end; `Series` keeps each value (a counter's increments summed)
    exposition.py  series values made prometheus-client metric families, in the table's order
    live.py        `Metrics`: the live page's hooks at the same places, and `GET /metrics` (prometheus-client's
                   encoder: the text format, or OpenMetrics when the scraper asks)
    stored.py      `loadcmp export`: stored runs' series with each value at its second, as OpenMetrics (which
                   promtool loads) or CSV

Inside, imports go one way: stored -> live, exposition, points, families; live -> exposition, points;
exposition -> points, families; points -> families. The package reads load (a second's row, the
histogram), store (results folders) and the kernel. `cli.live` hands `Metrics` the hooks the sweep calls.
The Grafana dashboard over these series is docs/grafana/loadcmp.json.
"""

from typing import Literal

Format = Literal["openmetrics", "csv"]
FORMATS: tuple[Format, ...] = ("openmetrics", "csv")
"""`loadcmp export --format`: OpenMetrics text with timestamps, or CSV with one row per sample."""
