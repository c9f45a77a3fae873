// loadcmp serve's history page: /api/history (the same JSON as `loadcmp history --json`) drawn with uPlot,
// one chart per series, the runs oldest first along x, each change point a vertical line.
(function () {
  "use strict";
  const UNITS = { rps: "req/s", p50: "ms", p99: "ms", failed_rate: "%", cpu_per_request: "ms", mem_peak: "MiB" };
  const scale = (metric, v) => (v == null ? null : metric === "mem_peak" ? v / 1048576 : v);
  const el = (tag, text, cls) => { const n = document.createElement(tag); if (text) n.textContent = text; if (cls) n.className = cls; return n; };
  // a cell's workload in model.CellKey.workload's words: `h2, 4 streams; mix /a=60,/b=40 seed 7; app wordpress`
  const workload = (c) => [c.protocol + (c.streams && c.streams !== 1 ? `, ${c.streams} streams` : ""),
    ...(c.traffic ? [c.traffic] : []), ...(c.app ? [`app ${c.app}`] : [])].join("; ");
  const cellText = (c) => `${c.label}@${c.level} ${c.page} (${workload(c)})`;
  const fmt = (v) => (v == null ? "-" : Math.abs(v) >= 100 ? v.toLocaleString("en", { maximumFractionDigits: 0 }) : v.toFixed(2));
  const diffText = (d) => (d.scope ? `${d.scope}: ` : "") + d.key + " " + (d.kind === "config" && d.before != null && d.after != null
    ? "changed" : `${d.before ?? "(none)"} → ${d.after ?? "(none)"}`);

  function changeLines(cps) {
    return (u) => {
      const ctx = u.ctx;
      ctx.save();
      for (const cp of cps) {
        const x = u.valToPos(cp.index - 0.5, "x", true);
        ctx.strokeStyle = cp.direction === "worse" ? "#d62728" : "#2ca02c";
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1.5 * devicePixelRatio;
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
      }
      ctx.restore();
    };
  }

  function draw(metric, s, box) {
    const unit = UNITS[metric] || "";
    box.appendChild(el("h2", `${cellText(s.cell)}: ${metric} (${unit}), ${s.points.length} runs, oldest first`));
    const plot = el("div", "", "plot");
    box.appendChild(plot);
    const xs = s.points.map((_, i) => i);
    const base = (path) => path.split("/").pop();
    const names = s.points.map((p) => base(p.run.path));
    const data = [xs, s.points.map((p) => scale(metric, p.value.mean)), s.points.map((p) => scale(metric, p.value.low)),
      s.points.map((p) => scale(metric, p.value.high))];
    const opts = {
      width: Math.min(1100, window.innerWidth - 40), height: 280, scales: { x: { time: false } },
      axes: [{ label: "run", values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) ? names[t] || "" : "")) }, { size: 70, label: unit }],
      series: [{ label: "run", value: (u, v) => (v == null ? "-" : names[v]) },
        { label: metric, stroke: "#1f77b4", width: 1.5, points: { show: true, size: 6 } },
        { label: "95 % low", stroke: "#1f77b480", dash: [4, 4] }, { label: "95 % high", stroke: "#1f77b480", dash: [4, 4] }],
      hooks: { draw: [changeLines(s.change_points)] },
    };
    window.loadcmpHistory.push(new uPlot(opts, data, plot));
    const list = el("ul", "", "change-points");
    for (const cp of s.change_points) {
      const d = cp.differences.length ? cp.differences.map(diffText).join("; ") : "no set-up difference";
      list.appendChild(el("li", `change point at ${base(cp.run.path)}: ${fmt(scale(metric, cp.before))} → ` +
        `${fmt(scale(metric, cp.after))} ${unit} (${cp.change == null ? "from 0" : (cp.change * 100).toFixed(1) + " %"}, ${cp.direction}); set-up: ${d}`,
        `cp-${cp.direction}`));
    }
    if (!s.change_points.length) list.appendChild(el("li", "no change point"));
    box.appendChild(list);
  }

  window.loadcmpHistory = [];  // the charts drawn, for whoever checks them

  async function main() {
    const status = document.getElementById("status");
    const resp = await fetch("/api/history" + window.location.search);
    const h = await resp.json();
    if (!resp.ok) { status.textContent = h.error; status.className = "problem"; return; }
    status.textContent = `${h.series.length} series over ${h.runs.length} stored folders`;
    const box = document.getElementById("series");
    for (const s of h.series) draw(h.query.metric, s, box);
    const used = new Set(h.series.flatMap((s) => s.points.map((p) => p.run.path)));
    const unread = h.runs.filter((r) => !used.has(r.path) && ["broken", "abandoned", "running"].includes(r.state));
    document.getElementById("unread-head").hidden = unread.length === 0;
    const ul = document.getElementById("unread");
    for (const r of unread) ul.appendChild(el("li", `${r.path}: ${r.state}${r.reason ? ": " + r.reason : ""}`, `st-${r.state}`));
  }
  main().catch((err) => { document.getElementById("status").textContent = "cannot draw: " + err; });
})();
