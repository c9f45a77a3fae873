// loadcmp's live page: the command's events (server-sent) drawn with uPlot. Read-only: it only listens.
// The same page replays a stored run (`loadcmp serve`): the events then come from the run's files.
"use strict";
(function () {
  const EVENTS = document.currentScript.dataset.events;
  // the failure kinds come with `hello` (load.record.outcomes.KINDS); these only for a stream without them
  const failKinds = () => ((S.hello && S.hello.kinds) || ["ok", "http_4xx", "http_5xx", "connect_refused",
    "connect_timeout", "reset", "timeout", "protocol_error", "tls_error"]).filter((k) => k !== "ok");
  // red is kept for failures and the client-bound signal
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const MiB = 1048576;
  // a scale for counts of several orders of magnitude: asinh is 0 at 0, linear below 1 and logarithmic above,
  // from 0 to the largest count, marked at the powers of ten
  const ASINH = { scale: { distr: 4, asinh: 1, range: (u, lo, hi) => [0, Math.max(10, hi * 1.2)] },
    axis: { splits: (u) => [0, 10, 100, 1e3, 1e4, 1e5, 1e6].filter((v) => v <= u.scales.y.max),
            filter: (u, splits) => splits } };  // every power of ten labelled (a log axis leaves some out)
  let S;
  const charts = {};
  window.loadcmp = { charts, get state() { return S; } };

  function reset() {
    S = { hello: null, trials: new Map(), current: null, progress: null, ended: null, causes: [], alerts: [],
          running: null, parts: new Map() };
    for (const k of Object.keys(charts)) { charts[k].destroy(); delete charts[k]; }
    document.getElementById("client-charts").innerHTML = "";
    document.getElementById("server-charts").innerHTML = "";
  }

  const keyOf = (k) => `${k.server}|${k.level}|${k.trial}`;
  const nameOf = (k) => `${k.server} ${unit()}=${k.level} #${k.trial}`;
  const unit = () => (S.progress && S.progress.capacity && S.progress.capacity.unit === "requests/s") ? "r" : "c";
  const esc = (t) => String(t ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;", "'": "&#39;" }[c]));

  function trialOf(key) {
    const k = keyOf(key);
    if (!S.trials.has(k)) S.trials.set(k, { key, client: new Map(), server: new Map(), marks: new Map(), stored: null });
    return S.trials.get(k);
  }

  function onEvent(ev) {
    switch (ev.type) {
      case "hello": {  // a new run (seeds runs several on one page): its trials only
        if (S.hello) Object.assign(S, { trials: new Map(), current: null, progress: null, ended: null, causes: [],
                                        alerts: [], running: null, parts: new Map() });
        S.hello = ev; document.getElementById("title").textContent = ev.title;
        break;
      }
      case "trial": {
        trialOf(ev.key); S.running = keyOf(ev.key);
        if (document.getElementById("follow").checked || S.current === null) S.current = S.running;
        break;
      }
      case "client": trialOf(ev.row).client.set(ev.row.second, ev.row); break;
      case "mark": {  // an --event: fired (end_s null), then ended; keyed by what was asked and when it was due
        trialOf(ev.key).marks.set(`${ev.asked}|${ev.at_s}`, ev);
        alertEvent(ev.key, ev);
        break;
      }
      case "server": {
        const t = trialOf(ev.row);
        const before = t.server.get(ev.row.second - 1);
        if (ev.row.oom_kills > 0 && !(before && before.oom_kills >= ev.row.oom_kills)) {
          S.alerts.push(`${nameOf(ev.row)}: ${ev.row.oom_kills} server process(es) OOM-killed by second ${ev.row.second}`);
        }
        t.server.set(ev.row.second, ev.row);
        break;
      }
      case "stored": stored(ev); break;
      case "parts": S.parts.set(ev.key.server, ev); break;  // --trace: a label's last joined trial
      case "progress": S.progress = ev; break;
      case "end": S.ended = ev; S.running = null; break;
    }
    schedule();
  }

  // a failed event is an alert, once (live, then stored, it is told twice)
  function alertEvent(key, e) {
    const t = trialOf(key), id = `${e.asked}|${e.at_s}`;
    if (e.ok !== false || (t.alerted || (t.alerted = new Set())).has(id)) return;
    t.alerted.add(id);
    S.alerts.push(`${nameOf(key)}: event '${e.asked}' at ${e.start_s} s failed: ${e.said}`);
  }

  function stored(ev) {
    const t = trialOf(ev.key);
    t.stored = ev;
    // the stored rows are the records themselves: they replace what was drawn live of the window (the warm-up's
    // seconds, before it, are not stored: they stay as drawn)
    const warm = (m) => [...m.entries()].filter(([sec]) => sec < 0);
    if (ev.timeline.length) t.client = new Map([...warm(t.client), ...ev.timeline.map((r) => [r.second, r])]);
    if (ev.server.length) t.server = new Map([...warm(t.server), ...ev.server.map((r) => [r.second, r])]);
    // the stored events, their evidence quoted, replace the marks drawn live (a stored run has only these)
    if (ev.events && ev.events.length) t.marks = new Map(ev.events.map((e) => [`${e.asked}|${e.at_s}`, e]));
    for (const e of ev.events || []) alertEvent(ev.key, e);  // a stored run's (serve) too, once each
    for (const c of ev.causes) S.causes.push(`${nameOf(ev.key)}: ${c}`);
    if (["oom", "server_died"].includes(ev.status)) S.alerts.push(`${nameOf(ev.key)}: ${ev.reason}`);
  }

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    setTimeout(() => { pending = false; draw(); }, 200);
  }

  function rows(map) { return [...map.values()].sort((a, b) => a.second - b.second); }
  function col(rs, f) { return rs.map((r) => { const v = typeof f === "function" ? f(r) : r[f]; return v ?? null; }); }

  // the warm-up's seconds (x < 0) on a grey band: the figures there are not the measurement's
  function warmupBand(u) {
    const lo = u.scales.x.min;
    if (lo == null || lo >= 0) return;
    const x0 = u.valToPos(lo, "x", true), x1 = u.valToPos(Math.min(-0.5, u.scales.x.max), "x", true);
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = "rgba(0, 0, 0, 0.08)";
    ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
    ctx.fillStyle = "#777";
    ctx.textAlign = "left";  // uPlot leaves the axes' alignment on the context
    ctx.textBaseline = "alphabetic";
    ctx.font = `${Math.round(11 * devicePixelRatio)}px system-ui, sans-serif`;
    ctx.fillText("warm-up", x0 + 4 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
    ctx.restore();
  }

  // the current trial's --event marks on every figure: a line when fired, a band until it ended (red: it failed)
  function eventMarks(u) {
    const t = S.current && S.trials.get(S.current);
    if (!t || !t.marks || !t.marks.size) return;
    const ctx = u.ctx, px = devicePixelRatio;
    ctx.save();
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.font = `${Math.round(10 * px)}px system-ui, sans-serif`;
    for (const m of t.marks.values()) {
      const bad = m.ok === false, end = m.end_s ?? u.scales.x.max;
      const x0 = u.valToPos(m.start_s, "x", true), x1 = u.valToPos(Math.max(end, m.start_s), "x", true);
      if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) continue;  // a band partly in view is drawn
      ctx.fillStyle = bad ? "rgba(214, 39, 40, 0.12)" : "rgba(255, 165, 0, 0.15)";
      ctx.fillRect(x0, u.bbox.top, Math.max(x1 - x0, px), u.bbox.height);
      ctx.strokeStyle = bad ? "#d62728" : "#e08000";
      ctx.setLineDash([4 * px, 3 * px]);
      ctx.beginPath(); ctx.moveTo(x0, u.bbox.top); ctx.lineTo(x0, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.fillStyle = ctx.strokeStyle;
      ctx.fillText(m.action + (m.end_s == null ? " …" : ""), x0 + 3 * px, u.bbox.top + 24 * px);
    }
    ctx.restore();
  }

  function panel(where, id, title, what, series, data, y) {
    const el = document.getElementById(where);
    let box = document.getElementById("p-" + id);
    const sig = series.map((s) => s.label).join("|");
    if (charts[id] && charts[id]._sig !== sig) { charts[id].destroy(); delete charts[id]; box.querySelector(".plot").innerHTML = ""; }
    if (!box) {
      box = document.createElement("div");
      box.className = "panel"; box.id = "p-" + id;
      box.innerHTML = `<div class="what"></div><div class="plot"></div>`;
      el.appendChild(box);
    }
    box.querySelector(".what").textContent = what;
    if (!charts[id]) {
      const opts = { title, width: Math.min(560, Math.max(320, (window.innerWidth - 80) / 2)), height: 200,
        scales: { x: { time: false }, ...(y ? { y: y.scale } : {}) },
        axes: [{ label: "second of the window (warm-up before 0)", incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600] },
               { size: 70, ...(y ? y.axis : {}) }],
        hooks: { drawClear: [warmupBand], draw: [eventMarks] },
        legend: { live: false }, series: [{ label: "s" }, ...series.map((s, i) => ({ stroke: COLORS[i % COLORS.length], width: 1.5,
          spanGaps: false, ...s }))] };
      charts[id] = new uPlot(opts, data, box.querySelector(".plot"));
      charts[id]._sig = sig;
    } else {
      charts[id].setData(data);
    }
  }

  function drawClient(t) {
    const rs = rows(t.client);
    const x = col(rs, "second");
    const kinds = failKinds().filter((k) => rs.some((r) => r[k] > 0));
    const warm = rs.some((r) => r.second < 0);
    panel("client-charts", "client-rps", "requests/s", "ok and failed responses per second, failures by kind" +
      (warm ? "; in the warm-up (grey), the requests started: no response is counted before the window" : ""),
      [{ label: "ok" }, { label: "failed", stroke: "#d62728" }, ...kinds.map((k) => ({ label: k })),
       ...(warm ? [{ label: "started (warm-up)", stroke: "#999", dash: [3, 3] }] : [])],
      [x, col(rs, "ok"), col(rs, "failed"), ...kinds.map((k) => col(rs, k)),
       ...(warm ? [col(rs, (r) => r.second < 0 ? r.started : null)] : [])]);
    panel("client-charts", "client-latency", "latency (ms)", "p50, p90 and p99 of each second's histogram",
      [{ label: "p50" }, { label: "p90" }, { label: "p99" }], [x, col(rs, "p50_ms"), col(rs, "p90_ms"), col(rs, "p99_ms")]);
    panel("client-charts", "client-conns", "in flight", "requests in flight when the second closed (connections open)",
      [{ label: "in flight" }], [x, col(rs, "inflight")]);
    const b = (S.hello && S.hello.bound) || { cpu_pct: 90, lag_ms: 50 };
    const hot = (r) => r.second >= 0 && ((r.client_cpu_pct ?? 0) + (r.client_wait_pct ?? 0) >= b.cpu_pct ||
      (r.loop_lag_ms ?? 0) >= b.lag_ms);
    panel("client-charts", "client-self", "the client itself",
      `its load thread's CPU % and event-loop lag; red: client-bound (CPU ≥ ${b.cpu_pct} % or lag ≥ ${b.lag_ms} ms)`,
      [{ label: "client CPU %" }, { label: "loop lag ms" },
       { label: "client-bound", stroke: "#e00000", width: 0, points: { show: true, size: 8, fill: "#e00000" } }],
      [x, col(rs, "client_cpu_pct"), col(rs, "loop_lag_ms"),
       col(rs, (r) => hot(r) ? (r.client_cpu_pct ?? 0) : null)]);
    return rs.some(hot);
  }

  // the roles measured apart (an app's database): named by the stored record (server_metrics.apart), and
  // before it is stored, every column `<role>_cpu_pct` whatever characters the role's name holds
  function roles(t, rs) {
    const found = new Set([""]);
    if (t.stored && t.stored.roles) for (const r of t.stored.roles) found.add(r + "_");
    else for (const r of rs) for (const k of Object.keys(r)) {
      const m = /^(.+_)cpu_pct$/.exec(k);
      if (m && r[k] !== null) found.add(m[1]);
    }
    return [...found];
  }

  function drawServer(t) {
    const rs = rows(t.server);
    const x = col(rs, "second");
    const info = (S.progress && S.progress.servers[t.key.server]) || {};
    document.getElementById("server-section").hidden = !rs.length;  // bench: no server sampled
    const flat = (v) => x.map(() => v ?? null);
    for (const pre of roles(t, rs)) {
      const role = pre ? pre.slice(0, -1) : "server";
      const id = "srv-" + role;
      if (!document.getElementById(id)) {
        const h = document.createElement("div");
        h.innerHTML = `<h3>${esc(role)}</h3><div class="charts" id="${id}"></div>`;
        document.getElementById("server-charts").appendChild(h);
      }
      const cores = pre ? null : info.cores;
      panel(id, id + "-cpu", `${role}: CPU %`, `CPU % (100 = one core)` + (cores ? ` against its ${cores} core(s)` : ""),
        [{ label: "CPU %" }, { label: "cores × 100", dash: [4, 4] }], [x, col(rs, pre + "cpu_pct"), flat(cores ? cores * 100 : null)]);
      const cap = pre ? null : info.memory_bytes;
      panel(id, id + "-mem", `${role}: memory (MiB)`, "memory in use" + (cap ? " against its cap" : ""),
        [{ label: "memory" }, { label: "rss" }, { label: "cap", dash: [4, 4] }],
        [x, col(rs, (r) => r[pre + "mem_bytes"] == null ? null : r[pre + "mem_bytes"] / MiB),
         col(rs, (r) => r[pre + "mem_rss_bytes"] == null ? null : r[pre + "mem_rss_bytes"] / MiB), flat(cap ? cap / MiB : null)]);
      panel(id, id + "-procs", `${role}: processes`, "processes and threads in its containers",
        [{ label: "processes" }, { label: "threads" }], [x, col(rs, pre + "procs"), col(rs, pre + "threads")]);
      if (pre) continue;
      const states = Object.keys(rs[0] || {}).filter((k) => k.startsWith("tcp_") && k !== "tcp_total" &&
        rs.some((r) => r[k] > 0));
      // asinh: 0 at 0, then nearly logarithmic, so 50 established show beside 11,000 in time-wait
      panel(id, id + "-tcp", "server: TCP states", "its port's sockets by TCP state (a log-like scale: " +
        "tens and tens of thousands both show)", states.map((k) => ({ label: k.slice(4) })),
        [x, ...states.map((k) => col(rs, k))], ASINH);
      if (rs.some((r) => r.listen_overflows != null)) {
        panel(id, id + "-listen", "server: listen queue", "the kernel's counts each second: connections its full " +
          "listen queue had no room for, SYNs dropped, SYNs and SYN-ACKs sent again after TCP's 1 s (with host networking the " +
          "host's counters: other traffic on this machine counts too)",
          [{ label: "overflows" }, { label: "drops" }, { label: "SYN/SYN-ACK retries" }],
          [x, col(rs, "listen_overflows"), col(rs, "listen_drops"), col(rs, "syn_retrans")]);
      }
      const limit = info.busy_limit_value;
      if (rs.some((r) => r.busy_workers != null)) {
        panel(id, id + "-busy", "server: busy workers", "busy workers from its status page" +
          (info.busy_limit ? ` against ${info.busy_limit}` : ""),
          [{ label: "busy workers" }, { label: info.busy_limit || "limit", dash: [4, 4] }],
          [x, col(rs, "busy_workers"), flat(typeof limit === "number" ? limit : null)]);
      }
    }
  }

  function drawTrials() {
    const el = document.getElementById("trials");
    el.innerHTML = "";
    for (const [k, t] of S.trials) {
      const b = document.createElement("button");
      const st = t.stored ? t.stored.status : (k === S.running ? "running" : "");
      b.className = (k === S.current ? "sel " : "") + "st-" + st;
      b.textContent = nameOf(t.key) + (st && st !== "ok" ? ` (${st})` : "");
      b.onclick = () => { S.current = k; document.getElementById("follow").checked = false; draw(); };
      el.appendChild(b);
    }
  }

  function drawProgress() {
    const p = S.progress;
    if (!p) return;
    const labels = [...new Set([...p.labels, ...p.cells.map((c) => c.server), ...[...S.trials.values()].map((t) => t.key.server)])];
    const levels = [...new Set([...p.levels, ...p.cells.map((c) => c.level)])].sort((a, b) => a - b);
    let h = `<table><tr><th>${p.kind}</th>${levels.map((l) => `<th>${unit()}=${l}</th>`).join("")}</tr>`;
    for (const s of labels) {
      h += `<tr><th>${esc(s)}</th>`;
      for (const l of levels) {
        const done = p.cells.filter((c) => c.server === s && c.level === l);
        const bad = done.find((c) => c.status !== "ok");
        const now = S.running && S.running.startsWith(`${s}|${l}|`);
        h += `<td class="cell ${now ? "now" : ""} st-${bad ? bad.status : done.length ? "ok" : ""}">` +
          `${p.kind === "run" ? done.length + "/" + p.trials : done.length || ""}</td>`;
      }
      h += "</tr>";
    }
    document.getElementById("grid").innerHTML = h + "</table>" +
      `<div>${esc(p.name)}: ${esc(p.status)} — ${esc(p.path)}</div>`;
    document.getElementById("capacity").innerHTML = p.capacity ? capacity(p.capacity) : "";
    document.getElementById("tune").innerHTML = p.tune ? tune(p.tune) : "";
  }

  function capacity(c) {
    let h = `<h3>capacity: ${esc(c.target)}</h3>`;
    for (const [label, s] of Object.entries(c.servers)) {
      const lv = s.path.map((q) => q.level);
      const lo = Math.log(Math.max(1, Math.min(...lv, 1))), hi = Math.log(Math.max(2, ...lv) * 1.2);
      const xOf = (l) => 10 + 480 * (Math.log(Math.max(l, 1)) - lo) / (hi - lo);
      const dots = s.path.map((q, i) => `<circle class="${q.met === true ? "met" : q.met === false ? "missed" : "unsure"}" ` +
        `cx="${xOf(q.level).toFixed(1)}" cy="${12 + (i % 3) * 8}" r="5"><title>${esc(q.stage)} ${q.level}: ${esc(q.text)}</title></circle>`);
      h += `<div>${esc(s.text.startsWith(label) ? s.text : label + ": " + s.text)}</div><svg class="probes" width="500" height="40">` +
        `<line x1="10" x2="490" y1="36" y2="36" stroke="#999"/>${dots.join("")}</svg>` +
        `<div class="what">probes on the load axis (${esc(c.unit)}, log scale): green met, red missed, grey unsure</div>`;
    }
    return h;
  }

  function tune(t) {
    const rows = t.trials.map((r) => `<tr class="${r.number === t.best ? "best" : ""}"><td>${r.number < 0 ? "baseline" : r.number}` +
      `${r.number === t.best ? " ★" : ""}</td><td>${esc(JSON.stringify(r.params))}</td><td>${esc(r.state)}</td>` +
      `<td>${r.value ?? "–"}${r.client_bound ? " (at least)" : ""}</td><td>${esc(r.text)}</td></tr>`).join("");
    return `<h3>tune ${esc(t.server)} (score: ${esc(t.unit)})</h3><table><tr><th>trial</th><th>settings</th>` +
      `<th>state</th><th>score</th><th></th></tr>${rows}</table><div>${esc(t.text)}</div>`;
  }

  // --trace: each label's last joined trial, its p50 and p99 and each part's share of p99 (the report's table)
  function drawParts() {
    const ps = [...S.parts.values()];
    document.getElementById("parts-section").hidden = !ps.length;
    if (!ps.length) return;
    // a column for each part some label spent time in, in the order a request goes through them; null: unknown
    const order = ps[0].order || [];
    const names = [...new Map(ps.flatMap((p) => p.parts.filter((x) => x.p50 || x.p99).map((x) => [x.part, x.name])))
      .entries()].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
    const pct = (v) => `${Math.round(v * 100)}%`;
    const ms = (v) => (v == null ? "–" : `${v.toFixed(1)} ms`);
    document.getElementById("parts").innerHTML = `<tr><th>server</th><th>${unit() === "r" ? "req/s" : "clients"}` +
      `</th><th>trial</th><th>matched</th><th>p50</th><th>p99</th>${names.map(([, n]) => `<th>${esc(n)}</th>`).join("")}` +
      `</tr>` + ps.map((p) => { const by = new Map(p.parts.map((x) => [x.part, x.p99]));
        return `<tr data-server="${esc(p.key.server)}"><td>${esc(p.key.server)}</td><td>${p.key.level.toLocaleString()}` +
          `</td><td>${p.key.trial}</td><td>${pct(p.matched)}</td><td>${ms(p.p50_ms)}</td><td>${ms(p.p99_ms)}</td>` +
          names.map(([k]) => `<td data-part="${esc(k)}">${by.get(k) === null ? "–" : pct(by.get(k) || 0)}</td>`).join("") + `</tr>`; }).join("");
  }

  function draw() {
    drawTrials();
    drawProgress();
    drawParts();
    const t = S.current && S.trials.get(S.current);
    document.getElementById("trial-name").textContent = t ? nameOf(t.key) : "";
    if (t) {
      const hot = drawClient(t);
      drawServer(t);
      const st = t.stored;
      document.getElementById("trial-status").innerHTML = (st ? `<span class="st-${st.status}">${esc(st.status)}</span> ` +
        `${st.rps != null ? Math.round(st.rps).toLocaleString() + " req/s" : ""} ${esc(st.reason || "")}` : "running") +
        ((hot || (st && st.client_bound)) ? ` <span class="bound">client-bound${st && st.client_bound_reason ? ": " + esc(st.client_bound_reason) : ""}</span>` : "") +
        (t.marks.size ? `<div id="trial-events">events: ${[...t.marks.values()].map((m) =>
          `<span class="${m.ok === false ? "bad" : ""}">${esc(m.action)} at ${m.start_s} s ` +
          (m.end_s == null ? "(running)" : m.ok === false ? `(failed: ${esc(m.said)})` : `(${(m.end_s - m.start_s).toFixed(2)} s)`) +
          `</span>`).join(", ")}</div>` : "");
    }
    document.getElementById("alerts").innerHTML = S.alerts.map((a) => `<div class="alert">${esc(a)}</div>`).join("");
    document.getElementById("causes").innerHTML = S.causes.length ? S.causes.map((c) => `<li>${esc(c)}</li>`).join("") :
      `<li class="none">none found yet</li>`;
    const end = document.getElementById("end");
    if (S.ended) {
      end.hidden = false;
      end.className = S.ended.status === "complete" ? "" : "bad";
      end.innerHTML = `finished: <b>${esc(S.ended.status)}</b>` +
        (S.ended.path ? `; results in <code>${esc(S.ended.path)}</code>` : "") +
        (S.ended.report ? ` — <a id="report-link" href="${esc(S.ended.report)}">the report</a>` : "") +
        (S.ended.report_file ? `; its report: <code>${esc(S.ended.report_file)}</code>` : "") +
        (!S.ended.report && S.ended.serve ? `<br>this page ends with the command; to open this run and its report ` +
          `later: <code id="serve-cmd">${esc(S.ended.serve)}</code>` : "") +
        (S.ended.problems.length ? `<br>${S.ended.problems.map(esc).join("<br>")}` : "");
    }
  }

  function connect() {
    const src = new EventSource(EVENTS);
    const state = document.getElementById("state");
    src.onopen = () => { reset(); state.textContent = "live"; state.className = "state live"; };
    src.onmessage = (m) => onEvent(JSON.parse(m.data));
    src.addEventListener("end", () => { src.close(); state.textContent = "ended"; state.className = "state"; draw(); });
    src.onerror = () => {
      state.textContent = "reconnecting"; state.className = "state";
      if (S.hello) return;  // a stream that never began: a stored run that cannot be drawn says why in one line
      fetch(EVENTS).then((r) => r.ok ? null : r.text()).then((t) => {
        if (t) { src.close(); state.textContent = t.trim(); state.className = "state bad"; }
      }).catch(() => {});
    };
  }

  reset();
  connect();
})();
