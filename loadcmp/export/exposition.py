"""Series values made `prometheus-client` metric families, in the table's order; `prometheus-client` writes
them (the text format for a scrape, OpenMetrics with timestamps for a stored run)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric

from .families import FAMILIES, TRIAL_LABELS, Family
from .points import Buckets, Labels

Value = tuple[str, Labels, float, float | None]
"""A family's name, the series' label values, its value, and its timestamp (None: now, as a scrape says it)."""
Hist = tuple[Labels, Buckets, float | None]
"""A latency histogram's label values (the trial's and the page), its buckets, its timestamp."""

LATENCY = "loadcmp_request_latency_seconds"


def _empty(f: Family) -> Metric:
    labels = [*TRIAL_LABELS, *f.labels]
    if f.kind == "counter":
        return CounterMetricFamily(f.name, f.help, labels=labels)
    if f.kind == "histogram":
        return HistogramMetricFamily(f.name, f.help, labels=labels)
    return GaugeMetricFamily(f.name, f.help, labels=labels)


def families(values: Iterable[Value], hists: Iterable[Hist]) -> list[Metric]:
    """Each family that has a value, with all its series (a series' values in the order given)."""
    out: dict[str, Metric] = {}
    for name, labels, v, ts in values:
        m = out.get(name)
        if m is None:
            m = out[name] = _empty(FAMILIES[name])
        m.add_metric(list(labels), v, timestamp=ts)  # type: ignore[attr-defined]
    for labels, b, ts in hists:
        h = out.get(LATENCY)
        if h is None:
            h = out[LATENCY] = _empty(FAMILIES[LATENCY])
        h.add_metric(list(labels), b.pairs(), b.sum_s, timestamp=ts)  # type: ignore[attr-defined]
    return [out[n] for n in FAMILIES if n in out]
